//! A run's wall-clock limit (`LoopOptions::timeout_ms`): the driver's timer
//! stops the run as a cancel would, and the run ends `limit_exceeded`
//! (`timeout`). Time is Tokio's paused clock: the deadline passes when
//! nothing else can run, never by sleeping.

mod common;

use std::sync::{Arc, Mutex};

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_types::{CancellationToken, ContentBlock, LimitKind, LoopOptions, LoopStatus, Role};
use common::{check_invariants, echo, hanging, run_events, user};
use serde_json::json;

fn with_timeout(ms: u64) -> LoopOptions {
    LoopOptions {
        timeout_ms: Some(ms),
        ..LoopOptions::default()
    }
}

const TIMED_OUT: LoopStatus = LoopStatus::LimitExceeded {
    limit: LimitKind::Timeout,
    budget: None,
};

#[tokio::test(start_paused = true)]
async fn a_model_turn_that_never_ends_is_stopped_at_the_deadline() {
    let provider = ScriptedProvider::new([ScriptedTurn::new()
        .text_chunks(&["Counting: one, ", "two, "])
        .hang()]);
    let started = tokio::time::Instant::now();
    let events = run_events(
        provider,
        Vec::new(),
        with_timeout(30_000),
        user("count forever"),
        CancellationToken::new(),
    )
    .await;
    let result = check_invariants(&events);
    assert_eq!(result.status, TIMED_OUT);
    assert_eq!(started.elapsed().as_millis(), 30_000);
    // What streamed before the deadline is kept, as after a cancel.
    let last = result.messages.last().unwrap();
    assert_eq!(last.role, Role::Assistant);
    assert!(
        matches!(&last.content[0], ContentBlock::Text { text, .. } if text == "Counting: one, two, "),
        "{last:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_tool_call_running_at_the_deadline_is_cancelled_and_answered() {
    let slot = Arc::new(Mutex::new(None));
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("c1", "hang", json!({})),
        ScriptedTurn::new().text("never asked"),
    ]);
    let events = run_events(
        provider.clone(),
        vec![hanging(slot.clone())],
        with_timeout(5_000),
        user("wait"),
        CancellationToken::new(),
    )
    .await;
    let result = check_invariants(&events);
    assert_eq!(result.status, TIMED_OUT);
    let token = slot.lock().unwrap().clone().unwrap();
    assert!(token.is_cancelled(), "the tool's token was not cancelled");
    // The call has its result, and the model was not asked again.
    let answer = result.messages.last().unwrap();
    assert_eq!(answer.role, Role::User);
    assert!(matches!(&answer.content[0], ContentBlock::ToolResult(r) if r.is_error));
    assert_eq!(provider.remaining(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_run_that_ends_in_time_is_not_touched_by_its_limit() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .delay_ms(1_000)
            .tool_call("c1", "echo", json!({"text": "hi"})),
        ScriptedTurn::new().delay_ms(1_000).text("done"),
    ]);
    let events = run_events(
        provider,
        vec![echo()],
        with_timeout(10_000),
        user("go"),
        CancellationToken::new(),
    )
    .await;
    let result = check_invariants(&events);
    assert!(
        matches!(result.status, LoopStatus::Complete { .. }),
        "{:?}",
        result.status
    );
    assert_eq!(result.final_text().as_deref(), Some("done"));
}

#[tokio::test(start_paused = true)]
async fn a_cancel_before_the_deadline_stays_a_cancel() {
    let provider = ScriptedProvider::new([ScriptedTurn::new().text("a").hang()]);
    let cancel = CancellationToken::new();
    common::cancel_after(&cancel, 100);
    let events = run_events(
        provider,
        Vec::new(),
        with_timeout(10_000),
        user("go"),
        cancel,
    )
    .await;
    assert_eq!(check_invariants(&events).status, LoopStatus::Cancelled);
}

#[test]
fn the_limit_is_serialised_only_when_set() {
    let value = serde_json::to_value(LoopOptions::default()).unwrap();
    assert!(value.get("timeout_ms").is_none());
    let value = serde_json::to_value(with_timeout(1_500)).unwrap();
    assert_eq!(value["timeout_ms"], 1_500);
    let status = serde_json::to_value(&TIMED_OUT).unwrap();
    assert_eq!(
        status,
        json!({"status": "limit_exceeded", "limit": "timeout"})
    );
}
