//! Crash, hang, cancellation and tool-list changes, against a small stdio
//! server written for these tests (`fixtures/fake_server.py`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use agentloop_mcp::{McpServer, ServerConfig, ServerOptions, StdioConfig};
use agentloop_types::CancellationToken;
use common::{context, fake_server, find, run};
use futures::StreamExt;
use serde_json::{Value, json};

async fn start_fake(options: ServerOptions) -> McpServer {
    let config = ServerConfig::Stdio(StdioConfig {
        command: "python3".into(),
        args: vec!["-u".into(), fake_server().display().to_string()],
        ..StdioConfig::default()
    });
    McpServer::start("fake", config, options).await.unwrap()
}

async fn pid(server: &McpServer) -> u32 {
    let (_, result) = run(find(&server.tools(), "fake__pid"), json!({})).await;
    assert!(!result.is_error, "{}", result.content);
    result.content.parse().unwrap()
}

/// Waits, bounded, until process `pid` has ended (gone, or a zombie its
/// new parent has not reaped yet).
async fn wait_for_exit(pid: u32) {
    let stat = format!("/proc/{pid}/stat");
    let running = move || {
        std::fs::read_to_string(&stat).is_ok_and(|s| {
            // The state follows the parenthesised command name.
            s.rsplit_once(") ")
                .is_some_and(|(_, rest)| !rest.starts_with('Z'))
        })
    };
    tokio::time::timeout(Duration::from_secs(20), async {
        while running() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("process {pid} still running"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_is_an_error_result_and_the_server_restarts() {
    let server = start_fake(ServerOptions::default()).await;
    let before = pid(&server).await;
    let (_, result) = run(find(&server.tools(), "fake__crash"), json!({})).await;
    assert!(result.is_error);
    assert!(
        result
            .content
            .contains("MCP server `fake` stopped during the call"),
        "{}",
        result.content
    );
    assert!(result.content.contains("restarted for the next call"));
    let after = pid(&server).await;
    assert_ne!(before, after);
    wait_for_exit(before).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_messages_carry_the_servers_stderr() {
    let server = start_fake(ServerOptions::default()).await;
    let (_, result) = run(find(&server.tools(), "fake__crash"), json!({})).await;
    // stderr is read concurrently with the exit; accept either order but
    // require the line once the pipe is drained.
    if !result.content.contains("fake server: crashing on request") {
        let tail = server.stderr_tail();
        assert_eq!(
            tail,
            ["fake server: crashing on request"],
            "{}",
            result.content
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hang_times_out_and_the_server_restarts() {
    let options = ServerOptions {
        call_timeout: Duration::from_millis(500),
        ..ServerOptions::default()
    };
    let server = start_fake(options).await;
    let before = pid(&server).await;
    let (_, result) = run(find(&server.tools(), "fake__hang"), json!({})).await;
    assert!(result.is_error);
    assert!(
        result.content.contains("did not answer within 0.5 s"),
        "{}",
        result.content
    );
    let after = pid(&server).await;
    assert_ne!(before, after);
    wait_for_exit(before).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_run_notifies_the_server() {
    let server = start_fake(ServerOptions::default()).await;
    let cancel = CancellationToken::new();
    let call = tokio::spawn({
        let tool = find(&server.tools(), "fake__wait");
        let cancel = cancel.clone();
        async move { common::run_with(tool, json!({}), cancel).await }
    });
    // Cancel once the server has the call.
    bounded(async {
        while run(find(&server.tools(), "fake__waiting"), json!({}))
            .await
            .1
            .content
            != "1"
        {}
    })
    .await;
    cancel.cancel();
    let (_, result) = call.await.unwrap();
    assert!(result.is_error);
    assert!(result.content.starts_with("Cancelled"));
    // The server handles messages in order, so the cancellation is recorded
    // before it answers this call.
    let (_, result) = run(find(&server.tools(), "fake__cancellations"), json!({})).await;
    let recorded: Vec<Value> = serde_json::from_str(&result.content).unwrap();
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(recorded[0]["reason"], "cancelled by the client");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoning_a_call_notifies_the_server() {
    let server = start_fake(ServerOptions::default()).await;
    let tool = find(&server.tools(), "fake__wait");
    let call = tokio::spawn(async move {
        let mut stream = tool.execute(json!({}), context(CancellationToken::new()));
        stream.next().await
    });
    // Abandon the call once the server has it.
    let text_of = |name: &'static str| {
        let server = server.clone();
        async move { run(find(&server.tools(), name), json!({})).await.1.content }
    };
    bounded(async { while text_of("fake__waiting").await != "1" {} }).await;
    call.abort();
    let recorded = bounded(async {
        loop {
            let recorded: Vec<Value> =
                serde_json::from_str(&text_of("fake__cancellations").await).unwrap();
            if !recorded.is_empty() {
                break recorded;
            }
        }
    })
    .await;
    assert_eq!(recorded[0]["reason"], "the call was abandoned");
    assert_eq!(text_of("fake__waiting").await, "0");
}

async fn bounded<T>(condition: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), condition)
        .await
        .expect("condition not reached in time")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_relists_the_tools() {
    let server = start_fake(ServerOptions::default()).await;
    assert!(
        !server
            .listed_tools()
            .iter()
            .any(|t| t.name == "fake__extra")
    );
    let mut updates = server.subscribe();
    let (_, result) = run(find(&server.tools(), "fake__grow"), json!({})).await;
    assert_eq!(result.content, "grown");
    tokio::time::timeout(
        Duration::from_secs(20),
        updates.wait_for(|tools| tools.iter().any(|t| t.name == "fake__extra")),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(server.tools().iter().any(|t| t.name() == "fake__extra"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_server_kills_the_process() {
    let server = start_fake(ServerOptions::default()).await;
    let child = pid(&server).await;
    drop(server);
    wait_for_exit(child).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_server_kills_what_a_launcher_started() {
    // `sh` stays the parent of python (the `; true` prevents exec), and
    // python ignores its closed stdin: only killing the group ends it.
    let config = ServerConfig::Stdio(StdioConfig {
        command: "sh".into(),
        args: vec![
            "-c".into(),
            format!("python3 -u '{}'; true", fake_server().display()),
        ],
        env: [("FAKE_IGNORE_EOF".to_owned(), "1".to_owned())].into(),
        ..StdioConfig::default()
    });
    let server = McpServer::start("launched", config, ServerOptions::default())
        .await
        .unwrap();
    let (_, result) = run(find(&server.tools(), "launched__pid"), json!({})).await;
    let grandchild: u32 = result.content.parse().unwrap();
    drop(server);
    wait_for_exit(grandchild).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_program_is_a_start_error() {
    let config = ServerConfig::Stdio(StdioConfig {
        command: "/nonexistent/mcp-server".into(),
        ..StdioConfig::default()
    });
    let Err(error) = McpServer::start("ghost", config, ServerOptions::default()).await else {
        panic!("started a missing program")
    };
    assert!(
        error.to_string().contains("/nonexistent/mcp-server"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_already_cancelled_call_is_not_sent() {
    let server = start_fake(ServerOptions::default()).await;
    let cancel = CancellationToken::new();
    cancel.cancel();
    let (_, result) =
        common::run_with(find(&server.tools(), "fake__wait"), json!({}), cancel).await;
    assert!(result.is_error);
    assert!(result.content.starts_with("Cancelled"));
    let (_, waiting) = run(find(&server.tools(), "fake__waiting"), json!({})).await;
    assert_eq!(waiting.content, "0");
}
