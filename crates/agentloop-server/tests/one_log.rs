//! One record and one event log per agent run: the runtime executes the
//! agent run's own record, so every event is appended once, on SQLite and
//! on PostgreSQL, counted in the database itself.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_storage::Store;
use agentloop_types::EventKind;
use serde_json::json;
use sqlx::Connection;

/// Runs one chain (implementation, then a review that completes the
/// workflow after a tool call) and returns the agent run ids.
async fn run_chain(store: std::sync::Arc<dyn Store>) -> Vec<String> {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().text("Step 1 is done."),
        ScriptedTurn::new().tool_call("c1", "complete_workflow", json!({ "summary": "done" })),
        ScriptedTurn::new().text("The task is complete."),
    ]);
    let server = common::start(store.clone(), provider).await;
    let (_, task_id) = server.project_and_task().await;
    let (status, _) = server
        .send(
            "POST",
            &format!("/api/tasks/{task_id}/agent-runs"),
            json!({ "agentType": "implementation" }),
        )
        .await;
    assert_eq!(status, 201);
    let runs = server.settle(&task_id, 2).await;
    server.stop().await;
    assert!(runs.iter().all(|r| r["status"] == "completed"), "{runs:?}");
    runs.iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Checks the rows the database holds against the runs' event logs: one
/// record per agent run and no other, one row per event.
async fn check(
    store: &dyn Store,
    agent_runs: &[String],
    records: Vec<String>,
    rows: Vec<(String, i64)>,
) {
    let mut expected = agent_runs.to_vec();
    expected.sort();
    let mut records = records;
    records.sort();
    assert_eq!(
        records, expected,
        "one run record per agent run, and no other"
    );
    let rows: BTreeMap<String, i64> = rows.into_iter().collect();
    assert_eq!(
        rows.keys().cloned().collect::<Vec<_>>(),
        expected,
        "events are appended to the agent runs' logs only"
    );
    for run_id in agent_runs {
        let events = store.list_events(run_id, None, 10_000).await.unwrap();
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        let contiguous: Vec<u64> = (0..events.len() as u64).collect();
        assert_eq!(seqs, contiguous, "run {run_id}: one log, numbered once");
        assert_eq!(
            rows[run_id],
            events.len() as i64,
            "run {run_id}: one row per event"
        );
        let ends = events
            .iter()
            .filter(|e| e.path.is_root() && matches!(e.kind, EventKind::Finished(_)))
            .count();
        assert_eq!(ends, 1, "run {run_id}: one terminal event");
        assert!(matches!(
            events.last().unwrap().kind,
            EventKind::Finished(_)
        ));
    }
}

const RECORDS: &str = "SELECT id FROM runs";
const ROWS: &str = "SELECT run_id, COUNT(*) FROM run_events GROUP BY run_id";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_event_of_a_server_run_is_appended_once_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.sqlite");
    let store = agentloop_storage::open_store(path.to_str().unwrap())
        .await
        .unwrap();
    let agent_runs = run_chain(store.clone()).await;
    let mut db = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    let records: Vec<(String,)> = sqlx::query_as(RECORDS).fetch_all(&mut db).await.unwrap();
    let rows: Vec<(String, i64)> = sqlx::query_as(ROWS).fetch_all(&mut db).await.unwrap();
    let records = records.into_iter().map(|(id,)| id).collect();
    check(&*store, &agent_runs, records, rows).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_event_of_a_server_run_is_appended_once_on_postgres() {
    let Some(database) = common::postgres("each_event_of_a_server_run_is_appended_once").await
    else {
        return;
    };
    let store = agentloop_storage::open_store(&database.url).await.unwrap();
    let agent_runs = run_chain(store.clone()).await;
    let mut db = sqlx::PgConnection::connect(&database.url).await.unwrap();
    let records: Vec<(String,)> = sqlx::query_as(RECORDS).fetch_all(&mut db).await.unwrap();
    let rows: Vec<(String, i64)> = sqlx::query_as(ROWS).fetch_all(&mut db).await.unwrap();
    let records = records.into_iter().map(|(id,)| id).collect();
    check(&*store, &agent_runs, records, rows).await;
}
