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
use agentloop_storage::{PostgresStore, SqliteStore, Store};
use agentloop_types::Message;
use sqlx::Connection;

const MESSAGES: usize = 10_000;
const TURNS: usize = 20;

async fn bench(label: &str, store: Arc<dyn Store>) {
    let runtime = ChatRuntime::new(
        store.clone(),
        ScriptedProvider::unrecorded([ScriptedTurn::new().text("ok").usage(1, 1)]),
    );
    let project = runtime
        .create_project("bench", &ProjectSettings::default())
        .await
        .unwrap();
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
    let started = Instant::now();
    let loaded = store.list_messages(&chat.id).await.unwrap();
    let load = started.elapsed();
    assert_eq!(loaded.len(), MESSAGES);
    println!(
        "| storage: {label} | load a {MESSAGES}-message chat | {:.1} ms |",
        load.as_secs_f64() * 1e3
    );
    let started = Instant::now();
    runtime
        .send(&chat.id, Message::user_text("last", "one more"))
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
    let sqlite = SqliteStore::connect(path.to_str().unwrap()).await.unwrap();
    bench("sqlite (temp file)", Arc::new(sqlite)).await;

    match std::env::var("AGENTLOOP_TEST_POSTGRES_URL") {
        Ok(admin_url) => {
            let name = format!("agentloop_bench_{}", std::process::id());
            let mut admin = sqlx::PgConnection::connect(&admin_url).await.unwrap();
            sqlx::raw_sql(&format!("CREATE DATABASE \"{name}\""))
                .execute(&mut admin)
                .await
                .unwrap();
            let (base, _) = admin_url.rsplit_once('/').unwrap();
            let store = PostgresStore::connect(&format!("{base}/{name}"))
                .await
                .unwrap();
            bench("postgres", Arc::new(store.clone())).await;
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
