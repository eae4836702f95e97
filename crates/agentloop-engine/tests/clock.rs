//! The clock is an input of the driver: a run given no id is named from
//! the clock in its deps, so a fixed clock names it predictably.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::{Clock, RunDeps, SystemClock, collect, run};
use agentloop_types::{LoopOptions, Message};

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
