//! Bytes stored per run: one 20-step run (a scripted model, one tool call
//! per step, then an answer) through the runtime, on SQLite (a temp file)
//! and PostgreSQL (when `AGENTLOOP_TEST_POSTGRES_URL` is set, on a database
//! created and dropped here). Prints markdown table rows: the JSON bytes
//! each table holds for the run (messages, the run's event log, its
//! record's state and result, its kept steps' states), then what the
//! database takes on disk (SQLite: the file after `VACUUM`; PostgreSQL:
//! `pg_total_relation_size` of the four tables, indexes and TOAST
//! included, after `VACUUM FULL`).
//!
//! `cargo run -p agentloop-runtime --example run_bytes` (the bytes do not
//! depend on the build profile)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_runtime::{ChatRuntime, ChatSettings, ProjectSettings};
use agentloop_storage::model::Project;
use agentloop_storage::{PostgresStore, SqliteStore, Store};
use agentloop_types::{Message, Tool, ToolContext, ToolResult, ToolStream, single_result};
use serde_json::{Value, json};
use sqlx::{Connection, Row};

const STEPS: usize = 20;

/// A tool that answers a few lines, like a small file read.
struct Lookup;

impl Tool for Lookup {
    fn name(&self) -> &str {
        "lookup"
    }
    fn description(&self) -> &str {
        "Looks a key up."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"key": {"type": "string"}}})
    }
    fn execute(self: Arc<Self>, input: Value, _: ToolContext) -> ToolStream {
        single_result(async move {
            let key = input["key"].as_str().unwrap_or("?").to_owned();
            ToolResult::ok(format!(
                "{key}: the value stored under this key, with a line of context \
                 about where it came from and when it was last changed."
            ))
        })
    }
}

/// Runs one 20-step run in a new chat of `store`; returns the chat and run
/// ids.
async fn one_run(store: Arc<dyn Store>) -> (String, String) {
    let mut turns: Vec<ScriptedTurn> = (0..STEPS)
        .map(|i| {
            ScriptedTurn::new()
                .text(&format!("Step {i}: I look the next key up."))
                .tool_call(
                    &format!("call{i}"),
                    "lookup",
                    json!({"key": format!("key-{i}")}),
                )
                .usage(100, 20)
        })
        .collect();
    turns.push(ScriptedTurn::new().text("All keys read.").usage(100, 5));
    let runtime = ChatRuntime::new(store.clone(), ScriptedProvider::unrecorded(turns))
        .with_tools([Arc::new(Lookup) as Arc<dyn Tool>]);
    let project = Project {
        id: "bytes".to_owned(),
        name: "bytes".to_owned(),
        settings: serde_json::to_value(ProjectSettings::default()).unwrap(),
        approval_mode: None,
        created_at: 0,
        updated_at: 0,
    };
    store.create_project(&project).await.unwrap();
    let chat = runtime
        .create_chat(&project.id, "bytes", &ChatSettings::default())
        .await
        .unwrap();
    runtime
        .send(&chat.id, Message::user_text("u1", "Read every key."))
        .await
        .unwrap()
        .outcome()
        .await
        .unwrap();
    let run = store.last_run(&chat.id).await.unwrap().unwrap();
    (chat.id, run.id)
}

/// One row per figure.
fn row(label: &str, what: &str, bytes: i64) {
    println!("| {label} | {what} | {bytes} |");
}

/// The JSON bytes of the run's rows on PostgreSQL.
async fn payload(label: &str, db: &sqlx::PgPool, chat_id: &str, run_id: &str) {
    let queries = [
        (
            "messages (bodies)",
            "SELECT CAST(COALESCE(SUM(OCTET_LENGTH(body)), 0) AS BIGINT) FROM messages WHERE chat_id = $1",
            chat_id,
        ),
        (
            "event log (bodies)",
            "SELECT CAST(COALESCE(SUM(OCTET_LENGTH(body)), 0) AS BIGINT) FROM run_events WHERE run_id = $1",
            run_id,
        ),
        (
            "of which the `finished` event",
            "SELECT CAST(COALESCE(SUM(OCTET_LENGTH(body)), 0) AS BIGINT) FROM run_events WHERE run_id = $1 \
             AND body LIKE '%\"type\":\"finished\"%'",
            run_id,
        ),
        (
            "of which `message_created` events",
            "SELECT CAST(COALESCE(SUM(OCTET_LENGTH(body)), 0) AS BIGINT) FROM run_events WHERE run_id = $1 \
             AND body LIKE '%\"type\":\"message_created\"%'",
            run_id,
        ),
        (
            "run record: state",
            "SELECT CAST(COALESCE(OCTET_LENGTH(state), 0) AS BIGINT) FROM runs WHERE id = $1",
            run_id,
        ),
        (
            "run record: result",
            "SELECT CAST(COALESCE(OCTET_LENGTH(result), 0) AS BIGINT) FROM runs WHERE id = $1",
            run_id,
        ),
        (
            "kept steps: states",
            "SELECT CAST(COALESCE(SUM(OCTET_LENGTH(state)), 0) AS BIGINT) FROM run_steps \
             WHERE run_id = $1",
            run_id,
        ),
    ];
    let mut total = 0;
    for (what, sql, id) in queries {
        let bytes: i64 = sqlx::query(sql)
            .bind(id)
            .fetch_one(db)
            .await
            .unwrap()
            .get(0);
        if !what.starts_with("of which") {
            total += bytes;
        }
        row(label, what, bytes);
    }
    row(label, "**JSON bytes stored for the run**", total);
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bytes.db");
    let path = path.to_str().unwrap().to_owned();
    let sqlite = SqliteStore::connect(&path).await.unwrap();
    let (chat_id, run_id) = one_run(Arc::new(sqlite.clone())).await;
    sqlite.close().await;
    {
        // SQLite has no OCTET_LENGTH: the same figure is the length of the
        // text as a blob.
        let mut db = sqlx::SqliteConnection::connect(&path).await.unwrap();
        let label = "sqlite";
        let mut total = 0;
        for (what, sql, id) in [
            (
                "messages (bodies)",
                "SELECT COALESCE(SUM(LENGTH(CAST(body AS BLOB))), 0) FROM messages WHERE chat_id = $1",
                &chat_id,
            ),
            (
                "event log (bodies)",
                "SELECT COALESCE(SUM(LENGTH(CAST(body AS BLOB))), 0) FROM run_events WHERE run_id = $1",
                &run_id,
            ),
            (
                "of which the `finished` event",
                "SELECT COALESCE(SUM(LENGTH(CAST(body AS BLOB))), 0) FROM run_events WHERE run_id = $1 \
                 AND body LIKE '%\"type\":\"finished\"%'",
                &run_id,
            ),
            (
                "of which `message_created` events",
                "SELECT COALESCE(SUM(LENGTH(CAST(body AS BLOB))), 0) FROM run_events WHERE run_id = $1 \
                 AND body LIKE '%\"type\":\"message_created\"%'",
                &run_id,
            ),
            (
                "run record: state",
                "SELECT COALESCE(LENGTH(CAST(state AS BLOB)), 0) FROM runs WHERE id = $1",
                &run_id,
            ),
            (
                "run record: result",
                "SELECT COALESCE(LENGTH(CAST(result AS BLOB)), 0) FROM runs WHERE id = $1",
                &run_id,
            ),
            (
                "kept steps: states",
                "SELECT COALESCE(SUM(LENGTH(CAST(state AS BLOB))), 0) FROM run_steps \
                 WHERE run_id = $1",
                &run_id,
            ),
        ] {
            let bytes: i64 = sqlx::query(sql)
                .bind(id)
                .fetch_one(&mut db)
                .await
                .unwrap()
                .get(0);
            if !what.starts_with("of which") {
                total += bytes;
            }
            row(label, what, bytes);
        }
        row(label, "**JSON bytes stored for the run**", total);
        sqlx::raw_sql("VACUUM").execute(&mut db).await.unwrap();
        db.close().await.unwrap();
        let size = std::fs::metadata(&path).unwrap().len();
        row(label, "database file after VACUUM", size as i64);
    }

    match std::env::var("AGENTLOOP_TEST_POSTGRES_URL") {
        Ok(admin_url) => {
            let name = format!("agentloop_bytes_{}", std::process::id());
            let mut admin = sqlx::PgConnection::connect(&admin_url).await.unwrap();
            sqlx::raw_sql(&format!("CREATE DATABASE \"{name}\""))
                .execute(&mut admin)
                .await
                .unwrap();
            let (base, _) = admin_url.rsplit_once('/').unwrap();
            let url = format!("{base}/{name}");
            let store = PostgresStore::connect(&url).await.unwrap();
            let (chat_id, run_id) = one_run(Arc::new(store.clone())).await;
            store.close().await;
            let pool = sqlx::PgPool::connect(&url).await.unwrap();
            payload("postgres", &pool, &chat_id, &run_id).await;
            sqlx::raw_sql("VACUUM FULL messages, run_events, runs")
                .execute(&pool)
                .await
                .unwrap();
            let size: i64 = sqlx::query(
                "SELECT CAST(pg_total_relation_size('messages') + pg_total_relation_size('run_events') \
                 + pg_total_relation_size('runs') + pg_total_relation_size('run_steps') AS BIGINT)",
            )
            .fetch_one(&pool)
            .await
            .unwrap()
            .get(0);
            row(
                "postgres",
                "messages + run_events + runs + run_steps on disk (VACUUM FULL; indexes, TOAST)",
                size,
            );
            pool.close().await;
            sqlx::raw_sql(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
                .execute(&mut admin)
                .await
                .unwrap();
        }
        Err(_) => eprintln!("AGENTLOOP_TEST_POSTGRES_URL is not set: PostgreSQL skipped"),
    }
}
