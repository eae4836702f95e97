//! Runs with an output schema: the answer is validated and carried as
//! `output`, sent back with its errors while retries remain, ends the run
//! `output_invalid` after them, and a refusal ends it `refused`. Both the
//! native request form and the `final_output` tool.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::{RunDeps, RunItem, resume, run};
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
        EventKind::Finished(FinishedEvent { result }) => result.clone(),
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
    let provider = ScriptedProvider::speaking(ApiKind::OpenaiChat, [ScriptedTurn::new()
        .text_chunks(&[r#"{"name":"Oslo","#, r#""population":709000}"#])
        .usage(10, 8)]);
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
    let provider = ScriptedProvider::speaking(ApiKind::OpenaiResponses, [
        ScriptedTurn::new()
            .text(r#"{"name":"Oslo","population":"about 700k"}"#)
            .usage(10, 8),
        ScriptedTurn::new().text(OSLO).usage(30, 8),
    ]);
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
    let feedback = requests[1].messages.last().unwrap();
    assert_eq!(feedback.role, Role::User);
    let text = feedback.text();
    assert!(text.contains("`city`"), "{text}");
    assert!(text.contains("/population"), "{text}");
}

#[tokio::test(start_paused = true)]
async fn native_never_valid_ends_output_invalid_with_the_last_answer() {
    let provider = ScriptedProvider::speaking(ApiKind::Gemini, [
        ScriptedTurn::new().text("Oslo, I think.").usage(10, 4),
        ScriptedTurn::new().text(r#"{"name":"Oslo"}"#).usage(20, 4),
    ]);
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
    let provider = ScriptedProvider::speaking(ApiKind::OpenaiChat, [ScriptedTurn::new()
        .text("I cannot help with that.")
        .stop(StopReason::Refusal {
            details: Some(details.clone()),
        })
        .usage(10, 6)]);
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
    let provider = ScriptedProvider::speaking(ApiKind::OpenaiChat, [
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
    ]);
    let events = run_events(
        provider.clone(),
        vec![echo()],
        options(city_schema().with_mode(OutputMode::Tool),
        ),
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
    let provider = ScriptedProvider::speaking(ApiKind::OpenaiChat, [
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
    ]);
    let events = run_events(
        provider.clone(),
        vec![echo()],
        options(city_schema().with_mode(OutputMode::Tool),
        ),
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
    let provider = ScriptedProvider::speaking(ApiKind::AnthropicMessages, [ScriptedTurn::new()
        .tool_call(
            "t1",
            FINAL_OUTPUT_TOOL,
            json!({"name": "Oslo", "population": 709000}),
        )
        .usage(10, 9)]);
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
        RunDeps::new(ScriptedProvider::speaking(ApiKind::OpenaiChat, turns.clone())).with_run_id("run"),
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
        let provider = ScriptedProvider::speaking(ApiKind::OpenaiChat, turns[calls_done..].to_vec());
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
