//! MCP client tools: the tools of Model Context Protocol servers, offered to
//! the model as agentloop [`Tool`](agentloop_types::Tool)s.
//!
//! - [`McpConfig`] reads the familiar `{"mcpServers": {...}}` file;
//!   [`parse_stdio_command`] turns `'[name=]cmd args'` into one stdio server.
//! - [`McpServers::start`] starts every configured server (child processes
//!   over stdio, or streamable HTTP sessions) and lists their tools;
//!   [`McpServers::tools`] offers them as `<server>__<tool>`.
//! - A call streams the server's progress notifications as display updates,
//!   keeps text, images and `structuredContent`, maps `isError`, sends
//!   `notifications/cancelled` when the run is cancelled, and turns a crash or
//!   a hang (past [`ServerOptions::call_timeout`]) into an error result; the
//!   server is restarted for the next call.
//! - A server that declares resources also gets `<server>__list_resources`
//!   and `<server>__read_resource`: the model lists and reads them.
//! - A server's prompts are the person's to pick: [`McpServers::prompts`]
//!   lists them, [`McpServers::prompt`] gives one's messages, filled in.
//! - Given an [`Elicitor`] ([`ServerOptions::elicitor`]), the forms a
//!   server asks the person to fill in while its tool runs are handed to
//!   it.
//! - Child processes are killed when their [`McpServer`] and its tools are
//!   dropped.
//!
//! - With the `server` feature, [`serve`] offers an agent as an MCP server
//!   (stdio or streamable HTTP), the other way round.
//!
//! # Cargo features
//!
//! - `server`: the [`serve`] module. The client side (stdio and streamable
//!   HTTP servers) is always there.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod asks;
mod command_line;
mod config;
mod connection;
mod prompts;
mod resources;
mod result;
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub mod serve;
mod server;
mod servers;
mod tool;

use std::time::Duration;

pub use asks::{Elicitor, FormAnswer, FormRequest};
pub use command_line::parse_stdio_command;
pub use config::{HttpConfig, McpConfig, ServerConfig, StdioConfig};
pub use prompts::ListedPrompt;
pub use result::to_tool_result;
pub use server::{ListedTool, McpServer, ServerOptions, namespaced};
pub use servers::McpServers;
pub use tool::McpTool;

/// What can go wrong configuring or starting MCP servers.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The configuration is malformed.
    #[error("MCP configuration: {message}")]
    Config {
        /// What is wrong.
        message: String,
    },
    /// A server process could not be started.
    #[error("cannot start `{command}`: {source}")]
    Spawn {
        /// The program.
        command: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The MCP handshake or tool listing failed.
    #[error("{message}")]
    Handshake {
        /// What failed.
        message: String,
    },
    /// Something took longer than allowed.
    #[error("{what} took longer than {} s", after.as_secs_f64())]
    Timeout {
        /// What was being waited for.
        what: String,
        /// The limit.
        after: Duration,
    },
    /// A named server failed; carries its last stderr lines.
    #[error("MCP server `{server}`: {message}{}", stderr_suffix(stderr))]
    Server {
        /// The server's name.
        server: String,
        /// What failed.
        message: String,
        /// Its last stderr lines (empty when none).
        stderr: String,
    },
}

fn stderr_suffix(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!("\nIts last stderr lines:\n{stderr}")
    }
}
