//! Skills (seed 002): message ordering, argument validation, prompt
//! sanitising, scoping and event metadata.

mod common;

use agentloop_types::{StreamingStartEvent, ToolEndEvent, ToolStartEvent};
use std::sync::Arc;

use agentloop_engine::RunDeps;
use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::skills::{Skill, run_with_skills};
use agentloop_types::transcript::render_events;
use agentloop_types::{
    EventKind, LoopEvent, LoopOptions, LoopStatus, Message, ModelRequest, RequestOptions, Role,
    Tool,
};
use common::*;
use futures::StreamExt;
use serde_json::json;

const AGENT: &str = "You are a careful agent.";

fn options() -> LoopOptions {
    LoopOptions {
        request: RequestOptions {
            system_prompt: Some(AGENT.to_owned()),
            ..RequestOptions::default()
        },
        ..LoopOptions::default()
    }
}

async fn run_skills(
    provider: Arc<ScriptedProvider>,
    tools: Vec<Arc<dyn Tool>>,
    skills: &[Arc<Skill>],
    context: Vec<Message>,
) -> Vec<LoopEvent> {
    let deps = RunDeps::new(provider).with_tools(tools).with_run_id("run");
    run_with_skills(options(), context, deps, skills)
        .collect()
        .await
}

/// `role:id:text` per message, for compact ordering checks.
fn shape(request: &ModelRequest) -> Vec<String> {
    request
        .messages
        .iter()
        .map(|m| {
            let role = match m.role {
                Role::System => "system",
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            format!("{role}:{}:{}", m.id, m.text())
        })
        .collect()
}

fn tool_names(request: &ModelRequest) -> Vec<String> {
    request.tools.iter().map(|t| t.name.clone()).collect()
}

fn research() -> Arc<Skill> {
    Arc::new(
        Skill::new("research", "Find **facts** about the task.")
            .with_description("Looks things up")
            .with_tools([echo()]),
    )
}

#[tokio::test(start_paused = true)]
async fn root_order_is_agent_then_skill_list_then_user() {
    let provider = ScriptedProvider::new([ScriptedTurn::new().text("Hi")]);
    let events = run_skills(provider.clone(), vec![], &[research()], user("Hello")).await;
    check_invariants(&events);
    let requests = provider.requests();
    let shape = shape(&requests[0]);
    assert_eq!(shape.len(), 3);
    assert_eq!(shape[0], format!("system:agent-prompt:{AGENT}"));
    assert!(shape[1].starts_with("system:skills:"), "{}", shape[1]);
    assert!(shape[1].contains("- research: Looks things up"));
    assert!(
        !shape[1].contains("facts"),
        "the root list leaves skill prompts out"
    );
    assert_eq!(shape[2], "user:u1:Hello");
    assert_eq!(requests[0].options.system_prompt, None);
    assert_eq!(tool_names(&requests[0]), ["research"]);
    assert_eq!(
        requests[0].tools[0].input_schema["required"],
        json!(["task"])
    );
}

#[tokio::test(start_paused = true)]
async fn no_skills_no_list() {
    let provider = ScriptedProvider::new([ScriptedTurn::new().text("Hi")]);
    let events = run_skills(provider.clone(), vec![], &[], user("Hello")).await;
    check_invariants(&events);
    let shape = shape(&provider.requests()[0]);
    assert_eq!(
        shape,
        [
            format!("system:agent-prompt:{AGENT}"),
            "user:u1:Hello".into()
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn list_follows_an_agent_prompt_given_as_first_message() {
    let provider = ScriptedProvider::new([ScriptedTurn::new().text("Hi")]);
    let deps = RunDeps::new(provider.clone()).with_run_id("run");
    let context = vec![
        Message::system_text("sys", AGENT),
        Message::user_text("u1", "Hello"),
    ];
    let events: Vec<_> = run_with_skills(LoopOptions::default(), context, deps, &[research()])
        .collect()
        .await;
    check_invariants(&events);
    let shape = shape(&provider.requests()[0]);
    assert_eq!(shape[0], format!("system:sys:{AGENT}"));
    assert!(shape[1].starts_with("system:skills:"));
    assert_eq!(shape[2], "user:u1:Hello");
}

#[tokio::test(start_paused = true)]
async fn child_history_is_built_from_scratch() {
    let sub = Arc::new(Skill::new("summarise", "Summarise.").with_description("Shortens text"));
    let skill = Arc::new(
        Skill::new(
            "research",
            "<div>Find <b>facts</b>.</div><script>evil()</script>",
        )
        .with_skills([sub]),
    );
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call(
            "s1",
            "research",
            json!({"task": "Find the capital", "history": [
                {"role": "user", "content": "We talked about France."},
                {"role": "assistant", "content": "Yes, France."}
            ]}),
        ),
        ScriptedTurn::new().text("Paris"),
        ScriptedTurn::new().text("It is Paris."),
    ]);
    let context = vec![
        Message::user_text("old", "Earlier question"),
        Message::assistant_text("old-a", "Earlier answer"),
        Message::user_text("u1", "What is the capital of France?"),
    ];
    let events = run_skills(provider.clone(), vec![], &[skill], context).await;
    let result = check_invariants(&events);
    assert!(matches!(result.status, LoopStatus::Complete { .. }));
    let requests = provider.requests();
    assert_eq!(requests.len(), 3);
    let child = shape(&requests[1]);
    assert_eq!(
        child,
        [
            format!("system:run.s1-agent-prompt:{AGENT}"),
            "system:run.s1-skill-prompt:Find facts.\n\nSkills you can call:\n- summarise: Shortens text".to_owned(),
            "user:run.s1-history-1:We talked about France.".to_owned(),
            "assistant:run.s1-history-2:Yes, France.".to_owned(),
            "user:run.s1-task:Find the capital".to_owned(),
        ]
    );
    assert!(
        requests[1]
            .messages
            .iter()
            .all(|m| m.tool_uses().next().is_none() && !m.text().contains("Earlier")),
        "the child sees neither the parent conversation nor its call"
    );
    assert_eq!(tool_names(&requests[1]), ["summarise"]);
    // The parent gets the child's answer as the skill's result.
    let results: Vec<_> = result
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .collect();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].content, "Paris");
    assert!(!results[0].is_error);
}

#[tokio::test(start_paused = true)]
async fn invalid_args_error_without_child_cycle() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .tool_call("s1", "research", json!({"task": 42}))
            .tool_call("s2", "research", json!({"history": []}))
            .tool_call_raw("s3", "research", &["{\"task\": \"cut"]),
        ScriptedTurn::new().text("Sorry."),
    ]);
    let events = run_skills(provider.clone(), vec![], &[research()], user("Go")).await;
    let result = check_invariants(&events);
    assert_eq!(provider.requests().len(), 2, "no child model call");
    assert!(events.iter().all(|e| e.path.is_root()), "no child events");
    let results: Vec<_> = result
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .collect();
    assert_eq!(results.len(), 3);
    assert!(results.iter().all(|r| r.is_error));
    assert!(
        results[0]
            .content
            .contains("invalid arguments for skill research")
    );
    assert!(results[1].content.contains("missing field `task`"));
    let ends: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolEnd(ToolEndEvent {
                is_error, is_skill, ..
            }) => Some((*is_error, *is_skill)),
            _ => None,
        })
        .collect();
    assert_eq!(ends, [(true, true); 3]);
}

#[tokio::test(start_paused = true)]
async fn empty_prompt_after_sanitising_errors_at_call_time() {
    let blank = Arc::new(Skill::new("blank", "<p> </p><script>alert(1)</script>"));
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("s1", "blank", json!({"task": "do it"})),
        ScriptedTurn::new().text("It failed."),
    ]);
    let events = run_skills(provider.clone(), vec![], &[blank], user("Go")).await;
    let result = check_invariants(&events);
    assert_eq!(provider.requests().len(), 2, "no child model call");
    let error = result
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .next()
        .cloned()
        .unwrap();
    assert!(error.is_error);
    assert_eq!(
        error.content,
        "skill blank has an empty prompt once sanitised to markdown"
    );
}

#[tokio::test(start_paused = true)]
async fn child_tools_and_skills_are_scoped() {
    let inner = Arc::new(Skill::new("inner", "Inner work.").with_tools([failing()]));
    let unrelated = Arc::new(Skill::new("unrelated", "Other work."));
    let outer = Arc::new(
        Skill::new("outer", "Outer work.")
            .with_tools([echo()])
            .with_skills([inner]),
    );
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("s1", "outer", json!({"task": "go"})),
        // The child tries a root tool it was not given.
        ScriptedTurn::new()
            .tool_call("c1", "boom", json!({}))
            .tool_call("c2", "unrelated", json!({"task": "x"})),
        ScriptedTurn::new().text("done"),
        ScriptedTurn::new().text("all done"),
    ]);
    let events = run_skills(
        provider.clone(),
        vec![panicking()],
        &[outer, unrelated],
        user("Go"),
    )
    .await;
    check_invariants(&events);
    let requests = provider.requests();
    assert_eq!(tool_names(&requests[0]), ["boom", "outer", "unrelated"]);
    assert_eq!(tool_names(&requests[1]), ["echo", "inner"]);
    let child_results: Vec<_> = requests[2]
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .map(|r| (r.is_error, r.content.clone()))
        .collect();
    assert_eq!(
        child_results,
        [
            (
                true,
                "Unknown tool: boom. Available tools: echo, inner.".to_owned()
            ),
            (
                true,
                "Unknown tool: unrelated. Available tools: echo, inner.".to_owned()
            ),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn nested_skill_events_carry_depth_and_input() {
    let inner = Arc::new(Skill::new("inner", "Inner work.").with_tools([echo()]));
    let outer = Arc::new(Skill::new("outer", "Outer work.").with_skills([inner]));
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("s1", "outer", json!({"task": "outer task"})),
        ScriptedTurn::new().tool_call("s2", "inner", json!({"task": "inner task"})),
        ScriptedTurn::new().tool_call("e1", "echo", json!({"text": "deep"})),
        ScriptedTurn::new().text("inner done").usage(3, 1),
        ScriptedTurn::new().text("outer done").usage(2, 1),
        ScriptedTurn::new().text("root done").usage(1, 1),
    ]);
    let events = run_skills(provider, vec![], &[outer], user("Go")).await;
    check_invariants(&events);
    let starts: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolStart(ToolStartEvent {
                name,
                input,
                is_skill,
                depth,
                ..
            }) => Some((
                e.path.depth(),
                name.as_str(),
                *is_skill,
                *depth,
                input.value()["task"].clone(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        starts,
        [
            (0, "outer", true, 1, json!("outer task")),
            (1, "inner", true, 2, json!("inner task")),
            (2, "echo", false, 3, serde_json::Value::Null),
        ]
    );
    // Status events of the child cycles are still emitted.
    for depth in [1, 2] {
        assert!(events.iter().any(|e| e.path.depth() == depth
            && matches!(
                e.kind,
                EventKind::StreamingStart(StreamingStartEvent { .. })
            )));
    }
    insta::assert_snapshot!("nested_skills", render_events(&events));
}

/// The root run's output schema is not a skill's: the skill's child run
/// answers in prose, asked neither through `final_output` nor through the
/// request's response format, while the root run is still held to it.
#[tokio::test(start_paused = true)]
async fn a_skills_child_run_gets_no_output_schema() {
    let schema =
        agentloop_types::OutputSchema::new("city", json!({"type": "object", "required": ["name"]}));
    for api in [
        agentloop_types::ApiKind::OpenaiChat,
        agentloop_types::ApiKind::AnthropicMessages,
    ] {
        let root_answer = match api {
            agentloop_types::ApiKind::AnthropicMessages => ScriptedTurn::new().tool_call(
                "f1",
                agentloop_types::FINAL_OUTPUT_TOOL,
                json!({"name": "Oslo"}),
            ),
            _ => ScriptedTurn::new().text(r#"{"name": "Oslo"}"#),
        };
        let provider = ScriptedProvider::speaking(
            api,
            [
                ScriptedTurn::new().tool_call("s1", "research", json!({"task": "Find it"})),
                ScriptedTurn::new().text("Oslo, in prose."),
                root_answer,
            ],
        );
        let deps = RunDeps::new(provider.clone()).with_run_id("run");
        let options = LoopOptions {
            output_schema: Some(schema.clone()),
            ..options()
        };
        let events: Vec<LoopEvent> = run_with_skills(options, user("Where?"), deps, &[research()])
            .collect()
            .await;
        let result = check_invariants(&events);
        assert_eq!(
            result.status,
            LoopStatus::Complete {
                return_value: None,
                output: Some(json!({"name": "Oslo"})),
            },
            "{api:?}"
        );
        let requests = provider.requests();
        let child = &requests[1];
        assert_eq!(child.response_format, None, "{api:?}");
        assert_eq!(tool_names(child), ["echo"], "{api:?}");
        let root = &requests[0];
        match api {
            agentloop_types::ApiKind::AnthropicMessages => {
                assert_eq!(root.response_format, None);
                assert!(tool_names(root).contains(&"final_output".to_owned()));
            }
            _ => assert!(root.response_format.is_some()),
        }
    }
}
