//! The clock is an input of the driver: a run given no id is named from
//! the clock in its deps, so a fixed clock names it predictably, and a
//! tool call's duration is read from it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::{Clock, RunDeps, SystemClock, collect, run};
use agentloop_types::{
    EventKind, LoopEvent, LoopOptions, Message, ToolEndEvent, ToolResult, single_result,
};
use futures::StreamExt;
use serde_json::json;

/// A clock stopped at one instant.
struct Stopped(Duration);

impl Clock for Stopped {
    fn since_epoch(&self) -> Duration {
        self.0
    }
}

async fn answer_ids(deps: RunDeps) -> Vec<String> {
    let result = collect(run(
        LoopOptions::default(),
        vec![Message::user_text("u1", "Hi")],
        deps,
    ))
    .await;
    result
        .messages
        .iter()
        .filter(|m| m.id != "u1")
        .map(|m| m.id.clone())
        .collect()
}

#[tokio::test]
async fn a_run_given_no_id_is_named_from_the_injected_clock() {
    let provider = ScriptedProvider::new([ScriptedTurn::new().text("Hello")]);
    let deps = RunDeps::new(provider).with_clock(Arc::new(Stopped(Duration::from_secs(1))));
    let ids = answer_ids(deps).await;
    assert_eq!(ids.len(), 1, "{ids:?}");
    // One second is 0x3b9aca00 nanoseconds.
    assert!(ids[0].starts_with("run-3b9aca00-"), "{ids:?}");
}

#[tokio::test]
async fn the_default_clock_is_the_system_clock() {
    let before = SystemClock.since_epoch().as_nanos();
    let provider = ScriptedProvider::new([ScriptedTurn::new().text("Hello")]);
    let ids = answer_ids(RunDeps::new(provider)).await;
    let after = SystemClock.since_epoch().as_nanos();
    let nanos = ids[0]
        .strip_prefix("run-")
        .and_then(|rest| rest.split('-').next())
        .map(|hex| u128::from_str_radix(hex, 16).unwrap())
        .expect("a run-<nanos>-<n>-<m> id");
    assert!(
        before <= nanos && nanos <= after,
        "{before} <= {nanos} <= {after}"
    );
}

/// A clock that moves only when told to, in milliseconds.
#[derive(Default)]
struct Manual(AtomicU64);

impl Clock for Manual {
    fn since_epoch(&self) -> Duration {
        Duration::from_millis(self.0.load(Ordering::SeqCst))
    }
}

#[tokio::test]
async fn each_tool_end_says_how_long_its_call_took_by_the_run_clock() {
    let clock = Arc::new(Manual::default());
    let moved = clock.clone();
    // Each call moves the clock by the milliseconds it is given, while
    // it runs.
    let waits = common::tool("waits", move |input, _| {
        let (moved, ms) = (moved.clone(), input["ms"].as_u64().unwrap());
        single_result(async move {
            moved.0.fetch_add(ms, Ordering::SeqCst);
            ToolResult::ok("waited")
        })
    });
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("a", "waits", json!({"ms": 300})),
        ScriptedTurn::new().tool_call("b", "waits", json!({"ms": 45})),
        ScriptedTurn::new().text("Done."),
    ]);
    let deps = RunDeps::new(provider).with_tools([waits]).with_clock(clock);
    let events: Vec<LoopEvent> = run(LoopOptions::default(), common::user("Wait."), deps)
        .collect()
        .await;
    let durations: Vec<(String, Option<u32>)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolEnd(ToolEndEvent {
                tool_use_id,
                duration_ms,
                ..
            }) => Some((tool_use_id.clone(), *duration_ms)),
            _ => None,
        })
        .collect();
    assert_eq!(
        durations,
        [("a".to_owned(), Some(300)), ("b".to_owned(), Some(45))]
    );
}
