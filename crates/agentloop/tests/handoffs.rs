//! Handoffs through the builder: agents given whole or by name, their
//! instructions and models used as each speaks, and sets that do not fit
//! refused at build time.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agentloop::engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop::types::{EventKind, HandoffError, HandoffHistory};
use agentloop::{Agent, BuildError};
use futures::StreamExt;
use serde_json::json;

fn handoff(id: &str, to: &str) -> ScriptedTurn {
    ScriptedTurn::new().tool_call(id, &format!("transfer_to_{to}"), json!({}))
}

#[tokio::test]
async fn a_triage_agent_hands_to_a_specialist_that_hands_back() {
    let provider = ScriptedProvider::new([
        handoff("h1", "tech"),
        handoff("h2", "triage"),
        ScriptedTurn::new().text("Back at triage."),
    ]);
    let tech = Agent::builder()
        .name("tech")
        .description("Technical problems.")
        .provider(provider.clone())
        .model("tech-model")
        .system("You are tech.")
        .handoff_to_name("triage")
        .handoff_history(HandoffHistory::LastUserMessage)
        .build()
        .unwrap();
    let triage = Agent::builder()
        .name("triage")
        .provider(provider.clone())
        .model("triage-model")
        .system("You are triage.")
        .handoff(tech)
        .build()
        .unwrap();
    let events: Vec<_> = triage.stream("It crashes").collect().await;
    let speakers: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::StreamingStart(start) => start.agent.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(speakers, ["triage", "tech", "triage"]);
    let requests = provider.requests();
    let seen: Vec<(&str, Option<&str>, usize)> = requests
        .iter()
        .map(|r| {
            (
                r.options.model.as_str(),
                r.options.system_prompt.as_deref(),
                r.messages.len(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("triage-model", Some("You are triage."), 1),
            // Tech sees only the prompt.
            ("tech-model", Some("You are tech."), 1),
            ("triage-model", Some("You are triage."), 5),
        ]
    );
    let result = events.last().unwrap().root_result().unwrap();
    assert_eq!(result.final_text().as_deref(), Some("Back at triage."));
}

#[test]
fn handoffs_that_do_not_fit_are_refused_at_build_time() {
    // A name nobody in the set holds is left out (it may resolve in a
    // larger set); agents of one name twice, or bad names, are refused.
    let provider = ScriptedProvider::new([]);
    let base = || Agent::builder().provider(provider.clone()).model("m");
    let twin = base().name("triage").build().unwrap();
    let same_name = base().name("triage").handoff(twin).build();
    assert!(matches!(
        same_name.unwrap_err(),
        BuildError::Handoffs(HandoffError::Duplicate { .. })
    ));
    let bad = base().name("has space").build();
    assert!(matches!(
        bad.unwrap_err(),
        BuildError::Handoffs(HandoffError::BadName { .. })
    ));
}
