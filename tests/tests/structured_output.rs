//! A run with an output schema against each real adapter, served by a mock
//! HTTP server: the request carries the API's structured-output form (or,
//! for Anthropic, offers `final_output`), and the JSON the mock streams
//! back becomes the result's `output`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use agentloop_engine::{RunDeps, collect, run};
use agentloop_providers::{HttpProvider, ProviderConfig, RetryPolicy};
use agentloop_types::{ApiKind, LoopOptions, LoopStatus, Message, OutputSchema, RequestOptions};
use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

const ANSWER: &str = r#"{"name":"Oslo","population":709000}"#;

fn schema() -> OutputSchema {
    OutputSchema::new(
        "city",
        json!({
            "type": "object",
            "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
            "required": ["name", "population"],
            "additionalProperties": false
        }),
    )
}

fn sse(api: ApiKind, events: &[Value]) -> String {
    let mut body = String::new();
    for event in events {
        match api {
            ApiKind::OpenaiChat | ApiKind::Gemini => body.push_str(&format!("data: {event}\n\n")),
            _ => body.push_str(&format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap()
            )),
        }
    }
    if api == ApiKind::OpenaiChat {
        body.push_str("data: [DONE]\n\n");
    }
    body
}

fn chat_body() -> String {
    let chunk = |choices: Value| json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1", "choices": choices});
    sse(
        ApiKind::OpenaiChat,
        &[
            chunk(
                json!([{"index": 0, "delta": {"role": "assistant", "content": "{\"name\":\"Oslo\","}, "finish_reason": null}]),
            ),
            chunk(
                json!([{"index": 0, "delta": {"content": "\"population\":709000}"}, "finish_reason": null}]),
            ),
            chunk(json!([{"index": 0, "delta": {}, "finish_reason": "stop"}])),
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1", "choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30}}),
        ],
    )
}

fn responses_body() -> String {
    let message = json!({"id": "msg_1", "type": "message", "status": "completed", "role": "assistant", "content": [{"type": "output_text", "annotations": [], "text": ANSWER}]});
    sse(
        ApiKind::OpenaiResponses,
        &[
            json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress", "model": "gpt-5", "output": []}}),
            json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}}),
            json!({"type": "response.content_part.added", "sequence_number": 2, "item_id": "msg_1", "output_index": 0, "content_index": 0, "part": {"type": "output_text", "annotations": [], "text": ""}}),
            json!({"type": "response.output_text.delta", "sequence_number": 3, "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "{\"name\":\"Oslo\","}),
            json!({"type": "response.output_text.delta", "sequence_number": 4, "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "\"population\":709000}"}),
            json!({"type": "response.output_text.done", "sequence_number": 5, "item_id": "msg_1", "output_index": 0, "content_index": 0, "text": ANSWER}),
            json!({"type": "response.content_part.done", "sequence_number": 6, "item_id": "msg_1", "output_index": 0, "content_index": 0, "part": {"type": "output_text", "annotations": [], "text": ANSWER}}),
            json!({"type": "response.output_item.done", "sequence_number": 7, "output_index": 0, "item": message.clone()}),
            json!({"type": "response.completed", "sequence_number": 8, "response": {"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": "gpt-5", "output": [message], "usage": {"input_tokens": 20, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 30}}}),
        ],
    )
}

fn gemini_body() -> String {
    let chunk = |text: &str, finish: Option<&str>| {
        let mut candidate =
            json!({"content": {"parts": [{"text": text}], "role": "model"}, "index": 0});
        if let Some(reason) = finish {
            candidate["finishReason"] = json!(reason);
        }
        json!({"candidates": [candidate], "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 10, "totalTokenCount": 30}, "modelVersion": "gemini-2.5-flash", "responseId": "r1"})
    };
    sse(
        ApiKind::Gemini,
        &[
            chunk("{\"name\":\"Oslo\",", None),
            chunk("\"population\":709000}", Some("STOP")),
        ],
    )
}

fn anthropic_body() -> String {
    let delta = |delta: Value| json!({"type": "content_block_delta", "index": 0, "delta": delta});
    sse(
        ApiKind::AnthropicMessages,
        &[
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 20, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "final_output", "input": {}}}),
            delta(json!({"type": "input_json_delta", "partial_json": "{\"name\":\"Oslo\","})),
            delta(json!({"type": "input_json_delta", "partial_json": "\"population\":709000}"})),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 15}}),
            json!({"type": "message_stop"}),
        ],
    )
}

/// Runs one structured-output turn against `api` and returns the body the
/// adapter sent.
async fn typed_run(api: ApiKind, body: String) -> Value {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(body),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    let config = ProviderConfig::for_api(api, "test-key")
        .with_base_url(format!("{}/v1", server.uri()))
        .with_retry(RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        });
    let provider = Arc::new(HttpProvider::new(config).unwrap());
    let options = LoopOptions {
        request: RequestOptions {
            model: "test-model".into(),
            ..RequestOptions::default()
        },
        output_schema: Some(schema()),
        ..LoopOptions::default()
    };
    let result = collect(run(
        options,
        vec![Message::user_text("u1", "The capital of Norway?")],
        RunDeps::new(provider),
    ))
    .await;
    assert_eq!(
        result.status,
        LoopStatus::Complete {
            return_value: None,
            output: Some(json!({"name": "Oslo", "population": 709000})),
        },
        "{api:?}"
    );
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 1, "{api:?}");
    serde_json::from_slice(&requests[0].body).unwrap()
}

#[tokio::test]
async fn openai_chat_json_text_becomes_output() {
    let sent = typed_run(ApiKind::OpenaiChat, chat_body()).await;
    assert_eq!(sent["response_format"]["type"], "json_schema");
    assert_eq!(sent["response_format"]["json_schema"]["name"], "city");
    assert_eq!(sent["response_format"]["json_schema"]["strict"], true);
}

#[tokio::test]
async fn openai_responses_json_text_becomes_output() {
    let sent = typed_run(ApiKind::OpenaiResponses, responses_body()).await;
    assert_eq!(sent["text"]["format"]["type"], "json_schema");
    assert_eq!(sent["text"]["format"]["schema"], schema().schema);
}

#[tokio::test]
async fn gemini_json_text_becomes_output() {
    let sent = typed_run(ApiKind::Gemini, gemini_body()).await;
    assert_eq!(
        sent["generationConfig"]["responseMimeType"],
        "application/json"
    );
    assert_eq!(
        sent["generationConfig"]["responseJsonSchema"],
        schema().schema
    );
}

#[tokio::test]
async fn anthropic_final_output_call_becomes_output() {
    let sent = typed_run(ApiKind::AnthropicMessages, anthropic_body()).await;
    assert_eq!(sent["tools"][0]["name"], "final_output");
    assert_eq!(sent["tools"][0]["input_schema"], schema().schema);
}
