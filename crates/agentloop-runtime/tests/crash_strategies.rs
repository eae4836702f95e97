//! Durable resume for strategies: a child process runs a react or a
//! plan-and-execute chat on a SQLite file and is killed with SIGKILL while
//! a tool of its second step runs. The file is reopened, the run is
//! recovered and continued through `engine::resume` from its stored state:
//! in the same strategy and phase, with no committed tool run again (tool
//! executions are counted in a marker file).
//!
//! The child is this test binary again, running the ignored `child_entry`
//! test with its parameters in the environment.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agentloop_types::{
    AgentCompletionEvent, AgentObserveEvent, AgentReasonEvent, AgentStartEvent, AgentTurnStartEvent,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentloop_engine::LoopStrategy;
use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::strategy::{PlanExecuteStrategy, ReactStrategy};
use agentloop_runtime::{ChatRuntime, RecoveryMode};
use agentloop_storage::model::RunStatus;
use agentloop_storage::{SqliteStore, Store};
use agentloop_types::{EventKind, LoopStatus, Message, Role, Tool};
use serde_json::json;

use common::Counter;
use common::Finish;

const DB_VAR: &str = "AGENTLOOP_STRATEGY_CRASH_DB";
const CHAT_VAR: &str = "AGENTLOOP_STRATEGY_CRASH_CHAT";
const MARKER_VAR: &str = "AGENTLOOP_STRATEGY_CRASH_MARKER";
const STRATEGY_VAR: &str = "AGENTLOOP_STRATEGY_CRASH_STRATEGY";

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

fn strategy(name: &str) -> Arc<dyn LoopStrategy> {
    match name {
        "react" => Arc::new(ReactStrategy::default()),
        _ => Arc::new(PlanExecuteStrategy::default()),
    }
}

fn call(id: &str, name: &str, input: serde_json::Value) -> ScriptedTurn {
    ScriptedTurn::new()
        .delay_ms(20)
        .tool_call(id, name, input)
        .usage(10, 2)
}

/// The child's script: a first step that counts, a second that goes slow.
fn script(name: &str) -> Vec<ScriptedTurn> {
    match name {
        "react" => vec![
            call(
                "r1",
                "agent_decide_next",
                json!({"message": "Count first."}),
            ),
            call("c1", "count", json!({})),
            call(
                "o1",
                "agent_observe_decide",
                json!({"message": "Counted.", "should_continue": true}),
            ),
            call(
                "r2",
                "agent_decide_next",
                json!({"message": "Now go slow."}),
            ),
            call("s1", "slow", json!({})),
            ScriptedTurn::new().text("unreachable").usage(1, 1),
        ],
        _ => vec![
            call("p1", "agent_plan", json!({"steps": ["Count", "Go slow"]})),
            call("c1", "count", json!({})),
            ScriptedTurn::new()
                .delay_ms(20)
                .text("Counted.")
                .usage(10, 2),
            call("s1", "slow", json!({})),
            ScriptedTurn::new().text("unreachable").usage(1, 1),
        ],
    }
}

/// The child: runs until it is killed.
#[tokio::test]
#[ignore = "run by the crash tests in a child process"]
async fn child_entry() {
    let (Ok(db), Ok(chat_id), Ok(marker), Ok(name)) = (
        std::env::var(DB_VAR),
        std::env::var(CHAT_VAR),
        std::env::var(MARKER_VAR),
        std::env::var(STRATEGY_VAR),
    ) else {
        return;
    };
    let store: Arc<dyn Store> = Arc::new(SqliteStore::connect(&db).await.unwrap());
    let runtime = ChatRuntime::new(store, ScriptedProvider::new(script(&name)))
        .with_tools(tools(Path::new(&marker)))
        .with_strategy(strategy(&name));
    let _ = runtime
        .send(&chat_id, Message::user_text("u1", "count, then go slow"))
        .finish()
        .await;
}

/// What the parent finds after the crash and the continuation.
struct Crashed {
    store: Arc<dyn Store>,
    chat_id: String,
    marker: PathBuf,
    runtime: ChatRuntime,
    _dir: tempfile::TempDir,
}

/// Runs the child with `name` until the slow tool has started and
/// `committed` messages are stored, kills it, and recovers the run with a
/// runtime scripted with `after`.
async fn crash(
    name: &str,
    committed: usize,
    after: Vec<ScriptedTurn>,
) -> (Crashed, Arc<ScriptedProvider>) {
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
        (STRATEGY_VAR, name),
    ]);

    common::crash::kill_in_slow_call(child, &*store, &chat_id, committed, &marker).await;
    drop(store);

    // Reopen the file as a new process would.
    let store: Arc<dyn Store> = Arc::new(SqliteStore::connect(&db_str).await.unwrap());
    let runs = store.list_runs(&chat_id).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, RunStatus::Running);
    let state = runs[0].state.as_ref().expect("the run's state was stored");
    assert!(state.strategy.is_some(), "the strategy phase was stored");

    let provider = ScriptedProvider::new(after);
    let runtime = ChatRuntime::new(store.clone(), provider.clone())
        .with_tools(tools(&marker))
        .with_strategy(strategy(name));
    let recovered = runtime.recover(RecoveryMode::SingleProcess).await.unwrap();
    assert_eq!(recovered.len(), 1);
    assert_eq!(recovered[0].closed_calls.len(), 1);
    assert_eq!(recovered[0].closed_calls[0].tool_use_id, "s1");
    assert!(recovered[0].closed_calls[0].started);
    let stored = store.list_messages(&chat_id).await.unwrap();
    let closed = stored
        .last()
        .unwrap()
        .message
        .tool_results()
        .next()
        .unwrap()
        .clone();
    assert_eq!(closed.tool_use_id, "s1");
    assert!(
        closed.is_error && closed.content.contains("`slow`"),
        "{closed:?}"
    );
    assert!(
        provider.requests().is_empty(),
        "recovery makes no model call"
    );
    (
        Crashed {
            store,
            chat_id,
            marker,
            runtime,
            _dir: dir,
        },
        provider,
    )
}

impl Crashed {
    /// Continues the chat; returns the events seen.
    async fn continue_run(&self) -> (agentloop_types::LoopResult, Vec<EventKind>) {
        let run = self
            .runtime
            .continue_chat(&self.chat_id)
            .await
            .unwrap()
            .expect("there is a run to continue");
        let (events, result) = common::drain(run).await;
        (result, events.into_iter().map(|e| e.kind).collect())
    }

    fn assert_each_tool_ran_once(&self) {
        let lines = common::crash::marker_lines(&self.marker);
        assert_eq!(
            lines.iter().filter(|l| l.starts_with("count")).count(),
            1,
            "a tool whose result was committed never runs again: {lines:?}"
        );
        assert_eq!(
            lines.iter().filter(|l| l.starts_with("slow")).count(),
            1,
            "a call that had started never runs again: {lines:?}"
        );
    }
}

fn agent_events(events: &[EventKind]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            EventKind::AgentStart(AgentStartEvent { .. }) => Some("agent_start".to_owned()),
            EventKind::AgentTurnStart(AgentTurnStartEvent { step }) => {
                Some(format!("agent_turn_start {step}"))
            }
            EventKind::AgentReason(AgentReasonEvent { step, .. }) => {
                Some(format!("agent_reason {step}"))
            }
            EventKind::AgentObserve(AgentObserveEvent { step, .. }) => {
                Some(format!("agent_observe {step}"))
            }
            EventKind::AgentCompletion(AgentCompletionEvent { steps, .. }) => {
                Some(format!("agent_completion {steps}"))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn react_killed_mid_step_resumes_from_its_stored_phase() {
    // Committed before the kill: the user message, the first act turn and
    // its result, the second act turn.
    let (crashed, provider) = crash(
        "react",
        4,
        vec![
            ScriptedTurn::new()
                .tool_call(
                    "o2",
                    "agent_observe_decide",
                    json!({"message": "The slow tool was interrupted.", "should_continue": false, "final_answer": "Counted once."}),
                )
                .usage(5, 1),
        ],
    )
    .await;
    let (result, events) = crashed.continue_run().await;
    assert!(matches!(result.status, LoopStatus::Complete { .. }));
    assert_eq!(result.final_text().as_deref(), Some("Counted once."));

    // It went on with step 2's observe call: no new start, no new reason.
    assert_eq!(
        agent_events(&events),
        ["agent_observe 2", "agent_completion 2"]
    );
    let requests = provider.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0].messages;
    assert!(sent.last().unwrap().id.ends_with("-observe-prompt"));
    assert_eq!(requests[0].tools[0].name, "agent_observe_decide");
    crashed.assert_each_tool_ran_once();

    let messages = crashed.store.list_messages(&crashed.chat_id).await.unwrap();
    assert_eq!(messages.len(), 6);
    assert_eq!(messages[5].message.role, Role::Assistant);
    assert_eq!(messages[5].message.text(), "Counted once.");
    let runs = crashed.store.list_runs(&crashed.chat_id).await.unwrap();
    assert_eq!(runs.len(), 2, "the continuation is a run of its own");
    assert_eq!(runs[1].status, RunStatus::Completed);
    assert!(
        crashed
            .runtime
            .continue_chat(&crashed.chat_id)
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_and_execute_killed_mid_step_resumes_inside_the_step() {
    // Committed before the kill: the user message, step 1 (its prompt, the
    // call, the result, the answer), step 2's prompt and its call.
    let (crashed, provider) = crash(
        "plan-and-execute",
        7,
        vec![
            ScriptedTurn::new()
                .text("The slow step was cut short.")
                .usage(5, 1),
            ScriptedTurn::new().text("Counted once.").usage(5, 1),
        ],
    )
    .await;
    let (result, events) = crashed.continue_run().await;
    assert!(matches!(result.status, LoopStatus::Complete { .. }));
    assert_eq!(result.final_text().as_deref(), Some("Counted once."));

    // Step 2's nested run went on, then the summary: no new plan.
    assert_eq!(
        agent_events(&events),
        ["agent_observe 2", "agent_completion 2"]
    );
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    let inner = &requests[0].messages;
    assert_eq!(
        inner
            .last()
            .unwrap()
            .tool_results()
            .next()
            .unwrap()
            .tool_use_id,
        "s1",
        "the nested run sends the interrupted result back"
    );
    assert!(requests[0].tools.iter().any(|t| t.name == "slow"));
    assert!(
        requests[1]
            .messages
            .last()
            .unwrap()
            .id
            .ends_with("-final-prompt")
    );
    crashed.assert_each_tool_ran_once();

    let messages = crashed.store.list_messages(&crashed.chat_id).await.unwrap();
    let texts: Vec<String> = messages.iter().map(|m| m.message.text()).collect();
    assert_eq!(
        texts[texts.len() - 2..],
        ["The slow step was cut short.", "Counted once."]
    );
    assert!(
        messages[7].message.id.ends_with("-step2-2"),
        "the interrupted result keeps the nested run's ids: {}",
        messages[7].message.id
    );
}
