//! The ReAct strategy (seed 001): event sequences pinned as snapshots.

mod common;

use agentloop_types::AgentCompletionEvent;
use std::sync::Arc;

use agentloop_engine::retrieval::{InMemoryRetriever, RETRIEVED_MESSAGE_ID};
use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::strategy::ReactStrategy;
use agentloop_engine::{LoopStrategy, RunDeps};
use agentloop_types::transcript::render_events;
use agentloop_types::{
    CancellationToken, Decision, EventKind, LoopEvent, LoopOptions, LoopStatus, Message,
    ProviderError, ProviderErrorKind, Tool,
};
use common::*;
use futures::StreamExt;
use serde_json::json;

fn decide(id: &str, input: serde_json::Value) -> ScriptedTurn {
    ScriptedTurn::new()
        .tool_call(id, "agent_decide_next", input)
        .usage(10, 5)
}

fn observe(id: &str, input: serde_json::Value) -> ScriptedTurn {
    ScriptedTurn::new()
        .tool_call(id, "agent_observe_decide", input)
        .usage(10, 5)
}

async fn run_react(
    strategy: ReactStrategy,
    provider: Arc<ScriptedProvider>,
    tools: Vec<Arc<dyn Tool>>,
    context: Vec<Message>,
    cancel: CancellationToken,
) -> Vec<LoopEvent> {
    let deps = RunDeps::new(provider)
        .with_tools(tools)
        .with_cancel(cancel)
        .with_run_id("run");
    strategy
        .run(LoopOptions::default(), context, deps)
        .collect()
        .await
}

fn snapshot(name: &str, events: &[LoopEvent]) -> agentloop_types::LoopResult {
    let result = check_invariants(events);
    insta::assert_snapshot!(name, render_events(events));
    result
}

fn agent_events(events: &[LoopEvent]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.kind.name().starts_with("agent_"))
        .map(|e| agentloop_types::transcript::render_event(e)[4..].to_owned())
        .collect()
}

#[tokio::test(start_paused = true)]
async fn happy_path_tool_observe_finish() {
    let provider = ScriptedProvider::new([
        decide("r1", json!({"message": "I should echo ping."})),
        ScriptedTurn::new()
            .tool_call("t1", "echo", json!({"text": "pong"}))
            .tool_call("t2", "echo", json!({"text": "ignored"}))
            .usage(20, 5),
        observe(
            "o1",
            json!({"message": "The echo answered.", "should_continue": false, "final_answer": "It said pong."}),
        ),
    ]);
    let events = run_react(
        ReactStrategy::default(),
        provider.clone(),
        vec![echo()],
        user("Echo ping"),
        CancellationToken::new(),
    )
    .await;
    let result = snapshot("react_happy_path", &events);
    assert!(matches!(result.status, LoopStatus::Complete { .. }));
    assert_eq!(result.final_text().as_deref(), Some("It said pong."));
    let requests = provider.requests();
    let names =
        |i: usize| -> Vec<String> { requests[i].tools.iter().map(|t| t.name.clone()).collect() };
    assert_eq!(names(0), ["agent_decide_next"]);
    assert_eq!(names(1), ["echo"]);
    assert_eq!(names(2), ["agent_observe_decide"]);
    let results: Vec<_> = result
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .collect();
    assert_eq!(results.len(), 2, "the second call gets a result too");
    assert!(!results[0].is_error);
    assert!(results[1].is_error && results[1].content.starts_with("Not run"));
}

#[tokio::test(start_paused = true)]
async fn no_tools_answers_after_reasoning() {
    let provider = ScriptedProvider::new([
        // Text instead of the control tool: the JSON fallback reads it.
        ScriptedTurn::new()
            .text("```json\n{\"message\": \"A fact I know.\"}\n```")
            .usage(5, 5),
        ScriptedTurn::new().text("Paris.").usage(5, 1),
    ]);
    let events = run_react(
        ReactStrategy::default(),
        provider,
        vec![],
        user("Capital of France?"),
        CancellationToken::new(),
    )
    .await;
    let result = snapshot("react_no_tools", &events);
    assert_eq!(result.final_text().as_deref(), Some("Paris."));
}

#[tokio::test(start_paused = true)]
async fn tools_offered_but_no_call() {
    let provider = ScriptedProvider::new([
        decide("r1", json!({"message": "Simple arithmetic."})),
        ScriptedTurn::new().text("2 + 2 = 4.").usage(5, 3),
    ]);
    let events = run_react(
        ReactStrategy::default(),
        provider,
        vec![echo()],
        user("2+2?"),
        CancellationToken::new(),
    )
    .await;
    let result = snapshot("react_no_call", &events);
    assert_eq!(result.final_text().as_deref(), Some("2 + 2 = 4."));
}

#[tokio::test(start_paused = true)]
async fn max_steps_ends_with_a_plain_call() {
    let step = |n: u32| {
        [
            decide(&format!("r{n}"), json!({"message": format!("Try {n}.")})),
            ScriptedTurn::new().tool_call(
                &format!("t{n}"),
                "echo",
                json!({"text": format!("try {n}")}),
            ),
            // Plain-text observation: JSON fallback.
            ScriptedTurn::new().text(&format!(
                "{{\"message\": \"Not yet ({n}).\", \"should_continue\": true}}"
            )),
        ]
    };
    let mut turns: Vec<ScriptedTurn> = step(1).into_iter().chain(step(2)).collect();
    turns.push(ScriptedTurn::new().text("Best effort: try 2."));
    let provider = ScriptedProvider::new(turns);
    let strategy = ReactStrategy {
        max_steps: 2,
        ..ReactStrategy::default()
    };
    let events = run_react(
        strategy,
        provider.clone(),
        vec![echo()],
        user("Keep trying"),
        CancellationToken::new(),
    )
    .await;
    let result = snapshot("react_max_steps", &events);
    assert_eq!(result.final_text().as_deref(), Some("Best effort: try 2."));
    let last = provider.requests().pop().unwrap();
    assert!(last.tools.is_empty(), "the last call is plain");
    assert_eq!(provider.remaining(), 0);
}

#[tokio::test(start_paused = true)]
async fn user_input_suspends_and_resumes() {
    let provider = ScriptedProvider::new([
        decide(
            "r1",
            json!({"message": "I need the city.", "request_input": "Which city?"}),
        ),
        decide(
            "r2",
            json!({"message": "Oslo it is.", "finish": true, "final_answer": "Oslo: mild."}),
        ),
    ]);
    let events = run_react(
        ReactStrategy::default(),
        provider.clone(),
        vec![echo()],
        user("Weather?"),
        CancellationToken::new(),
    )
    .await;
    let suspended = snapshot("react_request_input", &events);
    let (pending, state) = suspension(&suspended);
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].call.name, "agent_request_input");
    // The same run goes on in place: the answer is the question's result.
    let answer = Decision::Answer {
        text: "Oslo".into(),
    };
    let decisions = [(pending[0].call.id.clone(), answer)].into();
    let events = decide_events(
        provider.clone(),
        vec![echo()],
        LoopOptions::default(),
        state,
        decisions,
    )
    .await;
    let resumed = check_resumed(suspended.tokens, &events);
    insta::assert_snapshot!("react_resumed", render_events(&events));
    assert_eq!(resumed.final_text().as_deref(), Some("Oslo: mild."));
    let sent = &provider.requests()[1].messages;
    assert!(
        sent.iter()
            .flat_map(|m| m.tool_results())
            .any(|r| r.content == "Oslo"),
        "the answer reaches the model"
    );
}

#[tokio::test(start_paused = true)]
async fn stop_control_cancels() {
    let provider = ScriptedProvider::new([
        decide("r1", json!({"message": "Echo first."})),
        ScriptedTurn::new().tool_call("t1", "echo", json!({"text": "x"})),
        ScriptedTurn::new().text("{\"message\": \"").hang(),
    ]);
    let cancel = CancellationToken::new();
    cancel_after(&cancel, 50);
    let events = run_react(
        ReactStrategy::default(),
        provider,
        vec![echo()],
        user("Go"),
        cancel,
    )
    .await;
    let result = snapshot("react_cancel", &events);
    assert!(matches!(result.status, LoopStatus::Cancelled));
}

#[tokio::test(start_paused = true)]
async fn provider_error_is_retried() {
    let overloaded = || ProviderError::new(ProviderErrorKind::Api, "overloaded");
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().error(overloaded()),
        decide(
            "r1",
            json!({"message": "Known.", "final_answer": "Done after a retry."}),
        ),
    ]);
    let events = run_react(
        ReactStrategy::default(),
        provider,
        vec![echo()],
        user("Go"),
        CancellationToken::new(),
    )
    .await;
    let result = snapshot("react_retry", &events);
    assert!(matches!(result.status, LoopStatus::Complete { .. }));

    let provider = ScriptedProvider::new([
        ScriptedTurn::new().error(overloaded()),
        ScriptedTurn::new().error(overloaded()),
    ]);
    let strategy = ReactStrategy {
        max_retries: 1,
        ..ReactStrategy::default()
    };
    let events = run_react(
        strategy,
        provider,
        vec![],
        user("Go"),
        CancellationToken::new(),
    )
    .await;
    let result = check_invariants(&events);
    assert!(matches!(result.status, LoopStatus::Error { .. }));
    let agent = agent_events(&events);
    assert_eq!(agent.len(), 4, "{agent:?}");
    assert_eq!(
        agent[..2],
        ["/ agent_start max_steps=10", "/ agent_turn_start step=1"]
    );
    assert!(
        agent[2].starts_with("/ agent_error step=1")
            && agent[2].ends_with("overloaded (retry 1 of 1)\"")
    );
    assert!(agent[3].starts_with("/ agent_error step=1") && agent[3].ends_with("overloaded\""));
}

#[tokio::test(start_paused = true)]
async fn retrieved_passages_reach_the_act_step_cited() {
    let mut retriever = InMemoryRetriever::default();
    retriever.add("p1", "handbook.md", "Deploys happen on Tuesdays.");
    retriever.add("p2", "menu.md", "Lunch is at noon.");
    let provider = ScriptedProvider::new([
        decide("r1", json!({"message": "Check the handbook."})),
        ScriptedTurn::new().text("Deploys are on Tuesdays [1]."),
    ]);
    let strategy = ReactStrategy {
        retriever: Some(Arc::new(retriever)),
        ..ReactStrategy::default()
    };
    let events = run_react(
        strategy,
        provider.clone(),
        vec![echo()],
        user("When do deploys happen?"),
        CancellationToken::new(),
    )
    .await;
    check_invariants(&events);
    let requests = provider.requests();
    let find = |i: usize| {
        requests[i]
            .messages
            .iter()
            .find(|m| m.id == RETRIEVED_MESSAGE_ID)
            .map(Message::text)
    };
    assert_eq!(find(0), None, "the reason step gets no passages");
    assert_eq!(
        find(1).as_deref(),
        Some(
            "Retrieved passages. Cite them by number, like [1], when you use them.\n\n[1] handbook.md\nDeploys happen on Tuesdays."
        )
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::AgentCompletion(AgentCompletionEvent { final_answer, .. }) if final_answer.contains("[1]")))
    );
}
