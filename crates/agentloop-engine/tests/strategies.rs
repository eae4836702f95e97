//! Strategy selection, the small strategies, plan-and-execute and
//! superseded session runs.

mod common;

use agentloop_types::ToolStartEvent;
use std::collections::HashMap;
use std::sync::Arc;

use agentloop_engine::retrieval::{InMemoryRetriever, RETRIEVED_MESSAGE_ID};
use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::strategy::{
    LlmOnlyStrategy, NativeStrategy, PlanExecuteStrategy, ToolFirstStrategy, resolve_strategy_name,
};
use agentloop_engine::{LoopStrategy, RunDeps, SessionRuns, StrategyError, StrategyRegistry, run};
use agentloop_types::transcript::render_events;
use agentloop_types::{
    LoopEvent, LoopOptions, LoopStatus, ProviderError, ProviderErrorKind, RequestOptions, Tool,
};
use common::*;
use futures::StreamExt;
use serde_json::json;

async fn run_strategy(
    strategy: &dyn LoopStrategy,
    provider: Arc<ScriptedProvider>,
    tools: Vec<Arc<dyn Tool>>,
    text: &str,
) -> Vec<LoopEvent> {
    let deps = RunDeps::new(provider).with_tools(tools).with_run_id("run");
    strategy
        .run(LoopOptions::default(), user(text), deps)
        .collect()
        .await
}

#[test]
fn registry_names_and_unknown_name_error() {
    let registry = StrategyRegistry::default();
    assert_eq!(
        registry.names(),
        [
            "llm-only",
            "native",
            "plan-and-execute",
            "react",
            "tool-first"
        ]
    );
    for name in registry.names() {
        assert_eq!(registry.get(&name).map(|s| s.name().to_owned()), Ok(name));
    }
    let error = registry.get("reflexion").err().unwrap();
    assert!(matches!(error, StrategyError::Unknown { ref name, .. } if name == "reflexion"));
    assert_eq!(
        error.to_string(),
        "unknown loop strategy `reflexion`; valid strategies: llm-only, native, plan-and-execute, react, tool-first"
    );
    assert!(StrategyRegistry::empty().names().is_empty());
}

#[test]
fn strategy_name_precedence() {
    let mut settings = HashMap::new();
    assert_eq!(resolve_strategy_name(None, None, &settings), "native");
    settings.insert("agent.loop.strategy".to_owned(), "react".to_owned());
    assert_eq!(resolve_strategy_name(None, None, &settings), "react");
    assert_eq!(
        resolve_strategy_name(None, Some("tool-first"), &settings),
        "tool-first"
    );
    assert_eq!(
        resolve_strategy_name(Some(" llm-only "), Some("tool-first"), &settings),
        "llm-only"
    );
    assert_eq!(
        resolve_strategy_name(Some(""), Some("  "), &settings),
        "react",
        "blank values are skipped"
    );
}

#[tokio::test(start_paused = true)]
async fn llm_only_is_one_plain_call() {
    let provider = ScriptedProvider::new([ScriptedTurn::new().text("Hello.").usage(3, 1)]);
    let events = run_strategy(
        &LlmOnlyStrategy::default(),
        provider.clone(),
        vec![echo()],
        "Hi",
    )
    .await;
    let result = check_invariants(&events);
    assert_eq!(result.final_text().as_deref(), Some("Hello."));
    assert!(provider.requests()[0].tools.is_empty());
    insta::assert_snapshot!("llm_only", render_events(&events));
}

#[tokio::test(start_paused = true)]
async fn tool_first_acts_then_answers() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("t1", "echo", json!({"text": "42"})),
        ScriptedTurn::new().text("The tool said 42."),
    ]);
    let events = run_strategy(
        &ToolFirstStrategy::default(),
        provider.clone(),
        vec![echo()],
        "Ask the tool",
    )
    .await;
    let result = check_invariants(&events);
    assert_eq!(result.final_text().as_deref(), Some("The tool said 42."));
    assert!(provider.requests()[1].tools.is_empty());
    insta::assert_snapshot!("tool_first", render_events(&events));
}

#[tokio::test(start_paused = true)]
async fn plan_and_execute_replans_after_a_failed_step() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("p1", "agent_plan", json!({"steps": ["Echo a", "Echo b"]})),
        // Step 1: a native loop with a tool call.
        ScriptedTurn::new().tool_call("t1", "echo", json!({"text": "a"})),
        ScriptedTurn::new().text("a done"),
        // Step 2 fails.
        ScriptedTurn::new().error(ProviderError::new(ProviderErrorKind::Api, "overloaded")),
        // Re-plan, as plain text.
        ScriptedTurn::new().text("[\"Echo b again\"]"),
        ScriptedTurn::new().text("b done"),
        // The answer.
        ScriptedTurn::new().text("Both echoed."),
    ]);
    let events = run_strategy(
        &PlanExecuteStrategy::default(),
        provider.clone(),
        vec![echo()],
        "Echo a then b",
    )
    .await;
    let result = check_invariants(&events);
    assert!(matches!(result.status, LoopStatus::Complete { .. }));
    assert_eq!(result.final_text().as_deref(), Some("Both echoed."));
    assert_eq!(provider.remaining(), 0);
    insta::assert_snapshot!("plan_and_execute", render_events(&events));
}

#[tokio::test(start_paused = true)]
async fn plan_and_execute_gives_up_after_max_replans() {
    let failing = || ScriptedTurn::new().error(ProviderError::new(ProviderErrorKind::Api, "down"));
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().text("1. Only step"),
        failing(),
        ScriptedTurn::new().text("- Retry the step"),
        failing(),
    ]);
    let events = run_strategy(&PlanExecuteStrategy::default(), provider, vec![], "Do it").await;
    let result = check_invariants(&events);
    assert!(matches!(result.status, LoopStatus::Error { .. }));
}

#[tokio::test(start_paused = true)]
async fn native_without_retriever_is_the_engine_loop() {
    let turns = || {
        [
            ScriptedTurn::new().tool_call("t1", "echo", json!({"text": "x"})),
            ScriptedTurn::new().text("ok"),
        ]
    };
    let native = run_strategy(
        &NativeStrategy::default(),
        ScriptedProvider::new(turns()),
        vec![echo()],
        "go",
    )
    .await;
    let deps = RunDeps::new(ScriptedProvider::new(turns()))
        .with_tools([echo()])
        .with_run_id("run");
    let plain: Vec<_> = run(LoopOptions::default(), user("go"), deps)
        .collect()
        .await;
    assert_eq!(native, plain);
}

#[tokio::test(start_paused = true)]
async fn native_with_retriever_cites_passages_in_the_first_step() {
    let mut retriever = InMemoryRetriever::default();
    retriever.add("p1", "faq.md", "Refunds take five days.");
    let strategy = NativeStrategy {
        retriever: Some(Arc::new(retriever)),
        ..NativeStrategy::default()
    };
    let provider = ScriptedProvider::new([ScriptedTurn::new().text("Five days [1].")]);
    let events = run_strategy(
        &strategy,
        provider.clone(),
        vec![],
        "How long do refunds take?",
    )
    .await;
    let result = check_invariants(&events);
    let sent = &provider.requests()[0].messages;
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].id, RETRIEVED_MESSAGE_ID);
    assert!(
        sent[0]
            .text()
            .contains("[1] faq.md\nRefunds take five days.")
    );
    assert_eq!(sent[1].text(), "How long do refunds take?");
    assert_eq!(result.messages[0].id, RETRIEVED_MESSAGE_ID);
}

#[tokio::test(start_paused = true)]
async fn a_new_run_supersedes_the_old_one() {
    let runs = SessionRuns::new();
    let native = NativeStrategy::default();
    let slow = ScriptedProvider::new([ScriptedTurn::new().text("never").hang()]);
    let first = runs.start(
        "session-1",
        &native,
        LoopOptions::default(),
        user("first"),
        RunDeps::new(slow).with_run_id("first"),
    );
    let first = tokio::spawn(first.collect::<Vec<_>>());
    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    assert!(runs.is_active("session-1"));

    let fast = ScriptedProvider::new([ScriptedTurn::new().text("second answer")]);
    let second: Vec<_> = runs
        .start(
            "session-1",
            &native,
            LoopOptions::default(),
            user("second"),
            RunDeps::new(fast).with_run_id("second"),
        )
        .collect()
        .await;
    let first = first.await.unwrap();
    assert!(matches!(
        check_invariants(&first).status,
        LoopStatus::Cancelled
    ));
    assert!(matches!(
        check_invariants(&second).status,
        LoopStatus::Complete { .. }
    ));
    assert!(!runs.is_active("session-1"), "the finished run is released");

    // Other keys are independent, and cancel() stops a key's run.
    let other = ScriptedProvider::new([ScriptedTurn::new().hang()]);
    let stream = runs.start(
        "session-2",
        &native,
        LoopOptions::default(),
        user("x"),
        RunDeps::new(other),
    );
    let handle = tokio::spawn(stream.collect::<Vec<_>>());
    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    assert!(runs.cancel("session-2"));
    let events = handle.await.unwrap();
    assert!(matches!(
        check_invariants(&events).status,
        LoopStatus::Cancelled
    ));
    assert!(!runs.cancel("session-2"));

    // Dropping a run's stream releases its key.
    let stream = runs.start(
        "session-3",
        &native,
        LoopOptions::default(),
        user("x"),
        RunDeps::new(ScriptedProvider::new([ScriptedTurn::new().hang()])),
    );
    assert!(runs.is_active("session-3"));
    drop(stream);
    assert!(!runs.is_active("session-3"));
}

#[tokio::test(start_paused = true)]
async fn react_calls_skills_in_its_act_step() {
    use agentloop_engine::skills::{Skill, prepare};
    use agentloop_engine::strategy::ReactStrategy;
    use agentloop_types::EventKind;

    let skill = Arc::new(
        Skill::new("lookup", "Look the answer up.")
            .with_description("Finds facts")
            .with_tools([echo()]),
    );
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call(
            "r1",
            "agent_decide_next",
            json!({"message": "Use the lookup skill."}),
        ),
        ScriptedTurn::new().tool_call("s1", "lookup", json!({"task": "find it"})),
        // The skill's child cycle.
        ScriptedTurn::new().tool_call("e1", "echo", json!({"text": "found"})),
        ScriptedTurn::new().text("It is found."),
        // Observe.
        ScriptedTurn::new().tool_call(
            "o1",
            "agent_observe_decide",
            json!({"message": "Done.", "should_continue": false, "final_answer": "Found."}),
        ),
    ]);
    let deps = RunDeps::new(provider.clone()).with_run_id("run");
    let prepared = prepare(
        LoopOptions {
            request: RequestOptions {
                system_prompt: Some("Agent.".into()),
                ..RequestOptions::default()
            },
            ..LoopOptions::default()
        },
        user("Find it"),
        deps,
        &[skill],
    );
    let events: Vec<_> = ReactStrategy::default()
        .run(prepared.options, prepared.context, prepared.deps)
        .collect()
        .await;
    let result = check_invariants(&events);
    assert_eq!(result.final_text().as_deref(), Some("Found."));
    let starts: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolStart(ToolStartEvent {
                name,
                is_skill,
                depth,
                ..
            }) => Some((name.as_str(), *is_skill, *depth)),
            _ => None,
        })
        .collect();
    assert_eq!(starts, [("lookup", true, 1), ("echo", false, 2)]);
    let requests = provider.requests();
    assert_eq!(
        requests[0].messages[1].id, "skills",
        "the list follows the agent prompt"
    );
    assert_eq!(requests[2].messages[0].text(), "Agent.");
    assert_eq!(requests[2].messages.last().unwrap().text(), "find it");
}

#[tokio::test(start_paused = true)]
async fn strategies_respect_the_iteration_cap() {
    use agentloop_engine::strategy::ReactStrategy;
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("r1", "agent_decide_next", json!({"message": "echo"})),
        ScriptedTurn::new().tool_call("t1", "echo", json!({"text": "x"})),
    ]);
    let deps = RunDeps::new(provider.clone())
        .with_tools([echo()])
        .with_run_id("run");
    let options = LoopOptions {
        max_iterations: 2,
        ..LoopOptions::default()
    };
    let events: Vec<_> = ReactStrategy::default()
        .run(options, user("go"), deps)
        .collect()
        .await;
    let result = check_invariants(&events);
    assert!(matches!(result.status, LoopStatus::MaxIterations));
    assert_eq!(provider.requests().len(), 2);
}
