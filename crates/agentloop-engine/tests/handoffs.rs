//! Handoffs: a triage agent hands the conversation to a specialist, which
//! hands it on; each speaks with its own instructions, model and tools over
//! the history it is allowed to see. Event sequences are pinned as
//! snapshots, also of runs resumed from every checkpoint of the chain
//! (none loses or repeats a handoff), and the handoff limit ends a cycle.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::strategy::ReactStrategy;
use agentloop_engine::{
    AgentProfile, Handoffs, LoopStrategy, RunDeps, RunItem, collect, decide, resume, run,
};
use agentloop_types::transcript::render_events;
use agentloop_types::{
    ApprovalPolicy, Decision, EventKind, HandoffError, HandoffEvent, HandoffHistory, LimitKind,
    LoopError, LoopEvent, LoopOptions, LoopStatus, ModelRequest, RunState, single_result,
};
use common::*;
use futures::StreamExt;
use serde_json::json;

fn options() -> LoopOptions {
    let mut options = LoopOptions::default();
    options.request.system_prompt = Some("You are triage.".into());
    options.request.model = "triage-model".into();
    options
}

fn invoice() -> Arc<dyn agentloop_types::Tool> {
    tool("invoice", |input, _| {
        let id = input["id"].as_str().unwrap_or_default().to_owned();
        single_result(async move { agentloop_types::ToolResult::ok(format!("invoice {id}: paid")) })
    })
}

/// Triage hands to billing or tech; billing may hand to tech; tech may
/// hand back to triage.
fn agents(history: HandoffHistory) -> Handoffs {
    let billing = AgentProfile::new("billing", "Invoices and payments.")
        .instructions("You are billing.")
        .model("billing-model")
        .tool(invoice())
        .handoff("tech")
        .history(history);
    let tech = AgentProfile::new("tech", "Technical problems.")
        .instructions("You are tech.")
        .handoff("triage");
    Handoffs::new(
        "triage",
        vec!["billing".into(), "tech".into()],
        vec![billing, tech],
    )
    .unwrap()
}

fn deps(provider: &Arc<ScriptedProvider>, handoffs: Handoffs) -> RunDeps {
    RunDeps::new(provider.clone())
        .with_tools([echo()])
        .with_run_id("run")
        .with_handoffs(handoffs)
}

fn handoff(id: &str, to: &str, reason: &str) -> ScriptedTurn {
    ScriptedTurn::new().tool_call(
        id,
        &format!("transfer_to_{to}"),
        json!({ "reason": reason }),
    )
}

/// Triage → billing (which looks an invoice up) → tech, which answers.
fn chain() -> Vec<ScriptedTurn> {
    vec![
        handoff("h1", "billing", "an invoice question"),
        ScriptedTurn::new().tool_call("i1", "invoice", json!({"id": "42"})),
        handoff("h2", "tech", "the app crashes"),
        ScriptedTurn::new().text("Reinstall the app."),
    ]
}

fn tool_names(request: &ModelRequest) -> Vec<String> {
    request.tools.iter().map(|t| t.name.clone()).collect()
}

fn handoff_events(events: &[LoopEvent]) -> Vec<HandoffEvent> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Handoff(event) => Some((**event).clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_chain_of_handoffs_speaks_with_each_agents_instructions_model_and_tools() {
    let provider = ScriptedProvider::new(chain());
    let events: Vec<LoopEvent> = run(
        options(),
        user("My invoice is wrong and the app crashes"),
        deps(&provider, agents(HandoffHistory::Full)),
    )
    .collect()
    .await;
    let result = check_invariants(&events);
    insta::assert_snapshot!("handoff_chain", render_events(&events));
    assert_eq!(result.final_text().as_deref(), Some("Reinstall the app."));

    let requests = provider.requests();
    check_recorded_requests(&events, &requests, &result.messages);
    let seen: Vec<(Option<&str>, &str, Vec<String>)> = requests
        .iter()
        .map(|r| {
            (
                r.options.system_prompt.as_deref(),
                r.options.model.as_str(),
                tool_names(r),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (
                Some("You are triage."),
                "triage-model",
                vec![
                    "echo".into(),
                    "transfer_to_billing".into(),
                    "transfer_to_tech".into()
                ]
            ),
            (
                Some("You are billing."),
                "billing-model",
                vec!["invoice".into(), "transfer_to_tech".into()]
            ),
            (
                Some("You are billing."),
                "billing-model",
                vec!["invoice".into(), "transfer_to_tech".into()]
            ),
            (
                Some("You are tech."),
                "triage-model",
                vec!["transfer_to_triage".into()]
            ),
        ]
    );
    let handoffs = handoff_events(&events);
    assert_eq!(
        handoffs
            .iter()
            .map(|h| (h.from.as_str(), h.to.as_str(), h.handoffs))
            .collect::<Vec<_>>(),
        [("triage", "billing", 1), ("billing", "tech", 2)]
    );
    assert_eq!(handoffs[0].reason.as_deref(), Some("an invoice question"));
    // The full history: tech sees billing's work.
    assert_eq!(requests[3].messages.len(), result.messages.len() - 1);
}

#[tokio::test]
async fn a_target_sees_the_history_its_filter_lets_through() {
    for (history, sent) in [
        // The prompt, then billing's own turns after the handoff.
        (HandoffHistory::LastUserMessage, vec!["u1"]),
        // The prompt's text only: triage's handoff turn held only a call.
        (HandoffHistory::TextOnly, vec!["u1"]),
        (HandoffHistory::Full, vec!["u1", "run-1", "run-2"]),
    ] {
        let provider = ScriptedProvider::new(chain());
        let events: Vec<LoopEvent> = run(
            options(),
            user("My invoice is wrong"),
            deps(&provider, agents(history)),
        )
        .collect()
        .await;
        let result = check_invariants(&events);
        check_recorded_requests(&events, &provider.requests(), &result.messages);
        assert_eq!(result.status.name(), "complete");
        let ids = |n: usize| -> Vec<String> {
            provider.requests()[n]
                .messages
                .iter()
                .map(|m| m.id.clone())
                .collect()
        };
        assert_eq!(ids(1), sent, "{history:?}: billing's first request");
        // Billing's second request adds its own turn and result whole.
        let mut second = sent.clone();
        second.extend(["run-3", "run-4"]);
        assert_eq!(ids(2), second, "{history:?}: billing's second request");
        // Tech is not filtered (its history is full): it sees everything.
        assert_eq!(ids(3).len(), 7, "{history:?}");
        // The stored history keeps every message.
        assert_eq!(result.messages.len(), 8);
    }
}

#[tokio::test]
async fn resumed_from_every_checkpoint_no_handoff_is_lost_or_repeated() {
    let provider = ScriptedProvider::new(chain());
    let mut items = run(
        options(),
        user("My invoice is wrong and the app crashes"),
        deps(&provider, agents(HandoffHistory::LastUserMessage)),
    )
    .with_checkpoints();
    let mut events = Vec::new();
    let mut checkpoints: Vec<(RunState, usize)> = Vec::new();
    while let Some(item) = items.next().await {
        match item {
            RunItem::Event(event) => events.push(event),
            RunItem::Checkpoint(state) => {
                checkpoints.push((state, handoff_events(&events).len()));
            }
        }
    }
    let whole = check_invariants(&events);
    let whole_requests = provider.requests();
    assert!(checkpoints.len() >= 6, "{}", checkpoints.len());

    let mut resumed_log = String::new();
    for (n, (state, before)) in checkpoints.into_iter().enumerate() {
        let state: RunState =
            serde_json::from_str(&serde_json::to_string(&state).unwrap()).unwrap();
        let played = played(&state);
        let provider = ScriptedProvider::new(chain().split_off(played));
        let events: Vec<LoopEvent> = resume(
            options(),
            state,
            deps(&provider, agents(HandoffHistory::LastUserMessage)),
        )
        .collect()
        .await;
        let result = check_invariants(&events);
        assert_eq!(
            result.messages, whole.messages,
            "checkpoint {n} ends as the whole run"
        );
        assert_eq!(
            before + handoff_events(&events).len(),
            2,
            "checkpoint {n}: every handoff made exactly once"
        );
        // Each request after the resume is the one the whole run made.
        for (k, request) in provider.requests().iter().enumerate() {
            let original = &whole_requests[played + k];
            assert_eq!(
                request.options.system_prompt,
                original.options.system_prompt
            );
            assert_eq!(request.options.model, original.options.model);
            assert_eq!(tool_names(request), tool_names(original));
            assert_eq!(request.messages.to_vec(), original.messages.to_vec());
        }
        resumed_log.push_str(&format!("--- resumed from checkpoint {n}\n"));
        resumed_log.push_str(&render_events(&events));
        resumed_log.push('\n');
    }
    insta::assert_snapshot!("handoff_chain_resumed", resumed_log);
}

/// How many model turns a stored run has played.
fn played(state: &RunState) -> usize {
    let in_flight = state
        .strategy
        .as_ref()
        .is_some_and(|s| s.get("model_call").is_some());
    state.iteration as usize - usize::from(in_flight)
}

#[tokio::test]
async fn a_cycle_ends_at_the_handoff_limit() {
    let provider = ScriptedProvider::new([
        handoff("h1", "tech", "crash"),
        handoff("h2", "triage", "not technical"),
        handoff("h3", "tech", "crash again"),
        ScriptedTurn::new().text("never asked"),
    ]);
    let events: Vec<LoopEvent> = run(
        options(),
        user("help"),
        deps(&provider, agents(HandoffHistory::Full).with_max_handoffs(2)),
    )
    .collect()
    .await;
    let result = check_invariants(&events);
    insta::assert_snapshot!("handoff_cycle_limit", render_events(&events));
    assert_eq!(
        result.status,
        LoopStatus::LimitExceeded {
            limit: LimitKind::Handoffs,
            budget: None,
        }
    );
    assert_eq!(provider.requests().len(), 3);
    // Handing back to the root speaks with the run's own instructions.
    assert_eq!(
        provider.requests()[2].options.system_prompt.as_deref(),
        Some("You are triage.")
    );
}

#[tokio::test]
async fn only_the_first_handoff_of_a_turn_is_taken_and_other_calls_still_run() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .tool_call("e1", "echo", json!({"text": "noted"}))
            .tool_call("h1", "transfer_to_tech", json!({}))
            .tool_call("h2", "transfer_to_billing", json!({})),
        ScriptedTurn::new().text("Tech here."),
    ]);
    let events: Vec<LoopEvent> = run(
        options(),
        user("help"),
        deps(&provider, agents(HandoffHistory::Full)),
    )
    .collect()
    .await;
    let result = check_invariants(&events);
    insta::assert_snapshot!("handoff_first_of_a_turn", render_events(&events));
    let results: Vec<(String, bool)> = result
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .map(|r| (r.content.clone(), r.is_error))
        .collect();
    assert_eq!(results[0], ("noted".to_owned(), false));
    assert!(!results[1].1);
    assert!(results[2].1, "a second handoff is not taken");
    assert_eq!(handoff_events(&events).len(), 1);
    assert_eq!(handoff_events(&events)[0].to, "tech");
}

#[tokio::test]
async fn a_handoff_in_a_step_that_waits_for_approval_is_made_once_it_is_decided() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .tool_call("e1", "echo", json!({"text": "careful"}))
            .tool_call("h1", "transfer_to_tech", json!({})),
        ScriptedTurn::new().text("Tech here."),
    ]);
    let guarded_deps = |provider: &Arc<ScriptedProvider>| {
        RunDeps::new(provider.clone())
            .with_tools([guarded(echo(), ApprovalPolicy::Always)])
            .with_run_id("run")
            .with_handoffs(agents(HandoffHistory::Full))
    };
    let first = collect(run(options(), user("help"), guarded_deps(&provider))).await;
    let LoopStatus::Suspended {
        state: Some(state), ..
    } = first.status
    else {
        panic!("{:?}", first.status)
    };
    let state: RunState = serde_json::from_str(&serde_json::to_string(&state).unwrap()).unwrap();
    let decisions = [("e1".to_owned(), Decision::Approve { arguments: None })].into();
    let events: Vec<LoopEvent> = decide(options(), state, decisions, guarded_deps(&provider))
        .unwrap()
        .collect()
        .await;
    insta::assert_snapshot!("handoff_after_approval", render_events(&events));
    assert_eq!(handoff_events(&events).len(), 1);
    assert_eq!(
        provider.requests()[1].options.system_prompt.as_deref(),
        Some("You are tech.")
    );
}

#[tokio::test]
async fn a_target_does_not_see_tools_it_was_not_given() {
    // Tech has no echo: its call is answered as an unknown tool.
    let provider = ScriptedProvider::new([
        handoff("h1", "tech", "crash"),
        ScriptedTurn::new().tool_call("e1", "echo", json!({"text": "x"})),
        ScriptedTurn::new().text("done"),
    ]);
    let result = collect(run(
        options(),
        user("help"),
        deps(&provider, agents(HandoffHistory::Full)),
    ))
    .await;
    let last = result
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .last()
        .unwrap()
        .clone();
    assert!(last.is_error);
    assert!(
        last.content.starts_with("Unknown tool: echo"),
        "{}",
        last.content
    );
}

#[test]
fn bad_agent_sets_are_refused_with_typed_errors() {
    let dup = Handoffs::new(
        "triage",
        vec![],
        vec![AgentProfile::new("triage", ""), AgentProfile::new("x", "")],
    );
    assert_eq!(
        dup.unwrap_err(),
        HandoffError::Duplicate {
            name: "triage".into()
        }
    );
    let unknown = Handoffs::new("triage", vec!["nobody".into()], vec![]);
    assert_eq!(
        unknown.unwrap_err(),
        HandoffError::UnknownTarget {
            from: "triage".into(),
            to: "nobody".into()
        }
    );
    let bad = Handoffs::new("tri age", vec![], vec![]);
    assert!(matches!(bad.unwrap_err(), HandoffError::BadName { .. }));
}

#[tokio::test]
async fn a_resumed_run_whose_agent_is_gone_ends_with_an_error() {
    let provider = ScriptedProvider::new(chain());
    let mut items = run(
        options(),
        user("help"),
        deps(&provider, agents(HandoffHistory::Full)),
    )
    .with_checkpoints();
    let mut stored = None;
    while let Some(item) = items.next().await {
        if let RunItem::Checkpoint(state) = item
            && state
                .strategy
                .as_ref()
                .is_some_and(|s| s.get("agent").is_some())
        {
            stored = Some(state);
            break;
        }
    }
    drop(items);
    let state = stored.expect("a checkpoint after the handoff");
    let others = Handoffs::new("triage", vec![], vec![]).unwrap();
    let result = collect(resume(options(), state, deps(&provider, others))).await;
    let LoopStatus::Error {
        error: LoopError::InvalidState { reason },
    } = result.status
    else {
        panic!("{:?}", result.status)
    };
    assert!(reason.contains("billing"), "{reason}");
}

#[tokio::test]
async fn handoffs_need_the_native_strategy() {
    let provider = ScriptedProvider::new([ScriptedTurn::new().text("hi")]);
    let result = collect(ReactStrategy::default().run(
        options(),
        user("help"),
        deps(&provider, agents(HandoffHistory::Full)),
    ))
    .await;
    assert_eq!(
        result.status,
        LoopStatus::Error {
            error: LoopError::HandoffsUnsupported {
                strategy: "react".into()
            }
        }
    );
    assert!(provider.requests().is_empty());
}

#[tokio::test]
async fn streaming_start_names_the_agent_speaking() {
    let provider = ScriptedProvider::new(chain());
    let events: Vec<LoopEvent> = run(
        options(),
        user("help"),
        deps(&provider, agents(HandoffHistory::Full)),
    )
    .collect()
    .await;
    let speakers: Vec<Option<String>> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::StreamingStart(start) => Some(start.agent.clone()),
            _ => None,
        })
        .collect();
    let names = ["triage", "billing", "billing", "tech"].map(|s| Some(s.to_owned()));
    assert_eq!(speakers, names);
    // A run without handoffs names no agent.
    let provider = ScriptedProvider::new([ScriptedTurn::new().text("hi")]);
    let events: Vec<LoopEvent> = run(
        options(),
        user("help"),
        RunDeps::new(provider).with_run_id("run"),
    )
    .collect()
    .await;
    assert!(events.iter().all(|e| !matches!(
        &e.kind,
        EventKind::StreamingStart(start) if start.agent.is_some()
    )));
}
