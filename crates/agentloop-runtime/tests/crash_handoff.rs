//! A handoff across a crash: a child process runs a chat on a SQLite file
//! in which the triage agent hands the conversation to billing, and is
//! killed with SIGKILL while billing's slow tool runs. The file is
//! reopened, the run recovered and continued: billing goes on speaking
//! (its instructions, model and tools), the handoff is in the run's log
//! exactly once, and no committed tool runs again.
//!
//! The child is this test binary again, running the ignored `child_entry`
//! test with its parameters in the environment.
//!
//! What makes that hold: a specialist's tool, like the run's own, runs
//! only once its call's `tool_start` is stored, so recovery knows the
//! call may have taken effect.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::{AgentProfile, Handoffs};
use agentloop_runtime::{ChatRuntime, RecoveryMode};
use agentloop_storage::model::RunStatus;
use agentloop_storage::{MemoryStore, SqliteStore, Store};
use agentloop_types::{
    EventKind, LoopStatus, Message, Tool, ToolContext, ToolResult, ToolStartEvent, ToolStream,
    single_result,
};
use serde_json::json;

use common::{Counter, Finish};

const DB_VAR: &str = "AGENTLOOP_HANDOFF_CRASH_DB";
const CHAT_VAR: &str = "AGENTLOOP_HANDOFF_CRASH_CHAT";
const MARKER_VAR: &str = "AGENTLOOP_HANDOFF_CRASH_MARKER";

fn counter(name: &'static str, sleep_ms: u64, marker: &Path) -> Arc<dyn Tool> {
    Arc::new(Counter {
        name,
        calls: Default::default(),
        sleep_ms,
        marker: Some(marker.to_owned()),
    })
}

/// Triage offers `count`; billing offers `slow` (which hangs).
fn runtime(store: Arc<dyn Store>, provider: Arc<ScriptedProvider>, marker: &Path) -> ChatRuntime {
    let billing = AgentProfile::new("billing", "Invoices.")
        .instructions("You are billing.")
        .model("billing-model")
        .tool(counter("slow", 600_000, marker));
    let handoffs = Handoffs::new("triage", vec!["billing".into()], vec![billing]).unwrap();
    ChatRuntime::new(store, provider)
        .with_tools([counter("count", 0, marker)])
        .with_handoffs(handoffs)
}

/// The child: runs until it is killed.
#[tokio::test]
#[ignore = "run by a_handoff_survives_a_sigkill in a child process"]
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
            .tool_call("c1", "count", json!({}))
            .tool_call("h1", "transfer_to_billing", json!({"reason": "invoice"}))
            .usage(10, 2),
        ScriptedTurn::new()
            .delay_ms(20)
            .tool_call("s1", "slow", json!({}))
            .usage(20, 2),
        ScriptedTurn::new().text("unreachable").usage(1, 1),
    ]);
    let runtime = runtime(store, provider, Path::new(&marker));
    let _ = runtime
        .send(&chat_id, Message::user_text("u1", "my invoice"))
        .finish()
        .await;
}

async fn handoffs_in_log(store: &Arc<dyn Store>, run_id: &str) -> usize {
    store
        .list_events(run_id, None, 10_000)
        .await
        .unwrap()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Handoff(_)))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handoff_survives_a_sigkill() {
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

    // Killed once billing's slow call started: by then the prompt,
    // triage's turn, its results and billing's turn are committed.
    common::crash::kill_in_slow_call(child, &*store, &chat_id, 4, &marker).await;
    drop(store);

    // Reopen the file as a new process would.
    let store: Arc<dyn Store> = Arc::new(SqliteStore::connect(&db_str).await.unwrap());
    let runs = store.list_runs(&chat_id).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, RunStatus::Running);
    let state = runs[0].state.as_ref().expect("the run's state was stored");
    assert_eq!(
        state.strategy.as_ref().unwrap()["agent"],
        "billing",
        "the state names the agent speaking"
    );
    let crashed_run = runs[0].id.clone();
    assert_eq!(handoffs_in_log(&store, &crashed_run).await, 1);

    let provider = ScriptedProvider::new([ScriptedTurn::new().text("Billing: paid.").usage(5, 1)]);
    let runtime = runtime(store.clone(), provider.clone(), &marker);
    let recovered = runtime.recover(RecoveryMode::SingleProcess).await.unwrap();
    assert_eq!(recovered.len(), 1);
    assert_eq!(recovered[0].closed_calls.len(), 1);
    assert_eq!(recovered[0].closed_calls[0].tool_use_id, "s1");
    assert!(
        provider.requests().is_empty(),
        "recovery makes no model call"
    );

    let outcome = runtime
        .continue_chat(&chat_id)
        .await
        .unwrap()
        .expect("there is a run to continue")
        .outcome()
        .await
        .unwrap();
    assert!(
        matches!(outcome.result.status, LoopStatus::Complete { .. }),
        "{:?}",
        outcome.result.status
    );
    assert_eq!(
        outcome.result.final_text().as_deref(),
        Some("Billing: paid.")
    );
    // Billing goes on speaking: its instructions, model and tools.
    let requests = provider.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].options.system_prompt.as_deref(),
        Some("You are billing.")
    );
    assert_eq!(requests[0].options.model, "billing-model");
    let tools: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["slow"]);
    // No handoff repeated or lost in any run's log.
    let runs = store.list_runs(&chat_id).await.unwrap();
    let mut total = 0;
    for run in &runs {
        total += handoffs_in_log(&store, &run.id).await;
    }
    assert_eq!(total, 1, "the handoff is made once across the crash");
    let lines = common::crash::marker_lines(&marker);
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("count")).count(),
        1,
        "{lines:?}"
    );
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("slow")).count(),
        1,
        "{lines:?}"
    );
}

/// A tool that, as it runs, looks in the store for its call's
/// `tool_start`.
struct StartProbe {
    store: Arc<dyn Store>,
    found: Arc<std::sync::Mutex<Option<bool>>>,
}

impl Tool for StartProbe {
    fn name(&self) -> &str {
        "probe"
    }
    fn description(&self) -> &str {
        "Looks for its own start in the run's log."
    }
    fn input_schema(&self) -> serde_json::Value {
        json!({"type": "object"})
    }
    fn execute(self: Arc<Self>, _input: serde_json::Value, ctx: ToolContext) -> ToolStream {
        single_result(async move {
            let events = self.store.list_events(&ctx.run_id, None, 10_000).await;
            let stored = events.unwrap().iter().any(|e| {
                matches!(&e.kind, EventKind::ToolStart(ToolStartEvent { tool_use_id, .. })
                    if *tool_use_id == ctx.tool_use_id)
            });
            *self.found.lock().unwrap() = Some(stored);
            ToolResult::ok("looked")
        })
    }
}

#[tokio::test]
async fn a_specialists_tool_runs_only_once_its_start_is_stored() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let found = Arc::new(std::sync::Mutex::new(None));
    let probe = Arc::new(StartProbe {
        store: store.clone(),
        found: found.clone(),
    });
    let billing = AgentProfile::new("billing", "Invoices.").tool(probe);
    let handoffs = Handoffs::new("triage", vec!["billing".into()], vec![billing]).unwrap();
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("h1", "transfer_to_billing", json!({"reason": "invoice"})),
        ScriptedTurn::new().tool_call("p1", "probe", json!({})),
        ScriptedTurn::new().text("Billing: done."),
    ]);
    let runtime = ChatRuntime::new(store.clone(), provider).with_handoffs(handoffs);
    let chat_id = common::chat(&*store, &runtime, Default::default(), Default::default()).await;
    let outcome = runtime
        .send(&chat_id, Message::user_text("u1", "my invoice"))
        .finish()
        .await
        .unwrap();
    assert!(
        matches!(outcome.result.status, LoopStatus::Complete { .. }),
        "{:?}",
        outcome.result.status
    );
    assert_eq!(*found.lock().unwrap(), Some(true));
}
