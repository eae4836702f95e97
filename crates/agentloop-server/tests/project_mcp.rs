//! Projects may name MCP servers for their runs when the operator allows
//! it: a stdio server starts inside the project folder, its tools reach the
//! agent, and a cancel of the run reaches the server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_storage::MemoryStore;
use common::gated::{follow_until, start_run};
use serde_json::json;

/// Polls (bounded) until `path` holds `needle`.
async fn wait_for(path: &Path, needle: &str) {
    for _ in 0..400 {
        if std::fs::read_to_string(path).is_ok_and(|t| t.contains(needle)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{} never held {needle:?}", path.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_mcp_server_runs_in_its_folder_and_hears_the_cancel() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("w1", "fake__wait", json!({})),
        ScriptedTurn::new().text("never requested"),
    ]);
    let server = common::start_with_project_mcp(provider).await;
    let task_id = server
        .mcp_task(
            // An MCP tool not declared read-only waits for approval by
            // default; this one is to run, so the cancel reaches it.
            json!({ "fake__wait": "never" }),
            json!({ "fake": {
                "command": "python3",
                "args": [common::fake_mcp_server()],
                "env": { "FAKE_LOG": "fake-calls.jsonl" }
            } }),
        )
        .await;
    let run_id = start_run(&server, &task_id, "review").await;
    let mut sse = follow_until(&server, &run_id, "tool_start").await;
    // FAKE_LOG is relative: the call is logged in the project folder.
    let log = server.repo.path().join("fake-calls.jsonl");
    wait_for(&log, "\"wait\"").await;

    let (status, _) = server
        .send(
            "POST",
            &format!("/api/agent-runs/{run_id}/cancel"),
            json!({}),
        )
        .await;
    assert_eq!(status, 200);
    sse.read_to_end(Duration::from_secs(5)).await;
    wait_for(&log, "\"cancelled\"").await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn project_mcp_servers_are_refused_unless_allowed() {
    let server = common::start(Arc::new(MemoryStore::new()), ScriptedProvider::new([])).await;
    let (status, body) = server
        .send(
            "POST",
            "/api/projects",
            json!({
                "name": "p",
                "repoFolder": server.repo.path(),
                "mcpServers": { "x": { "command": "true" } }
            }),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("--allow-project-mcp")
    );
    assert_eq!(std::fs::read_dir(server.repo.path()).unwrap().count(), 0);
    server.stop().await;
}

/// A run whose project's MCP server cannot start fails before its loop
/// does anything, and ends like any run: one terminal `finished` event
/// saying it failed (the error its agent run shows), its agent run and its
/// record failed, its lease released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_fails_before_its_loop_ends_with_one_terminal_event() {
    let (_dir, store) = common::sqlite().await;
    let mut config = common::config(ScriptedProvider::new([
        ScriptedTurn::new().text("never requested")
    ]));
    config.allow_project_mcp = true;
    let server = common::start_with(store.clone(), config).await;
    let task_id = server
        .mcp_task(
            json!({}),
            json!({ "broken": { "command": "/nonexistent/agentloop-no-such-mcp-server" } }),
        )
        .await;
    let run_id = start_run(&server, &task_id, "review").await;
    let run = common::approvals::until_status(&server, &run_id, "failed").await;
    assert_eq!(run["error"]["kind"], "executor", "{run}");

    let events = common::approvals::events(&server, &run_id, None).await;
    let finished: Vec<&serde_json::Value> =
        events.iter().filter(|e| e["type"] == "finished").collect();
    assert_eq!(finished.len(), 1, "{events:?}");
    assert_eq!(finished[0]["result"]["status"], "error", "{events:?}");
    assert_eq!(
        finished[0]["result"]["error"]["message"], run["error"]["message"],
        "{events:?}"
    );
    let record = store.get_run(&run_id).await.unwrap();
    assert_eq!(record.status, agentloop_storage::model::RunStatus::Failed);
    assert_eq!(record.lease_owner, None);
    // Whoever follows it later reads the same one end.
    let again = common::approvals::events(&server, &run_id, None).await;
    assert_eq!(common::approvals::finished_statuses(&again), ["error"]);
    server.stop().await;
}
