//! What keeping every step costs on SQLite: a 50-step run (50 tool calls,
//! then an answer) is run once keeping all its steps and once keeping
//! none, and the databases' pages (vacuumed) are compared. A step is
//! kept at each checkpoint: after a model turn and after its tool results. Ignored by
//! default; run it with
//! `cargo nextest run -p agentloop-runtime --test step_storage --run-ignored only --no-capture`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_runtime::ChatRuntime;
use agentloop_storage::{ChatStore, RunStore, SqliteStore, StepRetention, StepStore, Store};
use agentloop_types::{Message, Tool};
use serde_json::json;

use common::{Counter, Finish};

const STEPS: usize = 50;

/// The run's database size (vacuumed), its kept steps, the bytes of their
/// rows' columns, and the bytes whole states would have taken.
async fn run(retention: StepRetention, dir: &std::path::Path) -> (u64, usize, i64, usize) {
    let path = dir.join(format!("{retention}.db"));
    let store = Arc::new(SqliteStore::connect(path.to_str().unwrap()).await.unwrap());
    let mut script: Vec<ScriptedTurn> = (0..STEPS)
        .map(|i| {
            ScriptedTurn::new()
                .text(&format!("Step {i}: counting once more."))
                .tool_call(&format!("call-{i}"), "count", json!({ "step": i }))
                .usage(1_000, 40)
        })
        .collect();
    script.push(ScriptedTurn::new().text("Counted.").usage(1_000, 5));
    let runtime = ChatRuntime::new(
        store.clone() as Arc<dyn Store>,
        ScriptedProvider::new(script),
    )
    .with_tools([Counter::new("count") as Arc<dyn Tool>])
    .with_step_retention(retention);
    let chat_id = common::chat(&*store, &runtime, Default::default(), Default::default()).await;
    runtime
        .send(&chat_id, Message::user_text("u1", "count fifty times"))
        .finish()
        .await
        .unwrap();
    let record = store.last_run(&chat_id).await.unwrap().unwrap();
    let steps = store.list_steps(&record.id).await.unwrap();
    // A finished record keeps no messages: the chat holds the history.
    let history: Vec<Message> = store
        .list_messages(&chat_id)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect();
    let whole: usize = steps
        .iter()
        .map(|s| {
            serde_json::to_string(&s.state_over(&history).unwrap())
                .unwrap()
                .len()
        })
        .sum();
    let columns: Option<i64> = sqlx::query_scalar(
        "SELECT SUM(LENGTH(run_id) + 8 + 8 + 8 + LENGTH(COALESCE(last_message_id, '')) \
         + LENGTH(state)) FROM run_steps",
    )
    .fetch_one(store.pool())
    .await
    .unwrap();
    sqlx::query("VACUUM").execute(store.pool()).await.unwrap();
    let pages: i64 = sqlx::query_scalar("PRAGMA page_count")
        .fetch_one(store.pool())
        .await
        .unwrap();
    let page_size: i64 = sqlx::query_scalar("PRAGMA page_size")
        .fetch_one(store.pool())
        .await
        .unwrap();
    store.close().await;
    let size = u64::try_from(pages * page_size).unwrap();
    (size, steps.len(), columns.unwrap_or(0), whole)
}

/// Every step of a run is kept, and keeping them costs pages; what each
/// costs is printed (`--no-capture`) for `docs/benchmarks.md`.
#[tokio::test]
async fn bytes_per_step_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let (all, kept, columns, whole) = run(StepRetention::All, dir.path()).await;
    let (none, _, _, _) = run(StepRetention::Off, dir.path()).await;
    let kept_u64 = u64::try_from(kept).unwrap();
    println!("{STEPS}-step run on SQLite: {kept} steps kept");
    println!("database pages, all steps kept: {all} bytes; none kept: {none} bytes");
    println!(
        "growth per kept step (database pages, vacuumed): {} bytes; per model turn and its tool call: {} bytes",
        all.saturating_sub(none) / kept_u64,
        all.saturating_sub(none) / u64::try_from(STEPS).unwrap()
    );
    println!(
        "row payload per step: {} bytes",
        columns / i64::try_from(kept).unwrap()
    );
    println!(
        "whole state per step, had it been copied: {} bytes",
        whole / kept
    );
    assert!(kept >= STEPS);
    assert!(
        all > none,
        "kept steps take room: {all} against {none} bytes"
    );
}
