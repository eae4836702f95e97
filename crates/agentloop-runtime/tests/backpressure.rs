//! A store that stalls stalls the run: the loop is polled only by its
//! reader and each item is stored (or, for events that commit nothing, put
//! in one bounded log batch) before it is yielded, so nothing piles up
//! between the run and its store. The store is stalled for real: another
//! PostgreSQL session holds the event log's table locked.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_runtime::ChatRuntime;
use agentloop_storage::Store;
use agentloop_types::{LoopStatus, Message, Tool};
use common::{Counter, PgDatabase, chat};
use futures::StreamExt;
use serde_json::json;
use sqlx::Connection;

const CALLS: usize = 20;

/// Backends of this database waiting for a lock. Asked on a connection of
/// its own, outside any transaction: within one, PostgreSQL answers from
/// the snapshot its first question took.
async fn lock_waiters(db: &mut sqlx::PgConnection) -> i64 {
    let (n,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM pg_stat_activity \
         WHERE datname = current_database() AND wait_event_type = 'Lock'",
    )
    .fetch_one(db)
    .await
    .unwrap();
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_store_stalls_the_run_instead_of_buffering_its_events() {
    let Ok(admin_url) = std::env::var("AGENTLOOP_TEST_POSTGRES_URL") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must set AGENTLOOP_TEST_POSTGRES_URL"
        );
        println!("SKIPPED: AGENTLOOP_TEST_POSTGRES_URL is not set");
        return;
    };
    let db = PgDatabase::create(&admin_url).await;
    let store: Arc<dyn Store> = Arc::new(db.store.clone());
    let turns = (0..CALLS)
        .map(|i| ScriptedTurn::new().tool_call(&format!("c{i}"), "count", json!({})))
        .chain([ScriptedTurn::new().text("Counted.")]);
    let provider = ScriptedProvider::new(turns);
    let counter = Counter::new("count");
    let runtime = ChatRuntime::new(store.clone(), provider.clone())
        .with_tools([counter.clone() as Arc<dyn Tool>]);
    let chat_id = chat(&*store, &runtime, Default::default(), Default::default()).await;

    let mut locker = sqlx::PgConnection::connect(&db.url).await.unwrap();
    // The locker's transaction would see the waiters as its first look
    // found them: they are counted from a connection of their own.
    let mut watcher = sqlx::PgConnection::connect(&db.url).await.unwrap();
    // Writes to the log wait; reads (a chat's messages are read from
    // their events) go on.
    sqlx::raw_sql("BEGIN; LOCK TABLE run_events IN EXCLUSIVE MODE")
        .execute(&mut locker)
        .await
        .unwrap();
    let mut run = runtime
        .send(&chat_id, Message::user_text("u1", "count"))
        .await
        .unwrap();
    let yielded = Arc::new(AtomicUsize::new(0));
    let seen = yielded.clone();
    let reader = tokio::spawn(async move {
        let mut last = None;
        while let Some(event) = run.next().await {
            seen.fetch_add(1, Ordering::SeqCst);
            last = Some(event.unwrap());
        }
        last.and_then(|e| e.into_root_result())
    });

    // The run's first append waits on the lock.
    for _ in 0..400 {
        if lock_waiters(&mut watcher).await > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(
        lock_waiters(&mut watcher).await,
        1,
        "the run waits on the store"
    );
    // Events that commit nothing wait in one log batch (8 events) and are
    // yielded from it; the batch is the most that goes ahead of the store.
    assert!(
        yielded.load(Ordering::SeqCst) < 8,
        "at most one log batch goes ahead of the store"
    );
    assert_eq!(provider.requests().len(), 1, "the run did not go on");
    assert_eq!(counter.calls.load(Ordering::SeqCst), 0, "no tool ran");

    sqlx::raw_sql("COMMIT").execute(&mut locker).await.unwrap();
    let result = reader.await.unwrap().expect("the run ended");
    assert!(matches!(result.status, LoopStatus::Complete { .. }));
    assert_eq!(counter.calls.load(Ordering::SeqCst), CALLS);
    let records = store.list_runs(&chat_id).await.unwrap();
    assert_eq!(records.len(), 1);
    let logged = store
        .list_events(&records[0].id, None, 10_000)
        .await
        .unwrap();
    assert_eq!(
        logged.len(),
        yielded.load(Ordering::SeqCst),
        "every event stored once"
    );
}
