//! An interrupted tool step where one call had started and one had not
//! (`tool_concurrency: 1`): continuing it runs only the call that never
//! started; a new message instead supersedes it and closes both calls.
//! The interruption is a run dropped mid-tool in this process, its record
//! left `running` as a crash leaves it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_runtime::{ChatRuntime, ChatSettings, LoopSettings, RecoveryMode};
use agentloop_storage::model::RunStatus;
use agentloop_storage::{MemoryStore, Store};
use agentloop_types::{LoopStatus, Message, Tool};
use serde_json::json;

use common::Counter;
use common::Finish;

fn tools(marker: &Path) -> Vec<Arc<dyn Tool>> {
    let slow = Arc::new(Counter {
        name: "slow",
        calls: Default::default(),
        sleep_ms: 600_000,
        marker: Some(marker.to_owned()),
    });
    let count = Arc::new(Counter {
        name: "count",
        calls: Default::default(),
        sleep_ms: 0,
        marker: Some(marker.to_owned()),
    });
    vec![slow, count]
}

fn marker_lines(marker: &Path) -> Vec<String> {
    std::fs::read_to_string(marker)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

struct Interrupted {
    store: Arc<dyn Store>,
    chat_id: String,
    marker: PathBuf,
    _dir: tempfile::TempDir,
}

/// A run whose turn calls `slow` then `count`, one at a time, dropped
/// while `slow` runs; then recovered.
async fn interrupted() -> Interrupted {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker.txt");
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let provider = ScriptedProvider::new([ScriptedTurn::new()
        .tool_call("s1", "slow", json!({}))
        .tool_call("c2", "count", json!({}))
        .usage(10, 2)]);
    let runtime = ChatRuntime::new(store.clone(), provider).with_tools(tools(&marker));
    let settings = ChatSettings {
        loop_settings: LoopSettings {
            tool_concurrency: Some(1),
            ..LoopSettings::default()
        },
    };
    let chat_id = common::chat(&*store, &runtime, Default::default(), settings).await;
    let running = {
        let (runtime, chat_id) = (runtime.clone(), chat_id.clone());
        tokio::spawn(async move {
            let _ = runtime
                .send(&chat_id, Message::user_text("u1", "slow, then count"))
                .finish()
                .await;
        })
    };
    let give_up = Instant::now() + Duration::from_secs(60);
    while !marker_lines(&marker).iter().any(|l| l.starts_with("slow")) {
        assert!(Instant::now() < give_up, "the slow tool never started");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    running.abort();
    let _ = running.await;
    let runs = store.list_runs(&chat_id).await.unwrap();
    assert_eq!(
        runs[0].status,
        RunStatus::Running,
        "left as a crash leaves it"
    );

    let recovered = ChatRuntime::new(store.clone(), ScriptedProvider::new([]))
        .with_tools(tools(&marker))
        .recover(RecoveryMode::SingleProcess)
        .await
        .unwrap();
    assert_eq!(recovered.len(), 1);
    let closed: Vec<_> = recovered[0]
        .closed_calls
        .iter()
        .map(|c| (c.tool_use_id.as_str(), c.started))
        .collect();
    assert_eq!(closed, [("s1", true)], "only the started call is closed");
    Interrupted {
        store,
        chat_id,
        marker,
        _dir: dir,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continuing_runs_only_the_call_that_never_started() {
    let run = interrupted().await;
    let provider = ScriptedProvider::new([ScriptedTurn::new().text("Counted.").usage(5, 1)]);
    let runtime =
        ChatRuntime::new(run.store.clone(), provider.clone()).with_tools(tools(&run.marker));
    let outcome = runtime
        .continue_chat(&run.chat_id)
        .await
        .unwrap()
        .expect("the interrupted run continues")
        .outcome()
        .await
        .unwrap();
    assert!(matches!(outcome.result.status, LoopStatus::Complete { .. }));

    let lines = marker_lines(&run.marker);
    assert_eq!(lines, ["slow s1", "count c2"], "slow never ran again");
    let messages = run.store.list_messages(&run.chat_id).await.unwrap();
    assert_eq!(messages.len(), 4);
    let results: Vec<_> = messages[2].message.tool_results().collect();
    assert_eq!(results[0].tool_use_id, "s1");
    assert!(results[0].is_error && results[0].content.contains("may or may not"));
    assert_eq!(results[1].content, "count call 1");
    assert_eq!(provider.requests()[0].messages.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_message_supersedes_the_interrupted_run() {
    let run = interrupted().await;
    let provider = ScriptedProvider::new([ScriptedTurn::new().text("Hello again.").usage(5, 1)]);
    let runtime =
        ChatRuntime::new(run.store.clone(), provider.clone()).with_tools(tools(&run.marker));
    let outcome = runtime
        .send(&run.chat_id, Message::user_text("u2", "never mind"))
        .finish()
        .await
        .unwrap();
    assert_eq!(outcome.result.final_text().as_deref(), Some("Hello again."));

    let messages = run.store.list_messages(&run.chat_id).await.unwrap();
    assert_eq!(messages.len(), 5);
    let results: Vec<_> = messages[2].message.tool_results().collect();
    assert!(
        results[0].content.contains("may or may not"),
        "s1 had started"
    );
    assert!(
        results[1].content.contains("did not run"),
        "c2 never started"
    );
    assert_eq!(marker_lines(&run.marker), ["slow s1"], "nothing ran again");
    let runs = run.store.list_runs(&run.chat_id).await.unwrap();
    assert_eq!(runs[0].result.as_ref().unwrap()["resumable"], json!(false));
    assert!(runtime.continue_chat(&run.chat_id).await.unwrap().is_none());
}
