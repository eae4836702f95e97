//! Input guardrails run beside the first model call: one that passes adds
//! no wall time to a slower turn; one that trips while the model streams
//! cancels the turn at once and nothing of it is committed; the result
//! names the guardrail. Later calls are not guarded; a run resumed inside
//! its first call checks again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::{RunDeps, RunItem, collect, resume, run};
use agentloop_types::transcript::render_events;
use agentloop_types::{
    EventKind, Guardrail, GuardrailVerdict, HookError, LoopError, LoopEvent, LoopOptions,
    LoopStatus, Message, RunState,
};
use common::*;
use futures::StreamExt;
use serde_json::json;

/// Answers `verdict` after `ms` of (paused) time, counting its checks.
struct Timed {
    ms: u64,
    verdict: GuardrailVerdict,
    checks: Arc<AtomicUsize>,
}

#[agentloop_types::async_trait]
impl Guardrail for Timed {
    fn name(&self) -> &str {
        "timed"
    }
    async fn check(&self, _: &[Message]) -> Result<GuardrailVerdict, HookError> {
        self.checks.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(self.ms)).await;
        Ok(self.verdict.clone())
    }
}

fn timed(ms: u64, verdict: GuardrailVerdict) -> (Arc<dyn Guardrail>, Arc<AtomicUsize>) {
    let checks = Arc::new(AtomicUsize::new(0));
    let guardrail = Arc::new(Timed {
        ms,
        verdict,
        checks: checks.clone(),
    });
    (guardrail, checks)
}

fn trip() -> GuardrailVerdict {
    GuardrailVerdict::Trip {
        reason: "off-topic request".into(),
    }
}

fn deps(provider: &Arc<ScriptedProvider>, guardrail: Arc<dyn Guardrail>) -> RunDeps {
    RunDeps::new(provider.clone())
        .with_tools([echo()])
        .with_run_id("run")
        .with_guardrail(guardrail)
}

fn blocked_by(status: &LoopStatus) -> Option<(&str, &str, &str)> {
    match status {
        LoopStatus::Error {
            error: LoopError::Blocked { by, name, reason },
        } => Some((by, name, reason)),
        _ => None,
    }
}

#[tokio::test(start_paused = true)]
async fn a_passing_guardrail_adds_no_wall_time_to_a_slower_turn() {
    let provider = ScriptedProvider::new([ScriptedTurn::new().delay_ms(500).text("slow answer")]);
    let (guardrail, checks) = timed(200, GuardrailVerdict::Pass);
    let started = tokio::time::Instant::now();
    let result = collect(run(
        LoopOptions::default(),
        user("go"),
        deps(&provider, guardrail),
    ))
    .await;
    assert_eq!(started.elapsed(), Duration::from_millis(500));
    assert_eq!(result.final_text().as_deref(), Some("slow answer"));
    assert_eq!(checks.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_trip_while_the_model_streams_cancels_the_turn_and_commits_nothing() {
    let provider = ScriptedProvider::new([ScriptedTurn::new()
        .text("Sure, here is how to")
        .delay_ms(50)
        .text(" do it...")
        .hang()]);
    let (guardrail, _) = timed(100, trip());
    let started = tokio::time::Instant::now();
    let events: Vec<LoopEvent> = run(
        LoopOptions::default(),
        user("go"),
        deps(&provider, guardrail),
    )
    .collect()
    .await;
    // Paused time: the turn stops at the moment of the trip.
    assert_eq!(started.elapsed(), Duration::from_millis(100));
    let result = check_invariants(&events);
    insta::assert_snapshot!("guardrail_trip_while_streaming", render_events(&events));
    assert_eq!(
        blocked_by(&result.status),
        Some(("guardrail", "timed", "off-topic request"))
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.kind, EventKind::MessageCreated(_))),
        "nothing committed"
    );
    assert_eq!(result.messages.len(), 1, "only the prompt");
}

#[tokio::test(start_paused = true)]
async fn a_trip_after_the_turn_ended_still_drops_it_and_counts_its_tokens() {
    let provider = ScriptedProvider::new([ScriptedTurn::new()
        .tool_call("t1", "echo", json!({"text": "a"}))
        .usage(10, 5)]);
    let (guardrail, _) = timed(300, trip());
    let events: Vec<LoopEvent> = run(
        LoopOptions::default(),
        user("go"),
        deps(&provider, guardrail),
    )
    .collect()
    .await;
    let result = check_invariants(&events);
    assert!(blocked_by(&result.status).is_some());
    assert_eq!(result.messages.len(), 1, "the turn is not committed");
    assert_eq!(result.tokens.input_tokens, 10, "its tokens were spent");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.kind, EventKind::ToolStart(_))),
        "its call never ran"
    );
}

#[tokio::test(start_paused = true)]
async fn only_the_first_call_is_guarded_and_a_resume_inside_it_checks_again() {
    let script = || {
        vec![
            ScriptedTurn::new()
                .delay_ms(10)
                .tool_call("t1", "echo", json!({"text": "a"})),
            ScriptedTurn::new().text("done"),
        ]
    };
    let provider = ScriptedProvider::new(script());
    let (guardrail, checks) = timed(5, GuardrailVerdict::Pass);
    let mut items = run(
        LoopOptions::default(),
        user("go"),
        deps(&provider, guardrail),
    )
    .with_checkpoints();
    let mut first: Option<RunState> = None;
    let mut last = None;
    while let Some(item) = items.next().await {
        match item {
            RunItem::Checkpoint(state) => {
                first.get_or_insert(state);
            }
            RunItem::Event(event) => last = Some(event),
        }
    }
    let whole = last.unwrap().into_root_result().unwrap();
    assert_eq!(whole.final_text().as_deref(), Some("done"));
    assert_eq!(
        checks.load(Ordering::SeqCst),
        1,
        "the second call is not guarded"
    );

    // Stored while the first call was in flight: resumed, it is guarded.
    let (guardrail, checks) = timed(5, trip());
    let provider = ScriptedProvider::new(script());
    let resumed = collect(resume(
        LoopOptions::default(),
        first.unwrap(),
        deps(&provider, guardrail),
    ))
    .await;
    assert_eq!(checks.load(Ordering::SeqCst), 1);
    assert!(blocked_by(&resumed.status).is_some());
}
