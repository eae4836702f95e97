//! Stream shapes the recordings do not cover, from the APIs' documented
//! formats: several tool calls, refusals, reasoning text from compatible
//! servers, stop reasons, Responses refusals and incomplete turns.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agentloop_providers::replay_sse;
use agentloop_types::ApiKind;
use common::*;
use serde_json::{Value, json};

fn replay(api: ApiKind, events: &[Value]) -> Value {
    let lines: Vec<String> = events.iter().map(Value::to_string).collect();
    let outcome = replay_sse(api, sse_body(api, &lines).as_bytes());
    render(&outcome.chunks, outcome.error.as_ref())
}

fn chat_chunk(delta: Value, finish: Value) -> Value {
    json!({"id": "c1", "model": "gpt-4.1-mini", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

#[test]
fn chat_parallel_tool_calls_in_fragments() {
    let events = [
        chat_chunk(json!({"role": "assistant", "content": null}), Value::Null),
        chat_chunk(json!({"content": "Let me check."}), Value::Null),
        chat_chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "weather", "arguments": ""}}]}),
            Value::Null,
        ),
        chat_chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\": "}}]}),
            Value::Null,
        ),
        chat_chunk(
            json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "time", "arguments": "{}"}}]}),
            Value::Null,
        ),
        chat_chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"Paris\"}"}}]}),
            Value::Null,
        ),
        chat_chunk(json!({}), json!("tool_calls")),
        json!({"id": "c1", "model": "gpt-4.1-mini", "choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 10}}),
    ];
    insta::assert_json_snapshot!(replay(ApiKind::OpenaiChat, &events));
}

#[test]
fn chat_refusal_reasoning_content_and_stop_reasons() {
    let refusal = [
        chat_chunk(json!({"role": "assistant", "refusal": ""}), Value::Null),
        chat_chunk(json!({"refusal": "I can't help with that."}), Value::Null),
        chat_chunk(json!({}), json!("stop")),
    ];
    let reasoning = [
        chat_chunk(json!({"reasoning_content": "Think "}), Value::Null),
        chat_chunk(
            json!({"reasoning_content": "hard.", "reasoning": "hard."}),
            Value::Null,
        ),
        chat_chunk(json!({"content": "Answer"}), Value::Null),
        chat_chunk(json!({}), json!("length")),
    ];
    let filtered = [chat_chunk(
        json!({"content": "Partial"}),
        json!("content_filter"),
    )];
    insta::assert_json_snapshot!([
        replay(ApiKind::OpenaiChat, &refusal),
        replay(ApiKind::OpenaiChat, &reasoning),
        replay(ApiKind::OpenaiChat, &filtered),
    ]);
}

#[test]
fn chat_error_payload_mid_stream() {
    let events = [
        chat_chunk(json!({"content": "Hi"}), Value::Null),
        json!({"error": {"message": "upstream overloaded", "type": "server_error", "code": 503}}),
    ];
    insta::assert_json_snapshot!(replay(ApiKind::OpenaiChat, &events));
}

#[test]
fn responses_refusal_and_incomplete() {
    let events = [
        json!({"type": "response.created", "response": {"id": "r1", "model": "gpt-4o", "status": "in_progress"}}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}}),
        json!({"type": "response.content_part.added", "item_id": "msg_1", "output_index": 0, "content_index": 0, "part": {"type": "refusal", "refusal": ""}}),
        json!({"type": "response.refusal.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "I can't "}),
        json!({"type": "response.refusal.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "do that."}),
        json!({"type": "response.refusal.done", "item_id": "msg_1", "output_index": 0, "content_index": 0, "refusal": "I can't do that."}),
        json!({"type": "response.content_part.done", "item_id": "msg_1", "output_index": 0, "content_index": 0}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "I can't do that."}]}}),
        json!({"type": "response.some_future_event", "whatever": 1}),
        json!({"type": "response.completed", "response": {"id": "r1", "model": "gpt-4o", "status": "completed", "usage": {"input_tokens": 9, "output_tokens": 5}}}),
    ];
    let incomplete = [
        json!({"type": "response.created", "response": {"id": "r2", "model": "gpt-4o", "status": "in_progress"}}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "write", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": "{\"text\": \"unfin"}),
        json!({"type": "response.incomplete", "response": {"id": "r2", "model": "gpt-4o", "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "usage": {"input_tokens": 9, "output_tokens": 16}}}),
    ];
    insta::assert_json_snapshot!([
        replay(ApiKind::OpenaiResponses, &events),
        replay(ApiKind::OpenaiResponses, &incomplete),
    ]);
}

#[test]
fn anthropic_redacted_thinking_pause_turn_and_refusal() {
    let start = json!({"type": "message_start", "message": {"model": "claude-opus-4-1-20250805", "usage": {"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 100, "cache_creation": {"ephemeral_5m_input_tokens": 40, "ephemeral_1h_input_tokens": 60}}}});
    let events = [
        start.clone(),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "redacted_thinking", "data": "EmwKAhgBEgy3"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_a", "name": "a", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_b", "name": "b", "input": {}}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"x\":"}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": " 1}"}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "message_delta", "delta": {"stop_reason": "pause_turn"}, "usage": {"output_tokens": 30}}),
        json!({"type": "message_stop"}),
    ];
    let refusal = [
        start,
        json!({"type": "message_delta", "delta": {"stop_reason": "refusal"}, "usage": {"output_tokens": 2}}),
        json!({"type": "message_stop"}),
    ];
    insta::assert_json_snapshot!([
        replay(ApiKind::AnthropicMessages, &events),
        replay(ApiKind::AnthropicMessages, &refusal),
    ]);
}

/// Events the typed readers refuse (a field of an unexpected type) are read
/// leniently, as the decoders always read them: the odd field counts as
/// missing, and the turn is what it would be without it.
#[test]
fn fields_of_unexpected_types_are_read_as_missing() {
    let created = json!({"type": "response.created", "response": {"id": "r1", "model": "gpt-4o"}});
    let completed = json!({"type": "response.completed", "response": {"id": "r1", "model": "gpt-4o", "status": "completed", "usage": {"input_tokens": 3, "output_tokens": 2}}});
    let plain = [
        created.clone(),
        json!({"type": "response.output_text.delta", "item_id": "m1", "content_index": 0, "delta": "Hi"}),
        completed.clone(),
    ];
    let odd = [
        created,
        json!({"type": "response.output_text.delta", "item_id": "m1", "content_index": -1, "delta": "Hi"}),
        completed,
    ];
    assert_eq!(
        replay(ApiKind::OpenaiResponses, &odd),
        replay(ApiKind::OpenaiResponses, &plain)
    );

    // An `error` event without an error object is described by the event
    // itself.
    let failed = replay(
        ApiKind::OpenaiResponses,
        &[
            json!({"type": "error", "code": "rate_limit_exceeded", "message": "Slow down.", "error": null}),
        ],
    );
    assert!(failed.to_string().contains("Slow down."), "{failed}");

    // Gemini: `"functionCall": null` is a part with a call, as the `Value`
    // reading has it, so its text is not taken as the part's.
    let chunk =
        |part: Value| json!({"candidates": [{"content": {"role": "model", "parts": [part]}}]});
    let finish = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}]});
    let with_null_call = replay(
        ApiKind::Gemini,
        &[
            chunk(json!({"text": "Hello", "functionCall": null})),
            finish.clone(),
        ],
    );
    let without_text = replay(ApiKind::Gemini, &[finish]);
    assert_eq!(with_null_call, without_text);
}
