//! `agentloop mcp prompts`: the prompts of the configured MCP servers
//! (the configuration's `mcp_servers`, `--mcp` files, `--mcp-stdio`
//! lines), one line each: `SERVER:PROMPT`, its arguments (`*` marks a
//! required one) and its description, as `agentloop run --mcp-prompt`
//! takes them. What a server says is shown with its escapes made visible.

use std::process::ExitCode;

use agentloop_mcp::{ListedPrompt, McpConfig};
use clap::Args;

use crate::mcp_flags::{Forms, McpFlags};
use crate::out::{Failure, Outcome, Stdout, sanitize};

#[derive(Args)]
pub struct McpPromptsArgs {
    /// The MCP servers to ask, besides the configuration's.
    #[command(flatten)]
    pub mcp: McpFlags,
}

/// Lists the prompts; no server configured is a usage error.
pub async fn list(args: McpPromptsArgs, configured: McpConfig) -> Outcome {
    let (servers, _) = args.mcp.start(configured, Forms::Unoffered).await?;
    if servers.servers().is_empty() {
        return Err(Failure::usage(
            "no MCP server: configure mcp_servers, or give --mcp or --mcp-stdio",
        ));
    }
    let prompts = servers.prompts().await.map_err(Failure::Runtime);
    servers.shutdown().await;
    let mut out = Stdout::new();
    let prompts = prompts?;
    if prompts.is_empty() {
        out.line("The servers offer no prompts.")?;
    }
    for prompt in &prompts {
        out.line(line(prompt))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One prompt as a line: `SERVER:PROMPT (arg*, arg)  description`.
pub fn line(prompt: &ListedPrompt) -> String {
    let mut line = sanitize(&prompt.qualified()).into_owned();
    if !prompt.arguments.is_empty() {
        let arguments: Vec<String> = prompt
            .arguments
            .iter()
            .map(|(name, required)| {
                format!("{}{}", sanitize(name), if *required { "*" } else { "" })
            })
            .collect();
        line.push_str(&format!(" ({})", arguments.join(", ")));
    }
    if let Some(description) = &prompt.description {
        line.push_str(&format!("  {}", sanitize(description)));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_line_names_it_its_arguments_and_what_it_is_for() {
        let prompt = ListedPrompt {
            server: "everything".to_owned(),
            name: "args-prompt".to_owned(),
            description: Some("Weather \u{1b}[31mnow".to_owned()),
            arguments: vec![("city".to_owned(), true), ("state".to_owned(), false)],
        };
        let shown = line(&prompt);
        assert!(
            shown.starts_with("everything:args-prompt (city*, state)  Weather "),
            "{shown}"
        );
        assert!(!shown.contains('\u{1b}'), "{shown}");
    }
}
