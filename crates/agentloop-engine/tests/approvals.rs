//! A person in the loop: calls held for approval, decisions that resume
//! the run in place, questions answered, nested runs' calls surfacing on
//! the root, cancelling while waiting. Pinned as readable snapshots.

mod common;

use std::sync::Arc;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::skills::{Skill, prepare};
use agentloop_engine::{RunDeps, cancel_waiting, decide};
use agentloop_types::transcript::render_events;
use agentloop_types::{
    ApprovalPolicy, ArgumentMatch, CancellationToken, Decision, DecisionError, Decisions,
    LoopEvent, LoopOptions, LoopStatus, Tool,
};
use common::*;
use futures::StreamExt;
use serde_json::{Value, json};

fn snapshot(name: &str, events: &[LoopEvent]) -> agentloop_types::LoopResult {
    let result = check_invariants(events);
    insta::assert_snapshot!(name, render_events(events));
    result
}

fn decisions<const N: usize>(items: [(&str, Decision); N]) -> Decisions {
    items
        .into_iter()
        .map(|(id, d)| (id.to_owned(), d))
        .collect()
}

fn approve() -> Decision {
    Decision::Approve { arguments: None }
}

async fn start(
    provider: &Arc<ScriptedProvider>,
    tools: &[Arc<dyn Tool>],
    options: &LoopOptions,
) -> Vec<LoopEvent> {
    run_events(
        provider.clone(),
        tools.to_vec(),
        options.clone(),
        user("go"),
        CancellationToken::new(),
    )
    .await
}

#[tokio::test(start_paused = true)]
async fn one_approval_suspends_then_the_call_runs() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("w1", "write", json!({"path": "a.txt"})),
        ScriptedTurn::new().text("Written."),
    ]);
    let (write, seen) = writer();
    let tools = vec![write];
    let options = LoopOptions::default();
    let events = start(&provider, &tools, &options).await;
    let suspended = snapshot("approval_one", &events);
    assert!(
        seen.lock().unwrap().is_empty(),
        "nothing runs before approval"
    );
    let (pending, state) = suspension(&suspended);
    assert_eq!(pending.len(), 1);

    let events = decide_events(
        provider.clone(),
        tools,
        options,
        state,
        decisions([("w1", approve())]),
    )
    .await;
    let done = snapshot("approval_one_approved", &events);
    assert_eq!(done.final_text().as_deref(), Some("Written."));
    assert_eq!(*seen.lock().unwrap(), vec![json!({"path": "a.txt"})]);
    assert_eq!(
        results_sent(&provider, 1),
        vec![("wrote a.txt".to_owned(), false)]
    );
}

#[tokio::test(start_paused = true)]
async fn free_calls_run_and_every_held_call_waits_in_call_order() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .tool_call("t1", "echo", json!({"text": "one"}))
            .tool_call("w1", "write", json!({"path": "a"}))
            .tool_call("t2", "echo", json!({"text": "two"}))
            .tool_call("w2", "write", json!({"path": "b"})),
        ScriptedTurn::new().text("Done."),
    ]);
    let (write, seen) = writer();
    let tools = vec![echo(), write];
    let options = LoopOptions::default();
    let events = start(&provider, &tools, &options).await;
    let suspended = snapshot("approval_mixed", &events);
    let (pending, state) = suspension(&suspended);
    let ids: Vec<&str> = pending.iter().map(|p| p.call.id.as_str()).collect();
    assert_eq!(ids, ["w1", "w2"]);

    let reject = Decision::Reject {
        reason: "not b, use c".into(),
    };
    let events = decide_events(
        provider.clone(),
        tools,
        options,
        state,
        decisions([("w1", approve()), ("w2", reject)]),
    )
    .await;
    snapshot("approval_mixed_decided", &events);
    assert_eq!(*seen.lock().unwrap(), vec![json!({"path": "a"})]);
    assert_eq!(
        results_sent(&provider, 1),
        vec![
            ("one".to_owned(), false),
            ("wrote a".to_owned(), false),
            ("two".to_owned(), false),
            ("The user rejected this call: not b, use c".to_owned(), true),
        ],
        "results in call order; the model reads the reason"
    );
}

#[tokio::test(start_paused = true)]
async fn edited_arguments_run_and_the_model_is_told() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("w1", "write", json!({"path": "/etc/passwd"})),
        ScriptedTurn::new().text("Ok."),
    ]);
    let (write, seen) = writer();
    let tools = vec![write];
    let options = LoopOptions::default();
    let suspended = check_invariants(&start(&provider, &tools, &options).await);
    let (_, state) = suspension(&suspended);
    let edited = Decision::Approve {
        arguments: Some(json!({"path": "notes.txt"})),
    };
    let events = decide_events(
        provider.clone(),
        tools,
        options,
        state,
        decisions([("w1", edited)]),
    )
    .await;
    snapshot("approval_edited", &events);
    assert_eq!(*seen.lock().unwrap(), vec![json!({"path": "notes.txt"})]);
    let (text, is_error) = &results_sent(&provider, 1)[0];
    assert!(!is_error);
    assert!(
        text.contains(r#"edited the arguments before this call ran: {"path":"notes.txt"}"#),
        "{text}"
    );
}

#[tokio::test(start_paused = true)]
async fn approve_always_covers_the_rest_of_the_run() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("w1", "write", json!({"path": "a"})),
        ScriptedTurn::new().tool_call("w2", "write", json!({"path": "b"})),
        ScriptedTurn::new().text("Both written."),
    ]);
    let (write, seen) = writer();
    let tools = vec![write];
    let options = LoopOptions::default();
    let suspended = check_invariants(&start(&provider, &tools, &options).await);
    let (_, state) = suspension(&suspended);
    let events = decide_events(
        provider.clone(),
        tools,
        options,
        state,
        decisions([("w1", Decision::ApproveAlways)]),
    )
    .await;
    let done = snapshot("approval_always", &events);
    assert!(matches!(done.status, LoopStatus::Complete { .. }));
    assert_eq!(seen.lock().unwrap().len(), 2, "w2 ran without asking");
}

#[tokio::test(start_paused = true)]
async fn run_options_override_the_tools_defaults() {
    let turn = || {
        ScriptedTurn::new()
            .tool_call("t1", "echo", json!({"text": "x"}))
            .tool_call("w1", "write", json!({"path": "a"}))
    };
    // `"*": never` lets every call run.
    let provider = ScriptedProvider::new([turn(), ScriptedTurn::new().text("ok")]);
    let (write, _) = writer();
    let mut options = LoopOptions::default();
    options.approvals.insert("*".into(), ApprovalPolicy::Never);
    let result = check_invariants(&start(&provider, &[echo(), write.clone()], &options).await);
    assert!(matches!(result.status, LoopStatus::Complete { .. }));

    // A named entry wins over `*`: echo waits, write does not.
    let provider = ScriptedProvider::new([turn(), ScriptedTurn::new().text("ok")]);
    options.approvals.insert(
        "echo".into(),
        ApprovalPolicy::When(ArgumentMatch {
            pointer: "/text".into(),
            any_of: vec![json!("x")],
            command_prefixes: Vec::new(),
        }),
    );
    let result = check_invariants(&start(&provider, &[echo(), write], &options).await);
    let (pending, _) = suspension(&result);
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].call.id, "t1");
}

#[tokio::test(start_paused = true)]
async fn cancelling_while_waiting_closes_every_pending_call() {
    let provider = ScriptedProvider::new([ScriptedTurn::new()
        .tool_call("t1", "echo", json!({"text": "one"}))
        .tool_call("w1", "write", json!({"path": "a"}))
        .tool_call("q1", "ask_user", json!({"question": "Sure?"}))]);
    let (write, seen) = writer();
    let tools = vec![echo(), write, asking()];
    let options = LoopOptions::default();
    let suspended = snapshot(
        "approval_and_question",
        &start(&provider, &tools, &options).await,
    );
    let (pending, state) = suspension(&suspended);
    assert_eq!(pending.len(), 2, "the approval and the question");

    let deps = RunDeps::new(provider.clone()).with_tools(tools);
    let events: Vec<LoopEvent> = cancel_waiting(options, state, deps)
        .unwrap()
        .collect()
        .await;
    let cancelled = snapshot("approval_cancelled", &events);
    assert!(matches!(cancelled.status, LoopStatus::Cancelled));
    assert!(seen.lock().unwrap().is_empty());
    assert_eq!(
        provider.requests().len(),
        1,
        "no model call after the cancel"
    );
}

#[tokio::test(start_paused = true)]
async fn decisions_that_do_not_fit_are_refused_before_anything_runs() {
    let provider = ScriptedProvider::new([ScriptedTurn::new()
        .tool_call("w1", "write", json!({"path": "a"}))
        .tool_call("q1", "ask_user", json!({"question": "Sure?"}))]);
    let (write, seen) = writer();
    let tools = vec![write, asking()];
    let options = LoopOptions::default();
    let suspended = check_invariants(&start(&provider, &tools, &options).await);
    let (_, state) = suspension(&suspended);
    let attempt = |d: Decisions| {
        let deps = RunDeps::new(provider.clone()).with_tools(tools.clone());
        decide(options.clone(), state.clone(), d, deps).err()
    };
    assert_eq!(
        attempt(decisions([("w1", approve())])),
        Some(DecisionError::Missing {
            ids: vec!["q1".into()]
        })
    );
    assert!(matches!(
        attempt(decisions([("w1", approve()), ("q1", approve())])),
        Some(DecisionError::Unfit { .. })
    ));
    assert!(matches!(
        attempt(decisions([("zz", approve())])),
        Some(DecisionError::UnknownCall { .. })
    ));
    assert!(seen.lock().unwrap().is_empty());
    // A run that does not wait takes no decisions.
    let provider = ScriptedProvider::new([ScriptedTurn::new().text("hi")]);
    let done = check_invariants(&start(&provider, &[], &options).await);
    let deps = RunDeps::new(provider.clone());
    let state = agentloop_types::RunState::new("r", done.messages);
    assert_eq!(
        decide(options.clone(), state, Decisions::new(), deps).err(),
        Some(DecisionError::NotWaiting)
    );
}

#[tokio::test(start_paused = true)]
async fn a_skills_call_surfaces_on_the_root_and_resumes_the_skill_in_place() {
    // Root: calls the skill. Skill: calls write, then answers. Root answers.
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("s1", "notes", json!({"task": "write it down"})),
        ScriptedTurn::new().tool_call("w1", "write", json!({"path": "n.txt"})),
        ScriptedTurn::new().text("Noted in n.txt."),
        ScriptedTurn::new().text("The skill wrote the note."),
    ]);
    let (write, seen) = writer();
    let skill = Arc::new(
        Skill::new("notes", "Write notes.")
            .with_description("Keeps notes")
            .with_tools([write]),
    );
    let options = LoopOptions::default();
    let prepared = prepare(
        options.clone(),
        user("take a note"),
        RunDeps::new(provider.clone()).with_run_id("run"),
        std::slice::from_ref(&skill),
    );
    let tools = prepared.deps.tools.clone();
    let events: Vec<LoopEvent> =
        agentloop_engine::run(prepared.options.clone(), prepared.context, prepared.deps)
            .collect()
            .await;
    let suspended = snapshot("approval_nested", &events);
    let (pending, state) = suspension(&suspended);
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].call.id, "w1");
    assert_eq!(pending[0].path.0, vec!["s1".to_owned()]);
    assert!(seen.lock().unwrap().is_empty());

    let events = decide_events(
        provider.clone(),
        tools,
        prepared.options,
        state,
        decisions([("w1", approve())]),
    )
    .await;
    let done = snapshot("approval_nested_approved", &events);
    assert_eq!(
        done.final_text().as_deref(),
        Some("The skill wrote the note.")
    );
    assert_eq!(seen.lock().unwrap().len(), 1, "the write ran once");
    // The skill went on in place: its second request holds its own call
    // and the write's result, and the root saw only the skill's answer.
    let requests = provider.requests();
    assert_eq!(requests.len(), 4);
    let skill_results: Vec<String> = requests[2]
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .map(|r| r.content.clone())
        .collect();
    assert_eq!(skill_results, vec!["wrote n.txt".to_owned()]);
    assert_eq!(
        results_sent(&provider, 3),
        vec![("Noted in n.txt.".to_owned(), false)]
    );
}

#[tokio::test(start_paused = true)]
async fn a_plan_step_that_waits_resumes_in_place() {
    use agentloop_engine::LoopStrategy;
    use agentloop_engine::strategy::PlanExecuteStrategy;
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("p1", "agent_plan", json!({"steps": ["Write a"]})),
        ScriptedTurn::new().tool_call("w1", "write", json!({"path": "a"})),
        ScriptedTurn::new().text("Step done."),
        ScriptedTurn::new().text("All written."),
    ]);
    let (write, seen) = writer();
    let deps = RunDeps::new(provider.clone())
        .with_tools([write.clone()])
        .with_run_id("run");
    let events: Vec<LoopEvent> = PlanExecuteStrategy::default()
        .run(LoopOptions::default(), user("write a"), deps)
        .collect()
        .await;
    let suspended = snapshot("approval_plan_step", &events);
    let (_, state) = suspension(&suspended);
    let events = decide_events(
        provider.clone(),
        vec![write],
        LoopOptions::default(),
        state,
        decisions([("w1", approve())]),
    )
    .await;
    let done = snapshot("approval_plan_step_approved", &events);
    assert_eq!(done.final_text().as_deref(), Some("All written."));
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[test]
fn a_suspended_result_round_trips_as_json() {
    let value: Value = json!({
        "status": "suspended",
        "pending": [{"call": {"id": "w1", "name": "write", "input": {}}, "kind": "approval", "reason": "r"}],
        "messages": [],
        "tokens": {}
    });
    let result: agentloop_types::LoopResult = serde_json::from_value(value.clone()).unwrap();
    let LoopStatus::Suspended { pending, state } = &result.status else {
        panic!("{result:?}");
    };
    assert_eq!(pending[0].call.id, "w1");
    assert!(state.is_none());
}
