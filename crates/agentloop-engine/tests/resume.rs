//! `engine::resume`, tested directly: a run of every built-in strategy,
//! resumed from any of its checkpoints, ends exactly as the uninterrupted
//! run did, and no tool call runs twice; `engine::settle` takes a stored
//! run to its next I/O without running anything.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agentloop_types::{
    AgentStartEvent, FinishedEvent, StreamingStartEvent, TokensConsumedEvent, ToolEndEvent,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::strategy::{
    LlmOnlyStrategy, NativeStrategy, PlanExecuteStrategy, ReactStrategy, ToolFirstStrategy,
};
use agentloop_engine::{
    LoopStrategy, OfferedTool, RunDeps, RunItem, StepError, collect, resume, settle,
};
use agentloop_types::{
    EventKind, LoopError, LoopOptions, LoopResult, LoopStatus, RunPhase, RunState, TokenTotals,
    Tool, ToolResult, single_result, validate_history,
};
use futures::StreamExt;
use serde_json::json;

use common::user;

/// The invariants of a resumed run: increasing `seq`, one terminal event,
/// last; a valid history; totals are `prior` plus this stream's, when
/// given (a plan step's nested run keeps its own until it ends).
fn check_resumed(events: &[agentloop_types::LoopEvent], prior: Option<TokenTotals>) -> LoopResult {
    assert!(events.windows(2).all(|p| p[0].seq < p[1].seq));
    let terminal = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Finished(FinishedEvent { .. })) && e.path.is_root())
        .count();
    assert_eq!(terminal, 1, "one terminal event");
    let result = events.last().unwrap().root_result().expect("last").clone();
    validate_history(&result.messages, false).expect("every call has its result");
    let consumed: TokenTotals = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TokensConsumed(TokensConsumedEvent { tokens }) => Some(*tokens),
            _ => None,
        })
        .sum();
    if let Some(prior) = prior {
        assert_eq!(prior + consumed, result.tokens, "totals carry over");
    }
    result
}

/// `echo {text}`, counting its runs.
fn counting_echo(runs: Arc<AtomicUsize>) -> Arc<dyn Tool> {
    common::tool("echo", move |input, _| {
        runs.fetch_add(1, Ordering::SeqCst);
        let text = input["text"].as_str().unwrap_or_default().to_owned();
        single_result(async move { ToolResult::ok(text) })
    })
}

fn call(id: &str, name: &str, input: serde_json::Value) -> ScriptedTurn {
    ScriptedTurn::new().tool_call(id, name, input).usage(10, 2)
}

fn text(t: &str) -> ScriptedTurn {
    ScriptedTurn::new().text(t).usage(7, 3)
}

fn echo(id: &str, t: &str) -> ScriptedTurn {
    call(id, "echo", json!({ "text": t }))
}

/// Each strategy with a script that takes several steps and tool calls.
fn cases() -> Vec<(Arc<dyn LoopStrategy>, Vec<ScriptedTurn>)> {
    vec![
        (
            Arc::new(NativeStrategy::default()),
            vec![
                echo("t1", "a"),
                ScriptedTurn::new()
                    .tool_call("t2", "echo", json!({"text": "b"}))
                    .tool_call("t3", "echo", json!({"text": "c"}))
                    .usage(4, 4),
                text("done"),
            ],
        ),
        (
            Arc::new(ReactStrategy::default()),
            vec![
                call("r1", "agent_decide_next", json!({"message": "echo a"})),
                echo("t1", "a"),
                call(
                    "o1",
                    "agent_observe_decide",
                    json!({"message": "a", "should_continue": true}),
                ),
                call("r2", "agent_decide_next", json!({"message": "echo b"})),
                echo("t2", "b"),
                call(
                    "o2",
                    "agent_observe_decide",
                    json!({"message": "b", "should_continue": false}),
                ),
                text("a and b"),
            ],
        ),
        (
            Arc::new(ToolFirstStrategy::default()),
            vec![echo("t1", "a"), text("a it is")],
        ),
        (Arc::new(LlmOnlyStrategy::default()), vec![text("hello")]),
        (
            Arc::new(PlanExecuteStrategy::default()),
            vec![
                call("p1", "agent_plan", json!({"steps": ["Echo a", "Echo b"]})),
                echo("t1", "a"),
                text("a done"),
                echo("t2", "b"),
                text("b done"),
                text("both done"),
            ],
        ),
    ]
}

fn deps(provider: Arc<ScriptedProvider>, runs: &Arc<AtomicUsize>) -> RunDeps {
    RunDeps::new(provider)
        .with_tools([counting_echo(runs.clone())])
        .with_run_id("run")
}

/// The items of a whole run, with its checkpoints.
async fn items(strategy: &dyn LoopStrategy, turns: Vec<ScriptedTurn>) -> (Vec<RunItem>, usize) {
    let runs = Arc::new(AtomicUsize::new(0));
    let stream = strategy.run(
        LoopOptions::default(),
        user("go"),
        deps(ScriptedProvider::new(turns), &runs),
    );
    let items = stream.with_checkpoints().collect::<Vec<_>>().await;
    (items, runs.load(Ordering::SeqCst))
}

fn result_of(items: &[RunItem]) -> LoopResult {
    items
        .iter()
        .find_map(|item| match item {
            RunItem::Event(event) => event.root_result().cloned(),
            RunItem::Checkpoint(_) => None,
        })
        .expect("a finished event")
}

#[tokio::test]
async fn every_strategy_resumes_from_every_checkpoint_to_the_same_end() {
    for (strategy, turns) in cases() {
        let name = strategy.name().to_owned();
        let (full, tool_runs) = items(strategy.as_ref(), turns.clone()).await;
        let expected = result_of(&full);
        assert!(
            matches!(expected.status, LoopStatus::Complete { .. }),
            "{name}: {:?}",
            expected.status
        );
        let checkpoints: Vec<usize> = full
            .iter()
            .enumerate()
            .filter_map(|(i, item)| matches!(item, RunItem::Checkpoint(_)).then_some(i))
            .collect();
        assert!(!checkpoints.is_empty(), "{name}: a checkpoint per step");

        for at in checkpoints {
            let RunItem::Checkpoint(state) = &full[at] else {
                unreachable!()
            };
            let before = &full[..at];
            let count = |f: fn(&EventKind) -> bool| {
                before
                    .iter()
                    .filter(|item| matches!(item, RunItem::Event(e) if f(&e.kind)))
                    .count()
            };
            // Model calls and tool runs completed before the checkpoint;
            // the rest of the script is what the resumed run still needs.
            let calls_done =
                count(|k| matches!(k, EventKind::StreamingStart(StreamingStartEvent { .. })));
            let tools_done = count(|k| matches!(k, EventKind::ToolEnd(ToolEndEvent { .. })));

            let stored: RunState =
                serde_json::from_str(&serde_json::to_string(state).unwrap()).unwrap();
            let prior = (name != "plan-and-execute").then_some(stored.totals);
            let runs = Arc::new(AtomicUsize::new(0));
            let provider = ScriptedProvider::new(turns[calls_done..].to_vec());
            let events = resume(
                LoopOptions::default(),
                stored,
                deps(provider.clone(), &runs),
            )
            .collect::<Vec<_>>()
            .await;
            let result = check_resumed(&events, prior);
            assert_eq!(result, expected, "{name}: resumed at item {at}");
            assert_eq!(provider.remaining(), 0, "{name}: every turn used once");
            assert_eq!(
                tools_done + runs.load(Ordering::SeqCst),
                tool_runs,
                "{name}: resumed at item {at}: no call runs twice"
            );
            assert!(
                !events
                    .iter()
                    .any(|e| matches!(e.kind, EventKind::AgentStart(AgentStartEvent { .. }))),
                "{name}: a resumed run does not start again"
            );
        }
    }
}

#[tokio::test]
async fn interrupted_calls_are_answered_not_run() {
    let strategy = ReactStrategy::default();
    let turns = vec![
        call("r1", "agent_decide_next", json!({"message": "echo a"})),
        echo("t1", "a"),
        call(
            "o1",
            "agent_observe_decide",
            json!({"message": "cut", "should_continue": false, "final_answer": "no echo"}),
        ),
    ];
    let (full, _) = items(&strategy, turns.clone()).await;
    let state = full
        .iter()
        .find_map(|item| match item {
            RunItem::Checkpoint(state) if matches!(state.phase, RunPhase::RunTools { .. }) => {
                Some(state.clone())
            }
            _ => None,
        })
        .expect("a checkpoint with the act call pending");
    let mut state = state;
    state.interrupted_calls = vec!["t1".into()];
    let prior = state.totals;
    let runs = Arc::new(AtomicUsize::new(0));
    let provider = ScriptedProvider::new(turns[2..].to_vec());
    let events = resume(LoopOptions::default(), state, deps(provider, &runs))
        .collect::<Vec<_>>()
        .await;
    let result = check_resumed(&events, Some(prior));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "the interrupted call did not run"
    );
    let answered = result
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .find(|r| r.tool_use_id == "t1")
        .unwrap();
    assert!(answered.is_error && answered.content.contains("interrupted"));
    assert_eq!(result.final_text().as_deref(), Some("no echo"));
}

#[tokio::test]
async fn a_finished_state_is_not_restarted() {
    let (full, _) = items(&NativeStrategy::default(), vec![text("done")]).await;
    let mut state = full
        .iter()
        .find_map(|item| match item {
            RunItem::Checkpoint(state) => Some(state.clone()),
            RunItem::Event(_) => None,
        })
        .unwrap();
    state.phase = RunPhase::Finished;
    let provider = ScriptedProvider::new([text("again")]);
    let runs = Arc::new(AtomicUsize::new(0));
    let result = collect(resume(
        LoopOptions::default(),
        state,
        deps(provider.clone(), &runs),
    ))
    .await;
    assert!(matches!(
        result.status,
        LoopStatus::Error {
            error: LoopError::InvalidState { .. }
        }
    ));
    assert!(provider.requests().is_empty(), "no model call");
}

/// The react run of [`interrupted_calls_are_answered_not_run`], stored
/// while its act call ran, with that call marked interrupted.
async fn interrupted_act_step() -> (RunState, Vec<ScriptedTurn>) {
    let turns = vec![
        call("r1", "agent_decide_next", json!({"message": "echo a"})),
        echo("t1", "a"),
        call(
            "o1",
            "agent_observe_decide",
            json!({"message": "cut", "should_continue": false, "final_answer": "no echo"}),
        ),
    ];
    let (full, _) = items(&ReactStrategy::default(), turns.clone()).await;
    let mut state = full
        .iter()
        .find_map(|item| match item {
            RunItem::Checkpoint(state) if matches!(state.phase, RunPhase::RunTools { .. }) => {
                Some(state.clone())
            }
            _ => None,
        })
        .expect("a checkpoint with the act call pending");
    state.interrupted_calls = vec!["t1".into()];
    (state, turns)
}

#[tokio::test]
async fn settle_answers_interrupted_calls_and_stops_before_the_model() {
    let (state, turns) = interrupted_act_step().await;
    let runs = Arc::new(AtomicUsize::new(0));
    let echo_tool = counting_echo(runs.clone());
    let settled = settle(
        LoopOptions::default(),
        state,
        [OfferedTool::of(echo_tool.as_ref())],
    );
    assert_eq!(settled.refused, None);
    assert_eq!(runs.load(Ordering::SeqCst), 0, "nothing ran");
    assert!(
        !settled
            .events
            .iter()
            .any(|e| matches!(e, EventKind::ToolStart(_) | EventKind::StreamingStart(_))),
        "no tool started and no model turn streamed: {:?}",
        settled.events
    );
    assert!(
        !settled
            .events
            .iter()
            .any(|e| matches!(e, EventKind::Finished(_))),
        "the run is not over"
    );
    let answered = settled
        .state
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .find(|r| r.tool_use_id == "t1")
        .expect("the interrupted call has its result in the state");
    assert!(answered.is_error && answered.content.contains("interrupted"));

    // The settled state goes on with the observe call, in place.
    let provider = ScriptedProvider::new(turns[2..].to_vec());
    let events = resume(
        LoopOptions::default(),
        settled.state,
        deps(provider.clone(), &runs),
    )
    .collect::<Vec<_>>()
    .await;
    let result = check_resumed(&events, None);
    assert_eq!(result.final_text().as_deref(), Some("no echo"));
    assert_eq!(provider.remaining(), 0, "only the observe call was made");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "the interrupted call never ran"
    );
}

#[tokio::test]
async fn settle_steps_nothing_of_a_finished_state() {
    let (full, _) = items(&NativeStrategy::default(), vec![text("done")]).await;
    let mut state = full
        .iter()
        .find_map(|item| match item {
            RunItem::Checkpoint(state) => Some(state.clone()),
            RunItem::Event(_) => None,
        })
        .unwrap();
    state.phase = RunPhase::Finished;
    let settled = settle(
        LoopOptions::default(),
        state.clone(),
        Vec::<OfferedTool>::new(),
    );
    assert_eq!(settled.refused, Some(StepError::Finished));
    assert!(settled.events.is_empty(), "{:?}", settled.events);
    assert_eq!(settled.state.messages, state.messages);
}
