//! Against `@modelcontextprotocol/server-everything` over stdio.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use agentloop_mcp::{McpServer, ServerConfig, ServerOptions, StdioConfig};
use agentloop_types::{
    ApprovalPolicy, AttachmentSource, CancellationToken, RenderingContentBlock, ToolOutput,
};
use common::{context, find, installed_server, run};
use futures::StreamExt;
use serde_json::json;

async fn start_everything() -> Option<McpServer> {
    let script = installed_server("server-everything")?;
    let config = ServerConfig::Stdio(StdioConfig {
        command: "node".into(),
        args: vec![script.display().to_string(), "stdio".into()],
        ..StdioConfig::default()
    });
    Some(
        McpServer::start("everything", config, ServerOptions::default())
            .await
            .unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_are_listed_and_called() {
    let Some(server) = start_everything().await else {
        return;
    };
    let tools = server.tools();

    let echo = find(&tools, "everything__echo");
    assert_eq!(echo.description(), "Echoes back the input string");
    assert_eq!(
        echo.input_schema()["properties"]["message"]["type"],
        "string"
    );
    assert_eq!(echo.input_schema()["required"], json!(["message"]));
    let (progress, result) = run(echo, json!({"message": "hi"})).await;
    assert!(progress.is_empty());
    assert_eq!(result.content, "Echo: hi");
    assert!(!result.is_error);

    let (_, result) = run(find(&tools, "everything__get-sum"), json!({"a": 2, "b": 3})).await;
    assert_eq!(result.content, "The sum of 2 and 3 is 5.");

    // Structured content: the weather object survives as JSON.
    let (_, result) = run(
        find(&tools, "everything__get-structured-content"),
        json!({"location": "Chicago"}),
    )
    .await;
    assert!(!result.is_error, "{}", result.content);
    let structured = result
        .content
        .lines()
        .rev()
        .find_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .unwrap_or_else(|| panic!("no JSON in {}", result.content));
    assert!(structured["temperature"].is_number(), "{structured}");
    assert!(structured["conditions"].is_string(), "{structured}");

    // Images: a placeholder for the model, the bytes for display.
    let (_, result) = run(find(&tools, "everything__get-tiny-image"), json!({})).await;
    assert!(
        result.content.contains("[image: image/png]"),
        "{}",
        result.content
    );
    assert!(
        result
            .content
            .starts_with("Here's the image you requested:")
    );
    let RenderingContentBlock::Attachment {
        source: AttachmentSource::Base64 { media_type, data },
    } = &result.rendering_groups[0].blocks[0]
    else {
        panic!("no attachment: {:?}", result.rendering_groups)
    };
    assert_eq!(media_type, "image/png");
    assert!(data.len() > 100);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_arguments_give_an_error_result() {
    let Some(server) = start_everything().await else {
        return;
    };
    let tools = server.tools();
    let (_, result) = run(find(&tools, "everything__get-sum"), json!({"a": "two"})).await;
    assert!(result.is_error, "{}", result.content);
    assert!(!result.content.is_empty());
    let (_, result) = run(find(&tools, "everything__echo"), json!([1, 2])).await;
    assert!(result.is_error);
    assert!(
        result.content.starts_with("Invalid input"),
        "{}",
        result.content
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_running_operation_streams_progress() {
    let Some(server) = start_everything().await else {
        return;
    };
    let tool = find(
        &server.tools(),
        "everything__trigger-long-running-operation",
    );
    let (progress, result) = run(tool, json!({"duration": 0.3, "steps": 3})).await;
    assert_eq!(progress, ["Progress 1/3", "Progress 2/3", "Progress 3/3"]);
    assert!(!result.is_error);
    assert!(
        result
            .content
            .starts_with("Long running operation completed."),
        "{}",
        result.content
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_ends_a_long_call() {
    let Some(server) = start_everything().await else {
        return;
    };
    let tool = find(
        &server.tools(),
        "everything__trigger-long-running-operation",
    );
    let cancel = CancellationToken::new();
    let mut stream = tool.execute(
        json!({"duration": 60, "steps": 600}),
        context(cancel.clone()),
    );
    // The first progress report shows the call is under way.
    let first = tokio::time::timeout(Duration::from_secs(30), stream.next())
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(first, ToolOutput::Event(_)), "{first:?}");
    cancel.cancel();
    let result = loop {
        match tokio::time::timeout(Duration::from_secs(30), stream.next())
            .await
            .unwrap()
        {
            Some(ToolOutput::Done(result)) => break result,
            Some(ToolOutput::Event(_)) => continue,
            None => panic!("no result"),
        }
    };
    assert!(result.is_error);
    assert!(
        result.content.starts_with("Cancelled"),
        "{}",
        result.content
    );
    // The session survives a cancelled call.
    let (_, result) = run(
        find(&server.tools(), "everything__echo"),
        json!({"message": "after"}),
    )
    .await;
    assert_eq!(result.content, "Echo: after");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_registered_after_start_are_picked_up() {
    // The server registers `simulate-research-query` once initialised and
    // announces tools/list_changed.
    let Some(server) = start_everything().await else {
        return;
    };
    let mut updates = server.subscribe();
    tokio::time::timeout(
        Duration::from_secs(30),
        updates.wait_for(|tools| {
            tools
                .iter()
                .any(|t| t.name == "everything__simulate-research-query")
        }),
    )
    .await
    .unwrap()
    .unwrap();
}

/// The server declares resources: two tools list and read them. Its
/// static documents are listed with their URIs and types, its URI
/// templates too; a document reads as its text, a filled-in template
/// reads, a blob is named by type and size, and an unknown URI is the
/// server's refusal as an error result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_are_listed_and_read() {
    let Some(server) = start_everything().await else {
        return;
    };
    assert!(server.offers_resources());
    let tools = server.tools();
    let list = find(&tools, "everything__list_resources");
    let read = find(&tools, "everything__read_resource");
    assert_eq!(list.approval(), ApprovalPolicy::Never);
    assert_eq!(read.approval(), ApprovalPolicy::Never);
    assert_eq!(read.input_schema()["required"], json!(["uri"]));

    let (_, listed) = run(list, json!({})).await;
    assert!(!listed.is_error, "{}", listed.content);
    assert!(
        listed.content.contains(
            "- demo://resource/static/document/features.md (features.md, text/markdown): \
             Static document file exposed from /docs: features.md"
        ),
        "{}",
        listed.content
    );
    assert!(
        listed
            .content
            .contains("- demo://resource/dynamic/text/{resourceId} ("),
        "{}",
        listed.content
    );

    let (_, document) = run(
        read.clone(),
        json!({ "uri": "demo://resource/static/document/features.md" }),
    )
    .await;
    assert!(!document.is_error, "{}", document.content);
    assert!(
        document
            .content
            .starts_with("# Everything Server - Features"),
        "{}",
        document.content
    );
    let (_, text) = run(
        read.clone(),
        json!({ "uri": "demo://resource/dynamic/text/7" }),
    )
    .await;
    assert!(
        text.content
            .starts_with("Resource 7: This is a plaintext resource"),
        "{}",
        text.content
    );
    let (_, blob) = run(
        read.clone(),
        json!({ "uri": "demo://resource/dynamic/blob/7" }),
    )
    .await;
    assert!(
        blob.content
            .starts_with("[demo://resource/dynamic/blob/7: binary, text/plain, "),
        "{}",
        blob.content
    );
    let (_, missing) = run(read.clone(), json!({ "uri": "demo://nothing/here" })).await;
    assert!(missing.is_error, "{}", missing.content);
    assert!(
        missing
            .content
            .starts_with("MCP server `everything` refused resources/read:"),
        "{}",
        missing.content
    );
    let (_, malformed) = run(read, json!({ "path": "x" })).await;
    assert!(malformed.is_error);
    assert!(
        malformed.content.starts_with("Invalid input:"),
        "{}",
        malformed.content
    );
    server.shutdown().await;
}
