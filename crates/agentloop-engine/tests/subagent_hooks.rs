//! The `before_subagent` and `after_subagent` hook points: every decision
//! at both, pinned as readable event snapshots (the child run's events
//! nest under the call); the order against the tool-call points; a start
//! held for a person; runs resumed from every checkpoint, and from the one
//! taken while a `before_subagent` step was in flight, never ask a hook
//! twice for a decision they have.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::{RunDeps, RunItem, collect, decide, resume, run};
use agentloop_types::transcript::render_events;
use agentloop_types::{
    Decision, EventKind, Hook, HookDecision, HookInput, HookPoint, LoopEvent, LoopOptions,
    LoopResult, RunState, Tool, ToolContext, ToolStream, hook_fn,
};
use common::*;
use futures::StreamExt;
use serde_json::{Value, json};

/// What a test hook was asked, in order.
type Asked = Arc<Mutex<Vec<HookInput>>>;

/// A hook at `points` answering `decide(input)`, recording what it was
/// asked.
fn recording(
    name: &str,
    points: &[HookPoint],
    decide: impl Fn(&HookInput) -> HookDecision + Send + Sync + 'static,
) -> (Arc<dyn Hook>, Asked) {
    let asked: Asked = Arc::default();
    let log = asked.clone();
    let decide = Arc::new(decide);
    let hook = hook_fn(name, points.iter().copied(), move |input: HookInput| {
        log.lock().unwrap().push(input.clone());
        let decision = decide(&input);
        async move { Ok(decision) }
    });
    (hook, asked)
}

/// The engine tests' child-agent tool (a child loop answering "child
/// answer" over the task it is given), marked as running a sub-agent.
struct Subagent(Arc<dyn Tool>);

impl Tool for Subagent {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn description(&self) -> &str {
        self.0.description()
    }
    fn input_schema(&self) -> Value {
        self.0.input_schema()
    }
    fn runs_subagent(&self) -> bool {
        true
    }
    fn execute(self: Arc<Self>, input: Value, context: ToolContext) -> ToolStream {
        Arc::clone(&self.0).execute(input, context)
    }
}

fn subagent() -> Arc<dyn Tool> {
    Arc::new(Subagent(child_agent(vec![
        ScriptedTurn::new().text("child answer"),
    ])))
}

fn deps(provider: &Arc<ScriptedProvider>, hooks: &[Arc<dyn Hook>]) -> RunDeps {
    deps_with_hooks(provider, vec![echo(), subagent()], hooks)
}

async fn events_of(provider: &Arc<ScriptedProvider>, hooks: &[Arc<dyn Hook>]) -> Vec<LoopEvent> {
    run(LoopOptions::default(), user("go"), deps(provider, hooks))
        .collect()
        .await
}

fn snapshot(name: &str, events: &[LoopEvent]) -> LoopResult {
    let result = check_invariants(events);
    insta::assert_snapshot!(name, render_events(events));
    result
}

fn agent_turn(id: &str, task: &str) -> ScriptedTurn {
    ScriptedTurn::new().tool_call(id, "agent", json!({ "task": task }))
}

/// Whether a child run of call `id` emitted anything.
fn child_ran(events: &[LoopEvent], id: &str) -> bool {
    events
        .iter()
        .any(|e| e.path.0.first().is_some_and(|first| first == id))
}

/// `(point, call id)` of each moment asked.
fn moments(asked: &Asked) -> Vec<(&'static str, String)> {
    asked
        .lock()
        .unwrap()
        .iter()
        .map(|i| (i.point().name(), i.tool_use_id().unwrap_or("").to_owned()))
        .collect()
}

#[tokio::test]
async fn subagent_points_follow_the_tool_call_points_and_only_for_sub_agents() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("e1", "echo", json!({"text": "a"})),
        agent_turn("s1", "find the notes"),
        ScriptedTurn::new().text("ok"),
    ]);
    let (hook, asked) = recording("watch", &HookPoint::ALL, |_| HookDecision::Pass);
    let events = events_of(&provider, &[hook]).await;
    let result = check_invariants(&events);
    assert_eq!(result.status.name(), "complete");
    let tool_moments: Vec<(&str, String)> = moments(&asked)
        .into_iter()
        .filter(|(_, id)| !id.is_empty())
        .collect();
    let expected = [
        ("before_tool_call", "e1"),
        ("after_tool_call", "e1"),
        ("before_tool_call", "s1"),
        ("before_subagent", "s1"),
        ("after_tool_call", "s1"),
        ("after_subagent", "s1"),
    ]
    .map(|(p, id)| (p, id.to_owned()));
    assert_eq!(tool_moments, expected);
    let asked = asked.lock().unwrap();
    assert!(asked.iter().any(|i| matches!(
        i,
        HookInput::BeforeSubagent { tool, arguments, run_id, .. }
            if tool == "agent" && arguments["task"] == "find the notes" && run_id == "run"
    )));
    assert!(asked.iter().any(|i| matches!(
        i,
        HookInput::AfterSubagent { result, is_error: false, .. } if result == "child answer"
    )));
}

/// Three sub-agent calls, one per turn, then the answer.
fn three_calls() -> Vec<ScriptedTurn> {
    vec![
        agent_turn("s1", "delete the archive"),
        agent_turn("s2", "summarise raw notes"),
        agent_turn("s3", "list the files"),
        ScriptedTurn::new().text("done"),
    ]
}

/// `before_subagent`: blocks `s1`, rewrites `s2`'s task, adds context to
/// `s3`.
fn before_decisions() -> (Arc<dyn Hook>, Asked) {
    recording(
        "subagent-policy",
        &[HookPoint::BeforeSubagent],
        |input| match input.tool_use_id() {
            Some("s1") => HookDecision::Block {
                reason: "no deleting sub-agents".into(),
            },
            Some("s2") => HookDecision::Rewrite {
                arguments: json!({"task": "summarise the cleaned notes"}),
            },
            Some("s3") => HookDecision::AddContext {
                text: "(the sub-agent had read-only tools)".into(),
            },
            _ => HookDecision::Pass,
        },
    )
}

#[tokio::test]
async fn before_subagent_blocks_rewrites_and_adds_context() {
    let provider = ScriptedProvider::new(three_calls());
    let (hook, asked) = before_decisions();
    let events = events_of(&provider, &[hook]).await;
    let result = snapshot("subagent_before_decisions", &events);
    assert_eq!(result.status.name(), "complete");
    assert_eq!(asked.lock().unwrap().len(), 3);
    assert!(
        !child_ran(&events, "s1"),
        "a blocked sub-agent never starts"
    );
    assert!(
        !events.iter().any(|e| matches!(
            &e.kind,
            EventKind::ToolStart(start) if start.tool_use_id == "s1"
        )),
        "nor does its call"
    );
    assert_eq!(
        results_sent(&provider, 1),
        [(
            "Blocked by hook `subagent-policy`: no deleting sub-agents".to_owned(),
            true
        )]
    );
    // The rewritten task is what the sub-agent was started with.
    let started = events.iter().find_map(|e| match &e.kind {
        EventKind::ToolStart(start) if start.tool_use_id == "s2" => Some(start.input.value()),
        _ => None,
    });
    assert_eq!(
        started,
        Some(json!({"task": "summarise the cleaned notes"}))
    );
    assert_eq!(
        results_sent(&provider, 3)[1],
        ("child answer".into(), false)
    );
    assert_eq!(
        results_sent(&provider, 3)[2],
        (
            "child answer\n\n(the sub-agent had read-only tools)".into(),
            false
        )
    );
}

#[tokio::test]
async fn a_call_blocked_before_the_tool_call_is_not_asked_about_as_a_sub_agent() {
    let provider = ScriptedProvider::new([agent_turn("s1", "x"), ScriptedTurn::new().text("ok")]);
    let (hook, asked) = recording(
        "gate",
        &[
            HookPoint::BeforeToolCall,
            HookPoint::BeforeSubagent,
            HookPoint::AfterSubagent,
        ],
        |input| match input {
            HookInput::BeforeToolCall { .. } => HookDecision::Block {
                reason: "no".into(),
            },
            _ => HookDecision::Pass,
        },
    );
    let events = events_of(&provider, &[hook]).await;
    check_invariants(&events);
    assert_eq!(moments(&asked), [("before_tool_call", "s1".to_owned())]);
    assert!(!child_ran(&events, "s1"));
}

/// `after_subagent`: withholds `s1`'s result, replaces `s2`'s, annotates
/// `s3`'s.
fn after_decisions() -> (Arc<dyn Hook>, Asked) {
    recording(
        "subagent-review",
        &[HookPoint::AfterSubagent],
        |input| match input.tool_use_id() {
            Some("s1") => HookDecision::Block {
                reason: "the answer names a customer".into(),
            },
            Some("s2") => HookDecision::Replace {
                result: "The sub-agent found nothing useful.".into(),
                is_error: true,
            },
            Some("s3") => HookDecision::AddContext {
                text: "(checked by review)".into(),
            },
            _ => HookDecision::Pass,
        },
    )
}

#[tokio::test]
async fn after_subagent_blocks_replaces_and_adds_context() {
    let provider = ScriptedProvider::new(three_calls());
    let (hook, asked) = after_decisions();
    let events = events_of(&provider, &[hook]).await;
    let result = snapshot("subagent_after_decisions", &events);
    assert_eq!(result.status.name(), "complete");
    assert_eq!(asked.lock().unwrap().len(), 3);
    assert!(
        child_ran(&events, "s1"),
        "the sub-agent ran before the block"
    );
    assert_eq!(
        results_sent(&provider, 3),
        [
            (
                "The result was withheld by hook `subagent-review`: the answer names a customer"
                    .to_owned(),
                true
            ),
            ("The sub-agent found nothing useful.".to_owned(), true),
            ("child answer\n\n(checked by review)".to_owned(), false),
        ]
    );
}

#[tokio::test]
async fn after_subagent_sees_what_after_tool_call_made_of_the_result() {
    let provider = ScriptedProvider::new([agent_turn("s1", "x"), ScriptedTurn::new().text("ok")]);
    let (tool_hook, _) = recording("tool-review", &[HookPoint::AfterToolCall], |_| {
        HookDecision::Replace {
            result: "redacted".into(),
            is_error: false,
        }
    });
    let (subagent_hook, asked) = recording("subagent-review", &[HookPoint::AfterSubagent], |_| {
        HookDecision::AddContext {
            text: "(reviewed)".into(),
        }
    });
    let events = events_of(&provider, &[tool_hook, subagent_hook]).await;
    check_invariants(&events);
    assert!(matches!(
        &asked.lock().unwrap()[..],
        [HookInput::AfterSubagent { result, .. }] if result == "redacted"
    ));
    assert_eq!(
        results_sent(&provider, 1),
        [("redacted\n\n(reviewed)".to_owned(), false)]
    );
}

/// Holds every sub-agent's start for a person.
fn asking() -> (Arc<dyn Hook>, Asked) {
    recording("sub-agent-gate", &[HookPoint::BeforeSubagent], |_| {
        HookDecision::Ask {
            reason: "sub-agents need a look".into(),
        }
    })
}

/// Whether a stored state has a `before_subagent` hook step in flight.
fn asks_before_subagent(state: &RunState) -> bool {
    let Some(core) = &state.strategy else {
        return false;
    };
    core.pointer("/hook/requests")
        .and_then(Value::as_array)
        .is_some_and(|r| r.iter().any(|r| r["event"] == "before_subagent"))
}

#[tokio::test]
async fn before_subagent_ask_holds_the_start_for_a_person_and_is_never_asked_again() {
    let provider = ScriptedProvider::new([
        agent_turn("s1", "draft the reply"),
        ScriptedTurn::new().text("ok"),
    ]);
    let (hook, asked) = asking();
    let mut items = run(
        LoopOptions::default(),
        user("go"),
        deps(&provider, std::slice::from_ref(&hook)),
    )
    .with_checkpoints();
    let mut events = Vec::new();
    let mut in_flight = None;
    while let Some(item) = items.next().await {
        match item {
            RunItem::Event(event) => events.push(event),
            RunItem::Checkpoint(state) if asks_before_subagent(&state) => in_flight = Some(state),
            RunItem::Checkpoint(_) => {}
        }
    }
    let suspended = snapshot("subagent_before_ask", &events);
    assert_eq!(asked.lock().unwrap().len(), 1);
    assert!(
        !child_ran(&events, "s1"),
        "held: the sub-agent has not started"
    );
    let (pending, state) = suspension(&suspended);
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].call.id, "s1");

    // The person approves: the sub-agent starts, no hook is asked again.
    let approve = || [("s1".to_owned(), Decision::Approve { arguments: None })].into();
    let resumed: Vec<LoopEvent> = decide(
        LoopOptions::default(),
        state,
        approve(),
        deps(&provider, std::slice::from_ref(&hook)),
    )
    .unwrap()
    .collect()
    .await;
    insta::assert_snapshot!("subagent_before_ask_resumed", render_events(&resumed));
    assert_eq!(
        asked.lock().unwrap().len(),
        1,
        "the hook is not asked again"
    );
    assert!(child_ran(&resumed, "s1"));
    assert_eq!(
        results_sent(&provider, 1),
        [("child answer".to_owned(), false)]
    );

    // Resumed from the checkpoint taken while the `before_subagent` step
    // was in flight, the run asks that step once (its answers never
    // arrived), holds the call again, and its decision asks nothing more.
    let state: RunState =
        serde_json::from_str(&serde_json::to_string(&in_flight.expect("a checkpoint")).unwrap())
            .unwrap();
    let (hook, asked) = asking();
    let provider = ScriptedProvider::new([ScriptedTurn::new().text("ok")]);
    let deps = || deps(&provider, std::slice::from_ref(&hook));
    let result = collect(resume(LoopOptions::default(), state, deps())).await;
    assert_eq!(moments(&asked), [("before_subagent", "s1".to_owned())]);
    let (pending, state) = suspension(&result);
    assert_eq!(pending[0].call.id, "s1");
    let state: RunState = serde_json::from_str(&serde_json::to_string(&state).unwrap()).unwrap();
    let result = collect(decide(LoopOptions::default(), state, approve(), deps()).unwrap()).await;
    assert_eq!(result.status.name(), "complete");
    assert_eq!(
        asked.lock().unwrap().len(),
        1,
        "the hook is not asked again"
    );
}

/// Every decision at both points over the three calls.
fn both() -> (Vec<Arc<dyn Hook>>, Asked) {
    let (before, before_asked) = before_decisions();
    let (after, after_asked) = after_decisions();
    let asked: Asked = Arc::default();
    let log = asked.clone();
    // One log of both hooks' questions, so a resumed run's count adds up.
    let counter = hook_fn(
        "count",
        [HookPoint::BeforeSubagent, HookPoint::AfterSubagent],
        move |input: HookInput| {
            log.lock().unwrap().push(input);
            async { Ok(HookDecision::Pass) }
        },
    );
    drop((before_asked, after_asked));
    (vec![before, after, counter], asked)
}

/// How many model turns a stored run has played: its finished model calls.
fn provider_after(state: &RunState) -> usize {
    let in_flight = state
        .strategy
        .as_ref()
        .is_some_and(|s| s.get("model_call").is_some());
    state.iteration as usize - usize::from(in_flight)
}

#[tokio::test]
async fn resumed_from_every_checkpoint_no_subagent_hook_is_asked_twice() {
    let (hooks, asked) = both();
    let provider = ScriptedProvider::new(three_calls());
    let mut items =
        run(LoopOptions::default(), user("go"), deps(&provider, &hooks)).with_checkpoints();
    let mut events = Vec::new();
    // Each checkpoint with how many moments were answered before it.
    let mut checkpoints: Vec<(RunState, usize)> = Vec::new();
    while let Some(item) = items.next().await {
        match item {
            RunItem::Event(event) => events.push(event),
            RunItem::Checkpoint(state) => {
                let answered = hook_events(&events)
                    .iter()
                    .filter(|e| e.hook == "count")
                    .count();
                checkpoints.push((state, answered));
            }
        }
    }
    let whole = snapshot("subagent_both_points", &events);
    let total = asked.lock().unwrap().len();
    assert_eq!(total, 5, "3 before (s1 blocked) and 2 after");
    assert!(
        checkpoints.iter().any(|(s, _)| asks_before_subagent(s)),
        "some checkpoint has a before_subagent step in flight"
    );

    for (n, (state, answered)) in checkpoints.into_iter().enumerate() {
        let state: RunState =
            serde_json::from_str(&serde_json::to_string(&state).unwrap()).unwrap();
        let (hooks, asked) = both();
        let played = provider_after(&state);
        let provider = ScriptedProvider::new(three_calls().split_off(played));
        let result = collect(resume(
            LoopOptions::default(),
            state,
            deps(&provider, &hooks),
        ))
        .await;
        assert_eq!(
            result.messages, whole.messages,
            "checkpoint {n} ends as the whole run"
        );
        let again = asked.lock().unwrap().len();
        assert_eq!(
            answered + again,
            total,
            "checkpoint {n}: {answered} answered before, {again} asked after"
        );
    }
}
