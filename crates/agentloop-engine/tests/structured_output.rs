//! Runs with an output schema: the answer is validated and carried as
//! `output`, sent back with its errors while retries remain, ends the run
//! `output_invalid` after them, and a refusal ends it `refused`. Both the
//! native request form and the `final_output` tool.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::strategy::{
    LlmOnlyStrategy, NATIVE, PlanExecuteStrategy, ReactStrategy, ToolFirstStrategy,
};
use agentloop_engine::{LoopStrategy, RunDeps, RunItem, check_output_schema, collect, resume, run};
use agentloop_types::transcript::render_events;
use agentloop_types::{
    ApiKind, CancellationToken, EventKind, FINAL_OUTPUT_TOOL, LoopError, LoopEvent, LoopOptions,
    LoopResult, LoopStatus, OutputMode, OutputSchema, RefusalDetails, Role, StopReason,
};
use agentloop_types::{FinishedEvent, RunState, StreamingChunkEvent};
use common::*;
use futures::StreamExt;
use serde_json::{Value, json};

fn city_schema() -> OutputSchema {
    OutputSchema::new(
        "city",
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "population": {"type": "integer", "minimum": 0}
            },
            "required": ["name", "population"],
            "additionalProperties": false
        }),
    )
}

fn options(schema: OutputSchema) -> LoopOptions {
    LoopOptions {
        output_schema: Some(schema),
        ..LoopOptions::default()
    }
}

fn result(events: &[LoopEvent]) -> LoopResult {
    match &events.last().expect("a terminal event").kind {
        EventKind::Finished(FinishedEvent { result }) => LoopResult::clone(result),
        other => panic!("last event is {other:?}"),
    }
}

fn output(events: &[LoopEvent]) -> Value {
    match result(events).status {
        LoopStatus::Complete {
            output: Some(output),
            return_value: None,
        } => output,
        other => panic!("not a completed run with output: {other:?}"),
    }
}

fn snapshot(name: &str, events: &[LoopEvent]) {
    check_invariants(events);
    insta::assert_snapshot!(name, render_events(events));
}

const OSLO: &str = r#"{"name":"Oslo","population":709000}"#;

#[tokio::test(start_paused = true)]
async fn native_valid_answer_becomes_output() {
    let provider = ScriptedProvider::speaking(
        ApiKind::OpenaiChat,
        [ScriptedTurn::new()
            .text_chunks(&[r#"{"name":"Oslo","#, r#""population":709000}"#])
            .usage(10, 8)],
    );
    let events = run_events(
        provider.clone(),
        vec![echo()],
        options(city_schema()),
        user("The capital of Norway?"),
        CancellationToken::new(),
    )
    .await;
    snapshot("native_valid", &events);
    assert_eq!(
        output(&events),
        json!({"name": "Oslo", "population": 709000})
    );
    let requests = provider.requests();
    assert_eq!(
        requests[0].response_format.as_deref(),
        Some(&city_schema().response_format()),
        "the provider is asked for its native form"
    );
    let names: Vec<_> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["echo"], "no final_output tool in native mode");
}

#[tokio::test(start_paused = true)]
async fn native_invalid_then_valid_sends_the_errors_back() {
    let provider = ScriptedProvider::speaking(
        ApiKind::OpenaiResponses,
        [
            ScriptedTurn::new()
                .text(r#"{"name":"Oslo","population":"about 700k"}"#)
                .usage(10, 8),
            ScriptedTurn::new().text(OSLO).usage(30, 8),
        ],
    );
    let events = run_events(
        provider.clone(),
        vec![],
        options(city_schema()),
        user("The capital of Norway?"),
        CancellationToken::new(),
    )
    .await;
    snapshot("native_invalid_then_valid", &events);
    assert_eq!(
        output(&events),
        json!({"name": "Oslo", "population": 709000})
    );
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    let history = common::check_invariants(&events).messages;
    common::check_recorded_requests(&events, &requests, &history);
    let feedback = requests[1].messages.last().unwrap();
    assert_eq!(feedback.role, Role::User);
    let text = feedback.text();
    assert!(text.contains("`city`"), "{text}");
    assert!(text.contains("/population"), "{text}");
}

#[tokio::test(start_paused = true)]
async fn native_never_valid_ends_output_invalid_with_the_last_answer() {
    let provider = ScriptedProvider::speaking(
        ApiKind::Gemini,
        [
            ScriptedTurn::new().text("Oslo, I think.").usage(10, 4),
            ScriptedTurn::new().text(r#"{"name":"Oslo"}"#).usage(20, 4),
        ],
    );
    let events = run_events(
        provider.clone(),
        vec![],
        options(city_schema().with_max_retries(1)),
        user("The capital of Norway?"),
        CancellationToken::new(),
    )
    .await;
    snapshot("native_never_valid", &events);
    let LoopStatus::Error {
        error: LoopError::OutputInvalid { answer, errors },
    } = result(&events).status
    else {
        panic!("not output_invalid");
    };
    assert_eq!(answer, r#"{"name":"Oslo"}"#);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("population"), "{errors:?}");
    assert_eq!(provider.requests().len(), 2, "one retry, then the end");
    assert_eq!(provider.remaining(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_refusal_is_a_refusal_not_invalid_output() {
    let details = RefusalDetails {
        category: Some("cyber".into()),
        explanation: Some("I cannot help with that.".into()),
    };
    let provider = ScriptedProvider::speaking(
        ApiKind::OpenaiChat,
        [ScriptedTurn::new()
            .text("I cannot help with that.")
            .stop(StopReason::Refusal {
                details: Some(details.clone()),
            })
            .usage(10, 6)],
    );
    let events = run_events(
        provider.clone(),
        vec![],
        options(city_schema()),
        user("Something not allowed"),
        CancellationToken::new(),
    )
    .await;
    snapshot("refusal", &events);
    assert_eq!(
        result(&events).status,
        LoopStatus::Error {
            error: LoopError::Refused {
                details: Some(details)
            }
        }
    );
    assert_eq!(provider.requests().len(), 1, "a refusal is not retried");
}

#[tokio::test(start_paused = true)]
async fn tool_mode_final_output_call_ends_the_run_with_its_input() {
    let provider = ScriptedProvider::speaking(
        ApiKind::OpenaiChat,
        [
            ScriptedTurn::new()
                .tool_call("t1", "echo", json!({"text": "Oslo"}))
                .usage(10, 5),
            ScriptedTurn::new()
                .text("Here it is.")
                .tool_call(
                    "t2",
                    FINAL_OUTPUT_TOOL,
                    json!({"name": "Oslo", "population": 709000}),
                )
                .usage(20, 9),
        ],
    );
    let events = run_events(
        provider.clone(),
        vec![echo()],
        options(city_schema().with_mode(OutputMode::Tool)),
        user("The capital of Norway?"),
        CancellationToken::new(),
    )
    .await;
    snapshot("tool_mode_valid", &events);
    assert_eq!(
        output(&events),
        json!({"name": "Oslo", "population": 709000})
    );
    let requests = provider.requests();
    for request in &requests {
        assert_eq!(request.response_format, None, "no native form");
        let final_tool = request
            .tools
            .iter()
            .find(|t| t.name == FINAL_OUTPUT_TOOL)
            .expect("final_output offered");
        assert_eq!(*final_tool.input_schema, city_schema().schema);
    }
    // The final_output call streamed its arguments like any call.
    assert!(events.iter().any(|e| matches!(
        &e.kind,
        EventKind::StreamingChunk(StreamingChunkEvent {
            delta: agentloop_types::StreamDelta::ToolInput { .. }
        })
    )));
}

#[tokio::test(start_paused = true)]
async fn tool_mode_invalid_input_is_answered_with_the_errors_then_retried() {
    let provider = ScriptedProvider::speaking(
        ApiKind::OpenaiChat,
        [
            ScriptedTurn::new()
                .tool_call(
                    "t1",
                    FINAL_OUTPUT_TOOL,
                    json!({"name": "Oslo", "population": -1}),
                )
                .tool_call("t2", "echo", json!({"text": "x"}))
                .usage(10, 9),
            ScriptedTurn::new()
                .tool_call(
                    "t3",
                    FINAL_OUTPUT_TOOL,
                    json!({"name": "Oslo", "population": 709000}),
                )
                .usage(20, 9),
        ],
    );
    let events = run_events(
        provider.clone(),
        vec![echo()],
        options(city_schema().with_mode(OutputMode::Tool)),
        user("The capital of Norway?"),
        CancellationToken::new(),
    )
    .await;
    snapshot("tool_mode_invalid_then_valid", &events);
    assert_eq!(
        output(&events),
        json!({"name": "Oslo", "population": 709000})
    );
    let messages = &provider.requests()[1].messages;
    let results = messages.last().unwrap();
    let text = serde_json::to_string(results).unwrap();
    assert!(text.contains("/population"), "{text}");
    assert!(text.contains("Not run"), "{text}");
}

#[tokio::test(start_paused = true)]
async fn anthropic_uses_the_final_output_tool_in_native_mode() {
    let provider = ScriptedProvider::speaking(
        ApiKind::AnthropicMessages,
        [ScriptedTurn::new()
            .tool_call(
                "t1",
                FINAL_OUTPUT_TOOL,
                json!({"name": "Oslo", "population": 709000}),
            )
            .usage(10, 9)],
    );
    let events = run_events(
        provider.clone(),
        vec![],
        options(city_schema()),
        user("The capital of Norway?"),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(
        output(&events),
        json!({"name": "Oslo", "population": 709000})
    );
    let request = &provider.requests()[0];
    assert_eq!(request.response_format, None);
    assert_eq!(request.tools[0].name, FINAL_OUTPUT_TOOL);
}

#[tokio::test(start_paused = true)]
async fn a_run_without_a_schema_has_no_output() {
    let provider = ScriptedProvider::new([ScriptedTurn::new().text(OSLO).usage(1, 1)]);
    let events = run_events(
        provider,
        vec![],
        LoopOptions::default(),
        user("Hi"),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(
        result(&events).status,
        LoopStatus::Complete {
            return_value: None,
            output: None
        }
    );
}

#[tokio::test(start_paused = true)]
async fn a_resumed_run_keeps_its_retry_count() {
    let turns = vec![
        ScriptedTurn::new().text("Oslo").usage(10, 1),
        ScriptedTurn::new().text(r#"{"name":"Oslo"}"#).usage(10, 1),
    ];
    let options = options(city_schema().with_max_retries(1));
    let full: Vec<RunItem> = run(
        options.clone(),
        user("The capital of Norway?"),
        RunDeps::new(ScriptedProvider::speaking(
            ApiKind::OpenaiChat,
            turns.clone(),
        ))
        .with_run_id("run"),
    )
    .with_checkpoints()
    .collect()
    .await;
    let finished = |items: &[RunItem]| {
        items
            .iter()
            .find_map(|item| match item {
                RunItem::Event(event) => event.root_result().cloned(),
                RunItem::Checkpoint(_) => None,
            })
            .unwrap()
    };
    let expected = finished(&full);
    assert!(matches!(
        expected.status,
        LoopStatus::Error {
            error: LoopError::OutputInvalid { .. }
        }
    ));
    let mut resumed_runs = 0;
    for (at, item) in full.iter().enumerate() {
        let RunItem::Checkpoint(state) = item else {
            continue;
        };
        let calls_done = full[..at]
            .iter()
            .filter(|i| matches!(i, RunItem::Event(e) if matches!(e.kind, EventKind::StreamingStart(_))))
            .count();
        let stored: RunState =
            serde_json::from_str(&serde_json::to_string(state).unwrap()).unwrap();
        let provider =
            ScriptedProvider::speaking(ApiKind::OpenaiChat, turns[calls_done..].to_vec());
        let events: Vec<LoopEvent> =
            resume(options.clone(), stored, RunDeps::new(provider.clone()))
                .collect()
                .await;
        assert_eq!(result(&events), expected, "resumed at item {at}");
        assert_eq!(provider.remaining(), 0, "resumed at item {at}");
        resumed_runs += 1;
    }
    assert!(resumed_runs >= 2, "a checkpoint before each model call");
}

/// Only the native strategy can hold its answer to a schema. A run of any
/// other that asks for one ends at once with the typed error — no model
/// request, one terminal event — and the engine's check says the same
/// before a run starts.
#[tokio::test(start_paused = true)]
async fn other_strategies_refuse_an_output_schema() {
    let strategies: Vec<Box<dyn LoopStrategy>> = vec![
        Box::new(ReactStrategy::default()),
        Box::new(LlmOnlyStrategy::default()),
        Box::new(ToolFirstStrategy::default()),
        Box::new(PlanExecuteStrategy::default()),
    ];
    for strategy in strategies {
        let name = strategy.name().to_owned();
        let refused = LoopError::OutputSchemaUnsupported {
            strategy: name.clone(),
        };
        let provider =
            ScriptedProvider::speaking(ApiKind::OpenaiChat, [ScriptedTurn::new().text(OSLO)]);
        let events: Vec<LoopEvent> = strategy
            .run(
                options(city_schema()),
                user("The capital of Norway?"),
                RunDeps::new(provider.clone()),
            )
            .collect()
            .await;
        check_invariants(&events);
        assert_eq!(events.len(), 1, "{name}: only the terminal event");
        assert_eq!(
            result(&events).status,
            LoopStatus::Error {
                error: refused.clone()
            },
            "{name}"
        );
        assert!(provider.requests().is_empty(), "{name}: no request");
        assert_eq!(
            check_output_schema(&name, &options(city_schema())),
            Err(refused)
        );
        assert_eq!(check_output_schema(&name, &LoopOptions::default()), Ok(()));
    }
    assert_eq!(check_output_schema(NATIVE, &options(city_schema())), Ok(()));
    assert_eq!(
        LoopError::OutputSchemaUnsupported {
            strategy: "react".into()
        }
        .to_string(),
        "an output schema needs the native strategy; the react strategy cannot hold its \
         answer to one"
    );
}

/// The rule holds for a stored run too: a react state resumed with an
/// output schema is refused and left as it was, and goes on without one.
#[tokio::test(start_paused = true)]
async fn a_resumed_run_of_another_strategy_refuses_an_output_schema() {
    let reason = ScriptedTurn::new().tool_call(
        "r1",
        "agent_decide_next",
        json!({"message": "I know it.", "final_answer": "Oslo"}),
    );
    let mut items = ReactStrategy::default()
        .run(
            LoopOptions::default(),
            user("The capital of Norway?"),
            RunDeps::new(ScriptedProvider::new([reason.clone()])),
        )
        .with_checkpoints();
    let state = loop {
        if let Some(RunItem::Checkpoint(state)) = items.next().await {
            break state;
        }
    };
    drop(items);
    let provider = ScriptedProvider::speaking(ApiKind::OpenaiChat, [reason.clone()]);
    let events: Vec<LoopEvent> = resume(
        options(city_schema()),
        state.clone(),
        RunDeps::new(provider.clone()),
    )
    .collect()
    .await;
    assert_eq!(events.len(), 1);
    assert_eq!(
        result(&events).status,
        LoopStatus::Error {
            error: LoopError::OutputSchemaUnsupported {
                strategy: "react".into()
            }
        }
    );
    assert!(provider.requests().is_empty());
    let done = collect(resume(
        LoopOptions::default(),
        state,
        RunDeps::new(ScriptedProvider::new([reason])),
    ))
    .await;
    assert_eq!(done.final_text().as_deref(), Some("Oslo"));
}

/// Which form the schema is asked in follows the provider's API, not an
/// option: the same options ask natively over OpenAI Chat and through
/// `final_output` over a provider that names no API.
#[tokio::test(start_paused = true)]
async fn the_form_follows_the_providers_api() {
    let native = ScriptedProvider::speaking(ApiKind::OpenaiChat, [ScriptedTurn::new().text(OSLO)]);
    let result = collect(run(
        options(city_schema()),
        user("The capital of Norway?"),
        RunDeps::new(native.clone()),
    ))
    .await;
    assert!(matches!(
        result.status,
        LoopStatus::Complete {
            output: Some(_),
            ..
        }
    ));
    assert!(native.requests()[0].response_format.is_some());
    assert!(native.requests()[0].tools.is_empty());

    let call = ScriptedTurn::new().tool_call(
        "t1",
        FINAL_OUTPUT_TOOL,
        json!({"name": "Oslo", "population": 709000}),
    );
    let unnamed = ScriptedProvider::new([call]);
    let result = collect(run(
        options(city_schema()),
        user("The capital of Norway?"),
        RunDeps::new(unnamed.clone()),
    ))
    .await;
    assert!(matches!(
        result.status,
        LoopStatus::Complete {
            output: Some(_),
            ..
        }
    ));
    assert_eq!(unnamed.requests()[0].response_format, None);
    assert_eq!(unnamed.requests()[0].tools[0].name, FINAL_OUTPUT_TOOL);
}
