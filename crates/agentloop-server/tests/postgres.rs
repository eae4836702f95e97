//! The database decides the one-running-run rule on PostgreSQL too. Runs
//! when `AGENTLOOP_TEST_POSTGRES_URL` names a server; each test creates and
//! drops its own database.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_storage::PostgresStore;
use std::sync::Arc;

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
