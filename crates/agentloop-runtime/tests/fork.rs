//! Every step of a run is kept, and a run forks at any of them: the fork
//! has its own id, chat and log, its history is the original's up to the
//! step, it goes on to its own end, and the original is untouched.
//! Retention keeps the latest steps only, and a run keeping them is still
//! recovered after a crash. Memory, SQLite and PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_runtime::{ChatRuntime, RecoveryMode, RuntimeError};
use agentloop_storage::model::RunStatus;
use agentloop_storage::{SqliteStore, StepRetention, Store};
use agentloop_types::{LoopEvent, LoopStatus, Message, Role, RunPhase, Tool};
use serde_json::json;

use common::{Counter, Finish};

/// Steps of the original run: tool-call turns before its answer.
const CALLS: usize = 12;

fn counting(turns: usize, answer: &str) -> Arc<ScriptedProvider> {
    let mut script: Vec<ScriptedTurn> = (0..turns)
        .map(|i| {
            ScriptedTurn::new()
                .text(&format!("step {i}"))
                .tool_call(&format!("c{i}"), "count", json!({}))
                .usage(10, 1)
        })
        .collect();
    script.push(ScriptedTurn::new().text(answer).usage(10, 1));
    ScriptedProvider::new(script)
}

async fn messages(store: &dyn Store, chat_id: &str) -> Vec<Message> {
    store
        .list_messages(chat_id)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect()
}

async fn log(store: &dyn Store, run_id: &str) -> Vec<LoopEvent> {
    store.list_events(run_id, None, 10_000).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_forked_at_a_middle_step_keeps_its_prefix_and_goes_its_own_way() {
    for (name, store, _guard) in common::stores().await {
        let tools: Vec<Arc<dyn Tool>> = vec![Counter::new("count")];
        let runtime =
            ChatRuntime::new(store.clone(), counting(CALLS, "Counted.")).with_tools(tools.clone());
        let chat_id = common::chat(&*store, &runtime, Default::default(), Default::default()).await;
        let outcome = runtime
            .send(&chat_id, Message::user_text("u1", "count"))
            .finish()
            .await
            .unwrap();
        assert!(
            matches!(outcome.result.status, LoopStatus::Complete { .. }),
            "{name}"
        );
        let run_id = store.last_run(&chat_id).await.unwrap().unwrap().id;

        let steps = runtime.steps(&run_id).await.unwrap();
        assert!(
            steps.len() >= CALLS,
            "{name}: every step kept: {}",
            steps.len()
        );
        let seqs: Vec<u64> = steps.iter().map(|s| s.seq).collect();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{name}: {seqs:?}");
        let original_messages = messages(&*store, &chat_id).await;
        let original_log = log(&*store, &run_id).await;
        let original_steps = steps.clone();
        let original_record = store.get_run(&run_id).await.unwrap();

        // A step in the middle where the run calls the model next.
        let middle = steps
            .iter()
            .filter(|s| s.state.phase == RunPhase::CallModel)
            .nth(CALLS / 2)
            .unwrap()
            .clone();
        let prefix = usize::try_from(middle.message_count).unwrap();
        assert!(prefix > 2 && prefix < original_messages.len(), "{name}");

        // A seq that is no step is refused, naming the steps' range.
        let between = (seqs[0]..).find(|s| !seqs.contains(s)).unwrap();
        let refused = runtime.fork(&run_id, between, None).await.unwrap_err();
        assert!(
            matches!(refused, RuntimeError::NotAStep { .. }),
            "{name}: {refused:?}"
        );
        let said = refused.to_string();
        assert!(
            said.contains(&format!("from {} to {}", seqs[0], seqs[seqs.len() - 1])),
            "{name}: {said}"
        );

        let forked = runtime.fork(&run_id, middle.seq, None).await.unwrap();
        assert_ne!(forked.run_id, run_id);
        assert_ne!(forked.chat_id, chat_id);
        assert_eq!(
            messages(&*store, &forked.chat_id).await,
            original_messages[..prefix],
            "{name}: the fork's history is the original's up to the step"
        );
        let copied: Vec<LoopEvent> = original_log
            .iter()
            .filter(|e| e.seq <= middle.seq)
            .cloned()
            .collect();
        assert_eq!(log(&*store, &forked.run_id).await, copied, "{name}");
        // Not started yet: its chat continues it.
        assert!(runtime.has_interrupted_run(&forked.chat_id).await.unwrap());

        let fork_runtime = ChatRuntime::new(store.clone(), counting(2, "Forked and done."))
            .with_tools(tools.clone());
        let outcome = fork_runtime
            .continue_chat(&forked.chat_id)
            .await
            .unwrap()
            .expect("the fork runs")
            .outcome()
            .await
            .unwrap();
        assert!(
            matches!(outcome.result.status, LoopStatus::Complete { .. }),
            "{name}"
        );
        let fork_messages = messages(&*store, &forked.chat_id).await;
        assert_eq!(
            fork_messages[..prefix],
            original_messages[..prefix],
            "{name}"
        );
        assert_eq!(fork_messages.len(), prefix + 2 * 2 + 1, "{name}");
        assert_eq!(fork_messages.last().unwrap().text(), "Forked and done.");
        let fork_log = log(&*store, &forked.run_id).await;
        assert_eq!(fork_log[..copied.len()], copied[..], "{name}");
        assert!(
            fork_log.windows(2).all(|w| w[0].seq + 1 == w[1].seq),
            "{name}: the fork's own events continue its log"
        );
        let runs = store.list_runs(&forked.chat_id).await.unwrap();
        assert_eq!(runs.len(), 1, "{name}: the fork ran in its own record");
        assert_eq!(runs[0].status, RunStatus::Completed, "{name}");
        // The fork's steps: from where it started (its first state is the
        // step's), then its own.
        let fork_steps = runtime.steps(&forked.run_id).await.unwrap();
        assert!(fork_steps.iter().all(|s| s.seq >= middle.seq), "{name}");
        assert!(fork_steps.iter().any(|s| s.seq > middle.seq), "{name}");
        if let Some(first) = fork_steps.iter().find(|s| s.seq == middle.seq) {
            assert_eq!(first.message_count, middle.message_count, "{name}");
        }

        // The original is untouched.
        assert_eq!(
            messages(&*store, &chat_id).await,
            original_messages,
            "{name}"
        );
        assert_eq!(log(&*store, &run_id).await, original_log, "{name}");
        assert_eq!(
            runtime.steps(&run_id).await.unwrap(),
            original_steps,
            "{name}"
        );
        assert_eq!(
            store.get_run(&run_id).await.unwrap(),
            original_record,
            "{name}"
        );

        // With a prompt: the person's message follows the step's history.
        let prompted = runtime
            .fork(&run_id, middle.seq, Some("count once more, then stop"))
            .await
            .unwrap();
        let with_prompt = messages(&*store, &prompted.chat_id).await;
        assert_eq!(with_prompt.len(), prefix + 1, "{name}");
        assert_eq!(with_prompt[prefix].role, Role::User);
        assert_eq!(with_prompt[prefix].text(), "count once more, then stop");
        let outcome = ChatRuntime::new(store.clone(), counting(1, "Once more."))
            .with_tools(tools.clone())
            .run_fork(&prompted.run_id)
            .await
            .unwrap()
            .outcome()
            .await
            .unwrap();
        assert!(
            matches!(outcome.result.status, LoopStatus::Complete { .. }),
            "{name}"
        );
        assert!(
            runtime.run_fork(&prompted.run_id).await.is_err(),
            "{name}: a fork starts once"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_keeps_the_latest_steps_or_none() {
    for (name, store, _guard) in common::stores().await {
        for (retention, kept) in [
            (StepRetention::Last(NonZeroU32::new(3).unwrap()), Some(3)),
            (StepRetention::Off, Some(0)),
        ] {
            let runtime = ChatRuntime::new(store.clone(), counting(6, "Counted."))
                .with_tools([Counter::new("count") as Arc<dyn Tool>])
                .with_step_retention(retention);
            let chat_id =
                common::chat(&*store, &runtime, Default::default(), Default::default()).await;
            let all = ChatRuntime::new(store.clone(), counting(6, "Counted."))
                .with_tools([Counter::new("count") as Arc<dyn Tool>]);
            let all_chat =
                common::chat(&*store, &all, Default::default(), Default::default()).await;
            runtime
                .send(&chat_id, Message::user_text("u1", "count"))
                .finish()
                .await
                .unwrap();
            all.send(&all_chat, Message::user_text("u1", "count"))
                .finish()
                .await
                .unwrap();
            let run_id = store.last_run(&chat_id).await.unwrap().unwrap().id;
            let every = runtime
                .steps(&store.last_run(&all_chat).await.unwrap().unwrap().id)
                .await
                .unwrap();
            let steps = runtime.steps(&run_id).await.unwrap();
            assert_eq!(Some(steps.len()), kept, "{name} {retention}");
            let latest: Vec<u64> = every
                .iter()
                .rev()
                .take(steps.len())
                .rev()
                .map(|s| s.seq)
                .collect();
            let seqs: Vec<u64> = steps.iter().map(|s| s.seq).collect();
            assert_eq!(seqs, latest, "{name} {retention}: the latest are kept");
        }
    }
}

const DB_VAR: &str = "AGENTLOOP_FORK_CRASH_DB";
const CHAT_VAR: &str = "AGENTLOOP_FORK_CRASH_CHAT";
const MARKER_VAR: &str = "AGENTLOOP_FORK_CRASH_MARKER";

/// Keeps two steps.
fn two() -> StepRetention {
    StepRetention::Last(NonZeroU32::new(2).unwrap())
}

fn crash_tools(marker: &Path) -> Vec<Arc<dyn Tool>> {
    let counter = |name, sleep_ms| -> Arc<dyn Tool> {
        Arc::new(Counter {
            name,
            calls: Default::default(),
            sleep_ms,
            marker: Some(marker.to_owned()),
        })
    };
    vec![counter("count", 0), counter("slow", 600_000)]
}

/// The child: counts four times, then calls the slow tool, and is killed
/// there.
#[tokio::test]
#[ignore = "run by a_run_keeping_its_latest_steps_resumes_after_a_crash in a child process"]
async fn child_entry() {
    let (Ok(db), Ok(chat_id), Ok(marker)) = (
        std::env::var(DB_VAR),
        std::env::var(CHAT_VAR),
        std::env::var(MARKER_VAR),
    ) else {
        return;
    };
    let store: Arc<dyn Store> = Arc::new(SqliteStore::connect(&db).await.unwrap());
    let mut script: Vec<ScriptedTurn> = (0..4)
        .map(|i| {
            ScriptedTurn::new()
                .tool_call(&format!("c{i}"), "count", json!({}))
                .usage(10, 1)
        })
        .collect();
    script.push(
        ScriptedTurn::new()
            .tool_call("s1", "slow", json!({}))
            .usage(10, 1),
    );
    script.push(ScriptedTurn::new().text("unreachable"));
    let runtime = ChatRuntime::new(store, ScriptedProvider::new(script))
        .with_tools(crash_tools(Path::new(&marker)))
        .with_step_retention(two());
    let _ = runtime
        .send(&chat_id, Message::user_text("u1", "count, then go slow"))
        .finish()
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_keeping_its_latest_steps_resumes_after_a_crash() {
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
    // The person's message, four calls with their results, the slow call.
    common::crash::kill_in_slow_call(child, &*store, &chat_id, 10, &marker).await;
    drop(store);

    let store: Arc<dyn Store> = Arc::new(SqliteStore::connect(&db_str).await.unwrap());
    let run_id = store.last_run(&chat_id).await.unwrap().unwrap().id;
    let steps = store.list_steps(&run_id).await.unwrap();
    assert_eq!(steps.len(), 2, "the latest two steps are kept");
    let provider = ScriptedProvider::new([ScriptedTurn::new().text("All done.").usage(5, 1)]);
    let runtime = ChatRuntime::new(store.clone(), provider)
        .with_tools(crash_tools(&marker))
        .with_step_retention(two());
    let recovered = runtime.recover(RecoveryMode::SingleProcess).await.unwrap();
    assert_eq!(recovered.len(), 1);
    let outcome = runtime
        .continue_chat(&chat_id)
        .await
        .unwrap()
        .expect("the run goes on")
        .outcome()
        .await
        .unwrap();
    assert!(matches!(outcome.result.status, LoopStatus::Complete { .. }));
    let last = messages(&*store, &chat_id).await;
    assert_eq!(last.last().unwrap().text(), "All done.");
    let lines = common::crash::marker_lines(&marker);
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("count")).count(),
        4,
        "no committed call ran again: {lines:?}"
    );
    // The run kept two steps, and so does the run that continued it.
    assert_eq!(store.list_steps(&run_id).await.unwrap(), steps);
    let continued = store.last_run(&chat_id).await.unwrap().unwrap().id;
    assert!(store.list_steps(&continued).await.unwrap().len() <= 2);
}

fn strategy_call(id: &str, name: &str, input: serde_json::Value) -> ScriptedTurn {
    ScriptedTurn::new().tool_call(id, name, input).usage(10, 2)
}

/// A react run (three rounds of counting) or a plan-and-execute run (a
/// plan of three counting steps), with answers to spare.
fn strategy_script(name: &str, prefix: &str) -> Vec<ScriptedTurn> {
    let mut turns = Vec::new();
    for round in 0..3 {
        let id = |what: &str| format!("{prefix}{what}{round}");
        match name {
            "react" => {
                turns.push(strategy_call(
                    &id("r"),
                    "agent_decide_next",
                    json!({"message": "Count."}),
                ));
                turns.push(strategy_call(&id("c"), "count", json!({})));
                turns.push(strategy_call(
                    &id("o"),
                    "agent_observe_decide",
                    json!({"message": "Counted.", "should_continue": round < 2}),
                ));
            }
            _ => {
                if round == 0 {
                    turns.push(strategy_call(
                        &id("p"),
                        "agent_plan",
                        json!({"steps": ["Count", "Count again", "Count once more"]}),
                    ));
                }
                turns.push(strategy_call(&id("c"), "count", json!({})));
                turns.push(ScriptedTurn::new().text("Counted.").usage(10, 2));
            }
        }
    }
    turns.extend((0..4).map(|_| ScriptedTurn::new().text("All counted.").usage(10, 2)));
    turns
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_of_other_strategies_fork_in_their_strategy() {
    use agentloop_engine::LoopStrategy;
    use agentloop_engine::strategy::{PlanExecuteStrategy, ReactStrategy};
    for name in ["react", "plan_execute"] {
        let strategy = || -> Arc<dyn LoopStrategy> {
            match name {
                "react" => Arc::new(ReactStrategy::default()),
                _ => Arc::new(PlanExecuteStrategy::default()),
            }
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let store: Arc<dyn Store> =
            Arc::new(SqliteStore::connect(path.to_str().unwrap()).await.unwrap());
        let tools: Vec<Arc<dyn Tool>> = vec![Counter::new("count")];
        let runtime = ChatRuntime::new(
            store.clone(),
            ScriptedProvider::new(strategy_script(name, "a")),
        )
        .with_tools(tools.clone())
        .with_strategy(strategy());
        let chat_id = common::chat(&*store, &runtime, Default::default(), Default::default()).await;
        let outcome = runtime
            .send(&chat_id, Message::user_text("u1", "count three times"))
            .finish()
            .await
            .unwrap();
        assert!(
            matches!(outcome.result.status, LoopStatus::Complete { .. }),
            "{name}: {:?}",
            outcome.result.status
        );
        let run_id = store.last_run(&chat_id).await.unwrap().unwrap().id;
        let steps = runtime.steps(&run_id).await.unwrap();
        assert!(steps.len() >= 4, "{name}: {}", steps.len());
        let middle = steps[steps.len() / 2].clone();
        let original = messages(&*store, &chat_id).await;
        let forked = runtime.fork(&run_id, middle.seq, None).await.unwrap();
        let prefix = usize::try_from(middle.message_count).unwrap();
        assert_eq!(
            messages(&*store, &forked.chat_id).await,
            original[..prefix],
            "{name}"
        );
        let record = store.get_run(&forked.run_id).await.unwrap();
        assert_eq!(
            record.state.as_ref().unwrap().strategy,
            middle.state.strategy,
            "{name}: the fork goes on in the step's strategy and phase"
        );
        let outcome = ChatRuntime::new(
            store.clone(),
            ScriptedProvider::new(strategy_script(name, "b")),
        )
        .with_tools(tools.clone())
        .with_strategy(strategy())
        .run_fork(&forked.run_id)
        .await
        .unwrap()
        .outcome()
        .await
        .unwrap();
        assert!(
            matches!(outcome.result.status, LoopStatus::Complete { .. }),
            "{name}: {:?}",
            outcome.result.status
        );
        let after = messages(&*store, &forked.chat_id).await;
        assert_eq!(after[..prefix], original[..prefix], "{name}");
        assert!(after.len() > prefix, "{name}");
        assert_eq!(messages(&*store, &chat_id).await, original, "{name}");
    }
}
