//! Benchmark: storage as the runtime uses it. Per backend (a SQLite temp
//! file; PostgreSQL when `AGENTLOOP_TEST_POSTGRES_URL` is set, on a database
//! created and dropped here): messages appended per second, the time to
//! load a 10,000-message chat (the first read of that chat by the store
//! handle), one `send` on that chat (history load, a scripted turn,
//! persistence), and a `send` after 20 more turns. Prints markdown table rows; `cargo xtask
//! bench` runs it in release mode and collects them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Instant;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_runtime::{ChatRuntime, ChatSettings, ProjectSettings};
use agentloop_storage::model::Project;
use agentloop_storage::{PostgresStore, SqliteStore, Store};
use agentloop_types::Message;
use sqlx::Connection;

const MESSAGES: usize = 10_000;
const TURNS: usize = 20;
const LOADS: usize = 7;

/// Opens another handle on the same database.
type Reopen<'a> = &'a dyn Fn() -> futures::future::BoxFuture<'static, Arc<dyn Store>>;

async fn bench(label: &str, store: Arc<dyn Store>, reopen: Reopen<'_>) {
    let runtime = ChatRuntime::new(
        store.clone(),
        ScriptedProvider::unrecorded([ScriptedTurn::new().text("ok").usage(1, 1)]),
    );
    let project = Project {
        id: "bench".to_owned(),
        name: "bench".to_owned(),
        settings: serde_json::to_value(ProjectSettings::default()).unwrap(),
        approval_mode: None,
        created_at: 0,
        updated_at: 0,
    };
    store.create_project(&project).await.unwrap();
    let chat = runtime
        .create_chat(&project.id, "bench", &ChatSettings::default())
        .await
        .unwrap();
    let started = Instant::now();
    for i in 0..MESSAGES {
        let message = if i % 2 == 0 {
            Message::user_text(format!("m{i}"), format!("question number {i}"))
        } else {
            Message::assistant_text(format!("m{i}"), format!("answer number {i}, a bit longer"))
        };
        store.save_message(&chat.id, &message).await.unwrap();
    }
    let append = started.elapsed();
    println!(
        "| storage: {label} | messages appended per second (one at a time) | {:.0} |",
        MESSAGES as f64 / append.as_secs_f64()
    );
    // Each load goes through a new handle (a new pool, an empty message
    // cache), so each is a first read; the median of several steadies a
    // figure that one read leaves to chance.
    let mut loads = Vec::new();
    for _ in 0..LOADS {
        let fresh = reopen().await;
        let started = Instant::now();
        let loaded = fresh.list_messages(&chat.id).await.unwrap();
        loads.push(started.elapsed());
        assert_eq!(loaded.len(), MESSAGES);
    }
    loads.sort();
    println!(
        "| storage: {label} | load a {MESSAGES}-message chat (first read by a new handle, median of {LOADS}) | {:.1} ms |",
        loads[LOADS / 2].as_secs_f64() * 1e3
    );
    let started = Instant::now();
    runtime
        .send(&chat.id, Message::user_text("last", "one more"))
        .await
        .unwrap()
        .outcome()
        .await
        .unwrap();
    println!(
        "| storage: {label} | runtime send on a {MESSAGES}-message chat (load, scripted turn, persist) | {:.1} ms |",
        started.elapsed().as_secs_f64() * 1e3
    );
    // Each turn leaves a run record holding its state: sending must not
    // read those back, so the 21st send costs what the first did.
    let mut last = 0.0;
    for turn in 0..TURNS {
        let started = Instant::now();
        runtime
            .send(&chat.id, Message::user_text(format!("turn{turn}"), "again"))
            .await
            .unwrap()
            .outcome()
            .await
            .unwrap();
        last = started.elapsed().as_secs_f64() * 1e3;
    }
    println!(
        "| storage: {label} | runtime send on that chat after {TURNS} more turns | {last:.1} ms |"
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.db");
    let path = path.to_str().unwrap().to_owned();
    let sqlite = SqliteStore::connect(&path).await.unwrap();
    let reopen = || -> futures::future::BoxFuture<'static, Arc<dyn Store>> {
        let path = path.clone();
        Box::pin(async move { Arc::new(SqliteStore::connect(&path).await.unwrap()) as _ })
    };
    bench("sqlite (temp file)", Arc::new(sqlite), &reopen).await;

    match std::env::var("AGENTLOOP_TEST_POSTGRES_URL") {
        Ok(admin_url) => {
            let name = format!("agentloop_bench_{}", std::process::id());
            let mut admin = sqlx::PgConnection::connect(&admin_url).await.unwrap();
            sqlx::raw_sql(&format!("CREATE DATABASE \"{name}\""))
                .execute(&mut admin)
                .await
                .unwrap();
            let (base, _) = admin_url.rsplit_once('/').unwrap();
            let url = format!("{base}/{name}");
            let store = PostgresStore::connect(&url).await.unwrap();
            let reopen = || -> futures::future::BoxFuture<'static, Arc<dyn Store>> {
                let url = url.clone();
                Box::pin(async move { Arc::new(PostgresStore::connect(&url).await.unwrap()) as _ })
            };
            bench("postgres", Arc::new(store.clone()), &reopen).await;
            store.close().await;
            sqlx::raw_sql(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
                .execute(&mut admin)
                .await
                .unwrap();
        }
        Err(_) => {
            eprintln!("storage_bench: AGENTLOOP_TEST_POSTGRES_URL is not set; PostgreSQL skipped")
        }
    }
}
