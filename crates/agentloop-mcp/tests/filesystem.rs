//! Against `@modelcontextprotocol/server-filesystem`, rooted in a temp folder.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agentloop_mcp::{McpServer, ServerConfig, ServerOptions, StdioConfig};
use common::{find, installed_server, run};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_and_writes_inside_its_root_only() {
    let Some(script) = installed_server("server-filesystem") else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    // The server resolves symlinks; compare against the real path.
    let root_path = root.path().canonicalize().unwrap();
    std::fs::write(root_path.join("a.txt"), "hello from a").unwrap();
    let config = ServerConfig::Stdio(StdioConfig {
        command: "node".into(),
        args: vec![
            script.display().to_string(),
            root_path.display().to_string(),
        ],
        ..StdioConfig::default()
    });
    let server = McpServer::start("files", config, ServerOptions::default())
        .await
        .unwrap();
    let tools = server.tools();
    // Tools the server declares read-only run at once; the others ask.
    use agentloop_types::ApprovalPolicy;
    assert_eq!(
        find(&tools, "files__read_text_file").approval(),
        ApprovalPolicy::Never
    );
    assert_eq!(
        find(&tools, "files__write_file").approval(),
        ApprovalPolicy::Always
    );

    let (_, result) = run(
        find(&tools, "files__read_text_file"),
        json!({"path": root_path.join("a.txt")}),
    )
    .await;
    assert!(!result.is_error, "{}", result.content);
    assert!(
        result.content.contains("hello from a"),
        "{}",
        result.content
    );

    let (_, result) = run(
        find(&tools, "files__write_file"),
        json!({"path": root_path.join("b.txt"), "content": "written by the model"}),
    )
    .await;
    assert!(!result.is_error, "{}", result.content);
    assert_eq!(
        std::fs::read_to_string(root_path.join("b.txt")).unwrap(),
        "written by the model"
    );

    let (_, result) = run(
        find(&tools, "files__list_directory"),
        json!({"path": root_path}),
    )
    .await;
    assert!(
        result.content.contains("a.txt") && result.content.contains("b.txt"),
        "{}",
        result.content
    );

    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "no").unwrap();
    let (_, result) = run(
        find(&tools, "files__read_text_file"),
        json!({"path": outside.path().join("secret.txt")}),
    )
    .await;
    assert!(result.is_error, "{}", result.content);
    assert!(!result.content.contains("no\n") && result.content != "no");
}
