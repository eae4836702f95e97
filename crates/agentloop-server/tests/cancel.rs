//! Cancel and force-complete (Mark Done) stop the agent: the in-flight
//! model request is dropped, no tool starts, a running tool sees the
//! cancel, the log ends with one `finished` whose status agrees with the
//! record (`cancelled`, or `complete` stopped by `workflow_complete`), SSE followers
//! see it and their stream closes, and the model is never asked again.
//! On SQLite here; `postgres.rs` repeats the cross-instance case.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use agentloop_engine::scripted::ScriptedTurn;
use agentloop_types::{Tool, ToolContext, ToolResult, ToolStream, single_result};
use common::gated::{GatedProvider, assert_ended, assert_force_completed, follow_until, start_run};
use common::{config, start_with};
use serde_json::{Value, json};
use tokio::sync::Notify;

/// A tool that runs until cancelled, recording that it started, that its
/// token was cancelled when it stopped (whether it returned or was dropped),
/// and that it never completed its work.
#[derive(Default)]
struct SlowTool {
    started: Notify,
    saw_cancel: Arc<AtomicBool>,
    finished: AtomicBool,
}

/// Notes, when the call stops, whether its token was cancelled by then.
struct CancelWitness(agentloop_types::CancellationToken, Arc<AtomicBool>);

impl Drop for CancelWitness {
    fn drop(&mut self) {
        self.1.store(self.0.is_cancelled(), Ordering::SeqCst);
    }
}

impl Tool for SlowTool {
    fn name(&self) -> &str {
        "slow"
    }
    fn description(&self) -> &str {
        "Takes a long time."
    }
    fn input_schema(&self) -> Value {
        json!({ "type": "object" })
    }
    fn execute(self: Arc<Self>, _: Value, ctx: ToolContext) -> ToolStream {
        single_result(async move {
            let _witness = CancelWitness(ctx.cancel.clone(), self.saw_cancel.clone());
            self.started.notify_one();
            tokio::select! {
                () = ctx.cancel.cancelled() => ToolResult::error("cancelled"),
                () = tokio::time::sleep(Duration::from_secs(60)) => {
                    self.finished.store(true, Ordering::SeqCst);
                    ToolResult::ok("finished")
                }
            }
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_streaming_drops_the_request_and_runs_no_tool() {
    let (_dir, store) = common::sqlite().await;
    let provider = GatedProvider::new([
        ScriptedTurn::new().text("working ").tool_call(
            "c1",
            "fs",
            json!({ "command": "create", "path": "effect.txt", "file_text": "too late" }),
        ),
        ScriptedTurn::new().text("This turn must never be requested."),
    ]);
    let server = start_with(store, config(provider.clone())).await;
    // Writes run without asking: a file on disk would show the stop came too late.
    let (_, task_id) = server
        .project_and_task_with(json!({ "approvals": { "*": "never" } }))
        .await;
    let run_id = start_run(&server, &task_id, "implementation").await;
    let mut sse = follow_until(&server, &run_id, "first_chunk").await;
    let dropped = provider.dropped.notified();

    let (code, body) = server
        .send(
            "POST",
            &format!("/api/agent-runs/{run_id}/cancel"),
            json!({}),
        )
        .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["status"], "cancelled");
    tokio::time::timeout(Duration::from_secs(1), dropped)
        .await
        .expect("the in-flight model request was not dropped within 1 s");
    sse.read_to_end(Duration::from_secs(1)).await;
    assert_ended(&server, &run_id, &sse, "cancelled").await;

    // Had the run gone on, opening the gate would let the tool call through.
    provider.open();
    let (code, again) = server
        .send(
            "POST",
            &format!("/api/agent-runs/{run_id}/cancel"),
            json!({}),
        )
        .await;
    assert_eq!(code, 409, "{again}");
    assert_eq!(again["agentRun"]["status"], "cancelled");
    let repo = server.repo.path().to_owned();
    server.stop().await;
    assert_eq!(sse.count("tool_start"), 0);
    assert!(!repo.join("effect.txt").exists(), "no tool effect");
    assert_eq!(provider.request_count(), 1, "no later request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_a_tool_runs_reaches_the_tool_and_closes_its_call() {
    let (_dir, store) = common::sqlite().await;
    let provider = GatedProvider::new([
        ScriptedTurn::new()
            .text("slow work")
            .tool_call("c1", "slow", json!({})),
        ScriptedTurn::new().text("This turn must never be requested."),
    ]);
    provider.open();
    let tool = Arc::new(SlowTool::default());
    let mut config = config(provider.clone());
    config.extra_tools.push(tool.clone());
    let server = start_with(store, config).await;
    let (_, task_id) = server.project_and_task().await;
    let started = tool.started.notified();
    let run_id = start_run(&server, &task_id, "implementation").await;
    let mut sse = follow_until(&server, &run_id, "tool_start").await;
    started.await;

    let (code, _) = server
        .send(
            "POST",
            &format!("/api/agent-runs/{run_id}/cancel"),
            json!({}),
        )
        .await;
    assert_eq!(code, 200);
    sse.read_to_end(Duration::from_secs(1)).await;
    assert_ended(&server, &run_id, &sse, "cancelled").await;
    assert!(
        tool.saw_cancel.load(Ordering::SeqCst),
        "the tool saw the cancel"
    );
    assert!(!tool.finished.load(Ordering::SeqCst));
    // The dangling call has its result in the terminal event's messages.
    let result = &sse.finished()[0]["result"];
    let text = result["messages"].to_string();
    assert!(text.contains("\"tool_use_id\":\"c1\""), "{text}");
    server.stop().await;
    assert_eq!(provider.request_count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_the_provider_hangs_ends_the_stream() {
    let (_dir, store) = common::sqlite().await;
    let provider = GatedProvider::new([ScriptedTurn::new().text("thinking...").hang()]);
    provider.open();
    let server = start_with(store, config(provider.clone())).await;
    let (_, task_id) = server.project_and_task().await;
    let run_id = start_run(&server, &task_id, "review").await;
    let mut sse = follow_until(&server, &run_id, "first_chunk").await;
    let (code, _) = server
        .send(
            "POST",
            &format!("/api/agent-runs/{run_id}/cancel"),
            json!({}),
        )
        .await;
    assert_eq!(code, 200);
    sse.read_to_end(Duration::from_secs(1)).await;
    assert_ended(&server, &run_id, &sse, "cancelled").await;
    server.stop().await;
    assert_eq!(provider.request_count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn force_complete_stops_the_running_agent_and_does_not_chain() {
    let (_dir, store) = common::sqlite().await;
    let provider = GatedProvider::new([
        ScriptedTurn::new().text("working ").tool_call(
            "c1",
            "fs",
            json!({ "command": "create", "path": "effect.txt", "file_text": "too late" }),
        ),
        ScriptedTurn::new().text("This turn must never be requested."),
    ]);
    let server = start_with(store, config(provider.clone())).await;
    // Writes run without asking: a file on disk would show the stop came too late.
    let (_, task_id) = server
        .project_and_task_with(json!({ "approvals": { "*": "never" } }))
        .await;
    let run_id = start_run(&server, &task_id, "implementation").await;
    let mut sse = follow_until(&server, &run_id, "first_chunk").await;
    let (code, body) = server
        .send(
            "PUT",
            &format!("/api/tasks/{task_id}/workflow-complete"),
            json!({ "complete": true }),
        )
        .await;
    assert_eq!(code, 200, "{body}");
    sse.read_to_end(Duration::from_secs(1)).await;
    assert_force_completed(&server, &run_id, &sse).await;
    provider.open();
    let repo = server.repo.path().to_owned();
    let (_, runs) = server
        .get(&format!("/api/tasks/{task_id}/agent-runs"))
        .await;
    server.stop().await;
    assert_eq!(runs.as_array().unwrap().len(), 1, "no chained run: {runs}");
    assert!(!repo.join("effect.txt").exists());
    assert_eq!(provider.request_count(), 1);
}
