//! Crash safety: a child process runs a chat on a SQLite file and is killed
//! with SIGKILL while a tool runs; the file is reopened, nothing committed
//! is lost, the run is recovered and the chat continued to completion.
//!
//! The child is this test binary again, running the ignored `child_entry`
//! test with the database path in the environment.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_runtime::{ChatRuntime, RecoveryMode};
use agentloop_storage::model::RunStatus;
use agentloop_storage::{SqliteStore, Store};
use agentloop_types::{LoopStatus, Message, Role, Tool};
use serde_json::json;

use common::Counter;
use common::Finish;

const DB_VAR: &str = "AGENTLOOP_CRASH_CHILD_DB";
const CHAT_VAR: &str = "AGENTLOOP_CRASH_CHILD_CHAT";
const MARKER_VAR: &str = "AGENTLOOP_CRASH_CHILD_MARKER";

fn tools(marker: &Path) -> Vec<Arc<dyn Tool>> {
    let count = Arc::new(Counter {
        name: "count",
        calls: Default::default(),
        sleep_ms: 0,
        marker: Some(marker.to_owned()),
    });
    let slow = Arc::new(Counter {
        name: "slow",
        calls: Default::default(),
        sleep_ms: 600_000,
        marker: Some(marker.to_owned()),
    });
    vec![count, slow]
}

/// The child: runs until it is killed.
#[tokio::test]
#[ignore = "run by crash_mid_run_loses_nothing in a child process"]
async fn child_entry() {
    let (Ok(db), Ok(chat_id), Ok(marker)) = (
        std::env::var(DB_VAR),
        std::env::var(CHAT_VAR),
        std::env::var(MARKER_VAR),
    ) else {
        return;
    };
    let store: Arc<dyn Store> = Arc::new(SqliteStore::connect(&db).await.unwrap());
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .delay_ms(50)
            .text_chunks(&["Counting ", "first."])
            .tool_call("c1", "count", json!({}))
            .usage(10, 2),
        ScriptedTurn::new()
            .delay_ms(50)
            .text("Now the slow one.")
            .tool_call("s1", "slow", json!({}))
            .usage(20, 2),
        ScriptedTurn::new().text("unreachable").usage(1, 1),
    ]);
    let runtime = ChatRuntime::new(store, provider).with_tools(tools(Path::new(&marker)));
    let _ = runtime
        .send(&chat_id, Message::user_text("u1", "count, then go slow"))
        .finish()
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_mid_run_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db: PathBuf = dir.path().join("crash.db");
    let marker = dir.path().join("marker.txt");
    let db_str = db.to_str().unwrap().to_owned();

    let store: Arc<dyn Store> = Arc::new(SqliteStore::connect(&db_str).await.unwrap());
    let setup = ChatRuntime::new(store.clone(), ScriptedProvider::new([]));
    let chat_id = common::chat(&*store, &setup, Default::default(), Default::default()).await;

    let child = common::crash::spawn_child(&[
        (DB_VAR, &db_str),
        (CHAT_VAR, &chat_id),
        (MARKER_VAR, marker.to_str().unwrap()),
    ]);

    // Wait until the slow tool has started: by then the user message, two
    // assistant messages and the first results are committed.
    let before = common::crash::kill_in_slow_call(child, &*store, &chat_id, 4, &marker).await;
    drop(store);

    // Reopen the file as a new process would.
    let store: Arc<dyn Store> = Arc::new(SqliteStore::connect(&db_str).await.unwrap());
    let after = store.list_messages(&chat_id).await.unwrap();
    assert_eq!(
        &after[..before.len()],
        &before[..],
        "committed messages survive"
    );
    assert_eq!(after.len(), 4);
    assert_eq!(
        after[2].message.tool_results().next().unwrap().content,
        "count call 1"
    );
    let runs = store.list_runs(&chat_id).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(
        runs[0].status,
        RunStatus::Running,
        "the record says it was running"
    );
    let state = runs[0]
        .state
        .as_ref()
        .expect("tool-call intent was recorded");
    assert!(matches!(
        &state.phase,
        agentloop_types::RunPhase::RunTools { calls, .. } if calls[0].id == "s1"
    ));

    let provider = ScriptedProvider::new([ScriptedTurn::new().text("All done.").usage(5, 1)]);
    let runtime = ChatRuntime::new(store.clone(), provider.clone()).with_tools(tools(&marker));
    let recovered = runtime.recover(RecoveryMode::SingleProcess).await.unwrap();
    assert_eq!(recovered.len(), 1);
    assert_eq!(recovered[0].closed_calls.len(), 1);
    assert_eq!(recovered[0].closed_calls[0].tool_use_id, "s1");
    assert!(
        recovered[0].closed_calls[0].started,
        "the slow tool had started"
    );
    assert_eq!(
        store.get_run(&runs[0].id).await.unwrap().status,
        RunStatus::Failed
    );
    let repaired = store.list_messages(&chat_id).await.unwrap();
    assert_eq!(repaired.len(), 5);
    let closed = repaired[4].message.tool_results().next().unwrap().clone();
    assert!(
        closed.is_error && closed.content.contains("`slow`"),
        "{closed:?}"
    );
    assert!(
        runtime
            .recover(RecoveryMode::SingleProcess)
            .await
            .unwrap()
            .is_empty()
    );

    let outcome = runtime
        .continue_chat(&chat_id)
        .await
        .unwrap()
        .expect("there is a run to continue")
        .outcome()
        .await
        .unwrap();
    assert!(matches!(outcome.result.status, LoopStatus::Complete { .. }));
    let last = store.list_messages(&chat_id).await.unwrap();
    assert_eq!(last.len(), 6);
    assert_eq!(last[5].message.role, Role::Assistant);
    assert_eq!(last[5].message.text(), "All done.");
    assert_eq!(provider.requests()[0].messages.len(), 5);
    let lines = common::crash::marker_lines(&marker);
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("count")).count(),
        1,
        "a tool whose result was committed never runs again: {lines:?}"
    );
    assert_eq!(lines.iter().filter(|l| l.starts_with("slow")).count(), 1);
    assert!(runtime.continue_chat(&chat_id).await.unwrap().is_none());
}
