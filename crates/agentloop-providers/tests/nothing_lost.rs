//! What a real stream says beyond content is kept: the matched stop
//! sequence, refusal details, the Responses message phase, the
//! code-execution container, and the usage of a stream cut before its end.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agentloop_providers::{HttpProvider, replay_sse};
use agentloop_types::{
    ApiKind, ContentBlock, Message, ModelRequest, ProviderErrorKind, RefusalDetails, Role,
    StopReason, ToolResultBlock,
};
use common::*;
use serde_json::{Value, json};

fn replay(api: ApiKind, events: &[Value]) -> agentloop_providers::ReplayOutcome {
    let lines: Vec<String> = events.iter().map(Value::to_string).collect();
    replay_sse(api, sse_body(api, &lines).as_bytes())
}

fn anthropic_turn(delta: Value) -> Vec<Value> {
    vec![
        json!({"type":"message_start","message":{"model":"claude-sonnet-4-5","usage":{"input_tokens":12,"output_tokens":1}}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Counting: 1 2 3"}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"message_delta","delta":delta,"usage":{"output_tokens":9}}),
        json!({"type":"message_stop"}),
    ]
}

#[test]
fn anthropic_stop_sequence_and_refusal_details() {
    let stopped = replay(
        ApiKind::AnthropicMessages,
        &anthropic_turn(json!({"stop_reason":"stop_sequence","stop_sequence":"4"})),
    );
    assert_eq!(
        stopped.stop_reason,
        Some(StopReason::StopSequence {
            sequence: Some("4".into())
        })
    );
    let refused = replay(
        ApiKind::AnthropicMessages,
        &anthropic_turn(json!({
            "stop_reason": "refusal",
            "stop_sequence": null,
            "stop_details": {"type": "refusal", "category": "cyber", "explanation": "The request asks for malware."}
        })),
    );
    assert_eq!(
        refused.stop_reason,
        Some(StopReason::Refusal {
            details: Some(RefusalDetails {
                category: Some("cyber".into()),
                explanation: Some("The request asks for malware.".into()),
            })
        })
    );
    // Without details the reasons keep their plain form.
    let plain = replay(
        ApiKind::AnthropicMessages,
        &anthropic_turn(json!({"stop_reason":"refusal","stop_details":null})),
    );
    assert_eq!(plain.stop_reason, Some(StopReason::REFUSAL));
    insta::assert_json_snapshot!(json!({
        "stop_sequence": stopped.stop_reason,
        "refusal": refused.stop_reason,
        "plain_refusal": plain.stop_reason,
    }));
}

#[test]
fn vllm_names_the_stop_string_that_matched() {
    let chunk = |delta: Value, finish: Value, stop: Value| json!({"id":"c1","model":"qwen","choices":[{"index":0,"delta":delta,"finish_reason":finish,"stop_reason":stop}]});
    let outcome = replay(
        ApiKind::OpenaiChat,
        &[
            chunk(json!({"content": "1 2 3"}), Value::Null, Value::Null),
            chunk(json!({}), json!("stop"), json!("4")),
        ],
    );
    assert_eq!(
        outcome.stop_reason,
        Some(StopReason::StopSequence {
            sequence: Some("4".into())
        })
    );
    // A stop token id is not a sequence the caller set.
    let token = replay(
        ApiKind::OpenaiChat,
        &[chunk(
            json!({"content": "done"}),
            json!("stop"),
            json!(151645),
        )],
    );
    assert_eq!(token.stop_reason, Some(StopReason::EndTurn));
}

/// A recording with its last `count` events removed.
fn cut(name: &str, count: usize) -> String {
    let lines = fixture_lines(name);
    sse_body(fixture_api(name), &lines[..lines.len() - count])
}

#[tokio::test]
async fn a_stream_cut_after_message_delta_keeps_usage_and_stop_reason() {
    let name = "anthropic-code-execution-20260120-prompt-cache.1.chunks.txt";
    let body = cut(name, 1);
    let outcome = replay_sse(ApiKind::AnthropicMessages, body.as_bytes());
    let error = outcome.error.clone().unwrap();
    assert_eq!(error.kind, ProviderErrorKind::Truncated);
    let partial = error.partial.clone().unwrap();
    assert_eq!(partial.stop_reason, Some(StopReason::EndTurn));
    let usage = partial.usage.unwrap();
    assert_eq!(usage.cache_read_tokens, 6289);
    assert_eq!(usage.output_tokens, 198);
    assert!(usage.cost_unreliable, "a lower bound at best");
    assert_eq!(outcome.usage, Some(usage), "the replay reports it too");

    // The same over HTTP.
    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(
            wiremock::ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(body),
        )
        .mount(&server)
        .await;
    let provider = HttpProvider::new(config(ApiKind::AnthropicMessages, &server.uri())).unwrap();
    let turn = run(&provider, request("m")).await;
    assert_eq!(turn.error.as_ref().unwrap().partial, error.partial);

    // Cut before the stop reason: the input usage of message_start is kept.
    let early = replay_sse(
        ApiKind::AnthropicMessages,
        cut("anthropic-text.chunks.txt", 3).as_bytes(),
    );
    let early_partial = early.error.as_ref().unwrap().partial.clone().unwrap();
    assert_eq!(early_partial.stop_reason, None);
    insta::assert_json_snapshot!(json!({
        "after_message_delta": render(&outcome.chunks, outcome.error.as_ref()),
        "before_message_delta": early.error,
    }));
}

#[test]
fn a_chat_stream_cut_after_its_usage_keeps_it() {
    let outcome = replay_sse(
        ApiKind::OpenaiChat,
        b"data: {\"model\":\"gpt-4.1-mini\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":2,\"prompt_tokens_details\":{\"cached_tokens\":4}}}\n\n",
    );
    let error = outcome.error.unwrap();
    assert_eq!(error.kind, ProviderErrorKind::Truncated);
    let usage = error.partial.unwrap().usage.unwrap();
    assert_eq!((usage.input_tokens, usage.cache_read_tokens), (6, 4));
    assert!(usage.cost_unreliable);
}

fn responses_message(id: &str, phase: &str, text: &str) -> Vec<Value> {
    let item = json!({"id": id, "type": "message", "role": "assistant", "status": "in_progress", "phase": phase, "content": []});
    let mut done = item.clone();
    done["status"] = json!("completed");
    done["content"] = json!([{"type": "output_text", "text": text, "annotations": []}]);
    vec![
        json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
        json!({"type": "response.content_part.added", "item_id": id, "content_index": 0, "part": {"type": "output_text", "text": ""}}),
        json!({"type": "response.output_text.delta", "item_id": id, "content_index": 0, "delta": text}),
        json!({"type": "response.content_part.done", "item_id": id, "content_index": 0}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": done}),
    ]
}

#[tokio::test]
async fn responses_phase_is_kept_and_sent_back() {
    let mut events =
        vec![json!({"type": "response.created", "response": {"model": "gpt-5.3-codex"}})];
    events.extend(responses_message(
        "msg_1",
        "commentary",
        "Checking the tests first.",
    ));
    events.push(json!({"type": "response.output_item.done", "item": {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "run_tests", "arguments": "{}"}}));
    events.push(json!({"type": "response.completed", "response": {"model": "gpt-5.3-codex", "status": "completed", "usage": {"input_tokens": 20, "output_tokens": 8}}}));
    let first = replay(ApiKind::OpenaiResponses, &events);
    assert!(first.error.is_none());

    let mut events = vec![json!({"type": "response.created", "response": {}})];
    events.extend(responses_message("msg_2", "final_answer", "All green."));
    events.push(json!({"type": "response.completed", "response": {"status": "completed", "usage": {"input_tokens": 30, "output_tokens": 3}}}));
    let second = replay(ApiKind::OpenaiResponses, &events);

    let mut next = request("gpt-5.3-codex");
    next.messages.extend([
        Message::new("a1", Role::Assistant, first.content.clone()),
        Message::new(
            "t1",
            Role::User,
            vec![ContentBlock::ToolResult(ToolResultBlock::ok(
                "call_1",
                "12 passed",
            ))],
        ),
        Message::new("a2", Role::Assistant, second.content.clone()),
        Message::user_text("u2", "Thanks"),
    ]);
    let body = body_of(ApiKind::OpenaiResponses, &next).await;
    insta::assert_json_snapshot!(json!({
        "content": [
            first.content.iter().map(render_block).collect::<Vec<_>>(),
            second.content.iter().map(render_block).collect::<Vec<_>>(),
        ],
        "input": body["input"],
    }));
}

async fn body_of(api: ApiKind, request: &ModelRequest) -> Value {
    HttpProvider::new(config(api, "http://unused.invalid"))
        .unwrap()
        .request_body(request)
        .await
        .unwrap()
}

#[tokio::test]
async fn the_code_execution_container_is_reused_until_it_expires() {
    let name = "anthropic-code-execution-20260120-prompt-cache.1.chunks.txt";
    let outcome = replay_sse(
        ApiKind::AnthropicMessages,
        fixture_bodies(name)[0].as_bytes(),
    );
    let next = |content: Vec<ContentBlock>| {
        let mut next = request("claude-sonnet-4-5");
        next.messages.extend([
            Message::new("a1", Role::Assistant, content),
            Message::user_text("u2", "Now the cubes."),
        ]);
        next
    };
    // The recording's container has expired by now: not named again.
    let expired = body_of(ApiKind::AnthropicMessages, &next(outcome.content.clone())).await;
    assert!(expired.get("container").is_none());

    let live: Vec<ContentBlock> = outcome
        .content
        .iter()
        .cloned()
        .map(|mut block| {
            if let ContentBlock::Provider { block, .. } = &mut block
                && block["type"] == "container"
            {
                block["expires_at"] = json!("2999-01-01T00:00:00Z");
            }
            block
        })
        .collect();
    let body = body_of(ApiKind::AnthropicMessages, &next(live)).await;
    assert_eq!(body["container"], "container_01Qh1LG5zm6onKQjYrHnhrvi");
    let sent = body["messages"][1]["content"].as_array().unwrap();
    assert!(
        sent.iter().all(|b| b["type"] != "container"),
        "the container block is not content"
    );
    let types: Vec<&Value> = sent.iter().map(|b| &b["type"]).collect();
    insta::assert_json_snapshot!(
        json!({"container": body["container"], "assistant_block_types": types})
    );
}
