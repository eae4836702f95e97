//! Feature `mcp`: an MCP server's tools reach the model through the builder
//! and its calls run on the server. Against
//! `@modelcontextprotocol/server-everything` over stdio, installed by
//! `scripts/install-mcp-servers.sh`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../agentloop-mcp/tests/common/mod.rs"]
mod mcp_common;

use agentloop::engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop::mcp::{McpConfig, McpServers, ServerConfig, ServerOptions, StdioConfig};
use agentloop::prelude::*;
use agentloop::types::ToolResultBlock;
use agentloop::{BuildError, ContentBlock};
use serde_json::json;

async fn start_everything() -> Option<McpServers> {
    let script = mcp_common::installed_server("server-everything")?;
    let mut config = McpConfig::default();
    config.add(
        "everything",
        ServerConfig::Stdio(StdioConfig {
            command: "node".into(),
            args: vec![script.display().to_string(), "stdio".into()],
            ..StdioConfig::default()
        }),
    );
    Some(
        McpServers::start(&config, ServerOptions::default())
            .await
            .unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_servers_tools_are_offered_and_called_through_the_builder() {
    let Some(servers) = start_everything().await else {
        return;
    };
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("e1", "everything__echo", json!({"message": "hi"})),
        ScriptedTurn::new().text("It echoed."),
    ]);
    let agent = Agent::builder()
        .provider(provider.clone())
        .model("scripted")
        .mcp_servers(&servers)
        .build()
        .unwrap();
    drop(servers);

    let result = agent.run("Echo hi").await;

    assert!(
        matches!(result.status, LoopStatus::Complete { .. }),
        "{:?}",
        result.status
    );
    let offered: Vec<String> = provider.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert!(
        offered.iter().any(|name| name == "everything__echo"),
        "{offered:?}"
    );
    assert!(
        offered.iter().all(|name| name.starts_with("everything__")),
        "{offered:?}"
    );
    let results: Vec<&ToolResultBlock> = result
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|block| match block {
            ContentBlock::ToolResult(r) => Some(r),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].content, "Echo: hi", "the server ran the call");
    assert!(!results[0].is_error);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_tool_named_like_another_tool_is_refused_at_build() {
    let Some(servers) = start_everything().await else {
        return;
    };
    let echo = servers
        .tools()
        .into_iter()
        .find(|t| t.name() == "everything__echo")
        .unwrap();
    let error = Agent::builder()
        .provider(ScriptedProvider::new([]))
        .model("scripted")
        .tool(echo)
        .mcp_servers(&servers)
        .build()
        .unwrap_err();
    assert_eq!(error, BuildError::DuplicateTool("everything__echo".into()));
}
