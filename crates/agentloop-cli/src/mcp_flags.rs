//! The MCP servers a command starts: the flags `run`, `chat`, `mcp serve`
//! and `mcp prompts` share, and starting them with the configuration's
//! `mcp_servers`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agentloop_mcp::{McpConfig, McpServers, ServerConfig, ServerOptions, parse_stdio_command};
use clap::Args;

use crate::forms::{FormsOpen, TerminalForms};
use crate::out::Failure;

/// MCP servers to start besides the configuration's.
#[derive(Args, Debug, Clone)]
pub struct McpFlags {
    /// MCP servers whose tools to offer: a JSON file
    /// `{"mcpServers": {"name": {"command", "args", "env"} | {"url", "headers"}}}`.
    /// Tools are named `<name>__<tool>`. Repeatable.
    #[arg(long = "mcp", value_name = "CONFIG")]
    pub mcp: Vec<PathBuf>,
    /// A stdio MCP server to start: `'[name=]command args'`, e.g.
    /// `'npx -y @modelcontextprotocol/server-everything'` (named
    /// `everything`). Repeatable.
    #[arg(long = "mcp-stdio", value_name = "COMMAND")]
    pub mcp_stdio: Vec<String>,
    /// Seconds one MCP tool call may take before its server counts as hung
    /// (the call fails and the server is restarted; at least 1).
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    pub mcp_timeout: u64,
}

impl Default for McpFlags {
    fn default() -> Self {
        Self {
            mcp: Vec::new(),
            mcp_stdio: Vec::new(),
            mcp_timeout: 300,
        }
    }
}

/// Who answers the forms the servers ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forms {
    /// The person at the terminal ([`TerminalForms`]).
    Asked,
    /// No one: the client offers no elicitation.
    Unoffered,
}

impl McpFlags {
    /// Starts the servers of `configured`, the `--mcp` files and the
    /// `--mcp-stdio` lines, their forms answered as `forms` says; returns
    /// them with the flag that is set while a form is asked. A file or line
    /// that says no server is a usage error, a server that fails to start
    /// a runtime one.
    pub async fn start(
        &self,
        mut configured: McpConfig,
        forms: Forms,
    ) -> Result<(McpServers, FormsOpen), Failure> {
        for path in &self.mcp {
            configured.merge(McpConfig::load(path).map_err(|e| Failure::usage(e.to_string()))?);
        }
        for line in &self.mcp_stdio {
            let (name, server) = parse_stdio_command(line)
                .map_err(|e| Failure::usage(format!("--mcp-stdio {line:?}: {e}")))?;
            configured.add(&name, ServerConfig::Stdio(server));
        }
        let (asker, open) = TerminalForms::new();
        if configured.servers.is_empty() {
            return Ok((McpServers::default(), open));
        }
        let options = ServerOptions {
            call_timeout: Duration::from_secs(self.mcp_timeout),
            elicitor: (forms == Forms::Asked)
                .then(|| Arc::new(asker) as Arc<dyn agentloop_mcp::Elicitor>),
            ..ServerOptions::default()
        };
        let servers = McpServers::start(&configured, options)
            .await
            .map_err(|e| Failure::Runtime(e.to_string()))?;
        Ok((servers, open))
    }
}
