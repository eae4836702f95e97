//! The database decides the one-running-run rule on PostgreSQL too. Runs
//! when `AGENTLOOP_TEST_POSTGRES_URL` names a server; each test creates and
//! drops its own database.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_storage::PostgresStore;
use common::gated::{
    GatedProvider, SseReader, assert_ended, assert_force_completed, follow_until, start_run,
};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_posts_give_one_run_on_postgres() {
    let Some(database) = common::postgres("fifty_concurrent_posts_give_one_run_on_postgres").await
    else {
        return;
    };
    let store = Arc::new(PostgresStore::connect(&database.url).await.unwrap());
    let provider = ScriptedProvider::new([ScriptedTurn::new().hang(), ScriptedTurn::new().hang()]);
    let server = common::start(store.clone(), provider).await;
    let (_, task_id) = server.project_and_task().await;
    let statuses = common::concurrent_posts(&server, &task_id, 50).await;
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        49,
        "{statuses:?}"
    );
    server.stop().await;
    store.close().await;
    drop(database);
}

/// Two instances on one PostgreSQL store: `runner` runs a gated model that
/// streams a little and then would write `effect.txt` (a later turn must
/// never be requested); `other`, with the same user, runs no model.
async fn two_instances(
    database: &common::PgDatabase,
) -> (
    Arc<PostgresStore>,
    Arc<GatedProvider>,
    common::TestServer,
    common::TestServer,
) {
    let store = Arc::new(PostgresStore::connect(&database.url).await.unwrap());
    let provider = GatedProvider::new([
        ScriptedTurn::new().text("working ").tool_call(
            "c1",
            "fs",
            json!({ "command": "create", "path": "effect.txt", "file_text": "too late" }),
        ),
        ScriptedTurn::new().text("This turn must never be requested."),
    ]);
    let runner = common::start(store.clone(), provider.clone()).await;
    let other = common::start_as(
        store.clone(),
        common::config(ScriptedProvider::new([])),
        runner.token.clone(),
    )
    .await;
    (store, provider, runner, other)
}

/// Follows the run on both instances until its first chunk, sends the
/// request that stops it to `other`, and waits (bounded) until the runner
/// drops its model request and both streams have ended.
async fn stop_from_other(
    provider: &GatedProvider,
    runner: &common::TestServer,
    other: &common::TestServer,
    run_id: &str,
    method: &str,
    path: &str,
    body: serde_json::Value,
) -> (SseReader, SseReader) {
    let mut on_runner = follow_until(runner, run_id, "first_chunk").await;
    let mut on_other = follow_until(other, run_id, "first_chunk").await;
    let dropped = provider.dropped.notified();
    let (code, body) = other.send(method, path, body).await;
    assert_eq!(code, 200, "{body}");
    // The runner learns it at its next heartbeat (50 ms in these tests).
    tokio::time::timeout(Duration::from_secs(1), dropped)
        .await
        .expect("the runner did not drop the model request within 1 s");
    on_runner.read_to_end(Duration::from_secs(1)).await;
    on_other.read_to_end(Duration::from_secs(2)).await;
    (on_runner, on_other)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mark_done_on_one_instance_force_completes_the_run_on_another() {
    let Some(database) =
        common::postgres("mark_done_on_one_instance_force_completes_the_run_on_another").await
    else {
        return;
    };
    let (store, provider, runner, other) = two_instances(&database).await;
    let (_, task_id) = runner.project_and_task().await;
    let run_id = start_run(&runner, &task_id, "implementation").await;
    let (on_runner, on_other) = stop_from_other(
        &provider,
        &runner,
        &other,
        &run_id,
        "PUT",
        &format!("/api/tasks/{task_id}/workflow-complete"),
        json!({ "complete": true }),
    )
    .await;
    assert_force_completed(&runner, &run_id, &on_runner).await;
    assert_force_completed(&other, &run_id, &on_other).await;

    provider.open();
    let repo = runner.repo.path().to_owned();
    let (_, runs) = other.get(&format!("/api/tasks/{task_id}/agent-runs")).await;
    other.stop().await;
    runner.stop().await;
    assert_eq!(runs.as_array().unwrap().len(), 1, "no chained run: {runs}");
    assert!(!repo.join("effect.txt").exists(), "no tool effect");
    assert_eq!(provider.request_count(), 1, "no later model request");
    store.close().await;
    drop(database);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_on_one_instance_stops_the_run_on_another() {
    let Some(database) =
        common::postgres("a_cancel_on_one_instance_stops_the_run_on_another").await
    else {
        return;
    };
    let (store, provider, runner, other) = two_instances(&database).await;
    // Writes run without asking: a file on disk would show the stop came too late.
    let (_, task_id) = runner
        .project_and_task_with(json!({ "approvals": { "*": "never" } }))
        .await;
    let run_id = start_run(&runner, &task_id, "implementation").await;
    let (on_runner, on_other) = stop_from_other(
        &provider,
        &runner,
        &other,
        &run_id,
        "POST",
        &format!("/api/agent-runs/{run_id}/cancel"),
        json!({}),
    )
    .await;
    assert_ended(&runner, &run_id, &on_runner, "cancelled").await;
    assert_ended(&other, &run_id, &on_other, "cancelled").await;

    provider.open();
    let repo = runner.repo.path().to_owned();
    other.stop().await;
    runner.stop().await;
    assert!(!repo.join("effect.txt").exists(), "no tool effect");
    assert_eq!(provider.request_count(), 1, "no later model request");
    store.close().await;
    drop(database);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_on_another_instance_is_woken_by_announced_appends() {
    let Some(database) =
        common::postgres("a_follower_on_another_instance_is_woken_by_announced_appends").await
    else {
        return;
    };
    // Two stores, as two processes would have: they share only the database.
    let runner_store = Arc::new(PostgresStore::connect(&database.url).await.unwrap());
    let other_store = Arc::new(PostgresStore::connect(&database.url).await.unwrap());
    let provider =
        GatedProvider::new([ScriptedTurn::new().text_chunks(&["one ", "two ", "three"])]);
    let runner = common::start(runner_store.clone(), provider.clone()).await;
    let other = common::start_as(
        other_store.clone(),
        common::config(ScriptedProvider::new([])),
        runner.token.clone(),
    )
    .await;
    let (_, task_id) = runner.project_and_task().await;
    let run_id = start_run(&runner, &task_id, "planification").await;
    let listening = std::time::Instant::now();
    while !other.state.appends.listening() {
        assert!(
            listening.elapsed() < Duration::from_secs(10),
            "the other instance never listened for appends"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut on_other = follow_until(&other, &run_id, "first_chunk").await;
    assert!(
        other.state.local_run(&run_id).is_none(),
        "the run executes elsewhere"
    );
    let woken_before = other.state.appends.wakes();
    provider.open();
    on_other.read_to_end(Duration::from_secs(10)).await;
    let finished = on_other.finished();
    assert_eq!(finished.len(), 1, "one terminal event");
    assert_eq!(finished[0]["result"]["status"], "complete");
    let logged = other
        .store
        .list_events(&run_id, None, 10_000)
        .await
        .unwrap();
    for kind in ["streaming_chunk", "message_created", "finished"] {
        assert_eq!(
            on_other.count(kind),
            logged.iter().filter(|e| e.kind.name() == kind).count(),
            "every {kind} event reaches the follower once"
        );
    }
    assert!(
        other.state.appends.wakes() > woken_before,
        "the follower was woken by announcements, not only by polling"
    );
    other.stop().await;
    runner.stop().await;
    runner_store.close().await;
    other_store.close().await;
    drop(database);
}
