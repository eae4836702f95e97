//! The OpenAI-compatible adapter against the dialects of Ollama, vLLM,
//! OpenRouter and llama.cpp's llama-server, from their documented stream shapes and error bodies,
//! served by a mock server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agentloop_providers::{HttpProvider, ProviderConfig, RetryPolicy, is_retryable};
use agentloop_types::{ApiKind, ContentBlock, ProviderErrorKind, StopReason};
use common::*;
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// An SSE body of `chunks` with the `[DONE]` line, and `extra` raw lines
/// (comments) before the first chunk.
fn body(extra: &str, chunks: &[Value]) -> String {
    let mut body = extra.to_owned();
    for chunk in chunks {
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    body
}

async fn turn(base_path: &str, response: ResponseTemplate, model: &str) -> Turn {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(format!("{base_path}/chat/completions")))
        .and(body_partial_json(
            json!({"model": model, "max_tokens": 4096}),
        ))
        .respond_with(response)
        .expect(1)
        .mount(&server)
        .await;
    let config = ProviderConfig::openai_compatible(format!("{}{base_path}", server.uri()), None)
        .with_retry(RetryPolicy::none());
    let provider = HttpProvider::new(config).unwrap();
    run(&provider, request(model)).await
}

fn sse(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body)
}

fn ollama_chunk(delta: Value, finish: Value) -> Value {
    json!({"id": "chatcmpl-7", "object": "chat.completion.chunk", "created": 1, "model": "qwen3:8b",
        "system_fingerprint": "fp_ollama", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

#[tokio::test]
async fn ollama_reasoning_whole_tool_calls_and_errors() {
    let chunks = [
        ollama_chunk(
            json!({"role": "assistant", "content": "", "reasoning": "The user wants the weather."}),
            Value::Null,
        ),
        ollama_chunk(
            json!({"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_x1", "index": 0, "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
            ]}),
            Value::Null,
        ),
        ollama_chunk(
            json!({"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_x2", "index": 0, "type": "function", "function": {"name": "get_time", "arguments": "{}"}},
            ]}),
            Value::Null,
        ),
        ollama_chunk(json!({"role": "assistant", "content": ""}), json!("stop")),
        json!({"id": "chatcmpl-7", "object": "chat.completion.chunk", "model": "qwen3:8b", "choices": [],
            "usage": {"prompt_tokens": 80, "completion_tokens": 30, "total_tokens": 110}}),
    ];
    let ok = turn("/v1", sse(body("", &chunks)), "qwen3:8b").await;
    assert!(ok.error.is_none(), "{:?}", ok.error);
    let missing = turn(
        "/v1",
        ResponseTemplate::new(404).set_body_json(json!({"error": {
            "message": "model \"llama9\" not found, try pulling it first",
            "type": "api_error", "param": null, "code": null
        }})),
        "llama9",
    )
    .await;
    let e = missing.error.unwrap();
    assert_eq!(
        (e.status, e.error_type.as_deref()),
        (Some(404), Some("api_error"))
    );
    assert!(!is_retryable(&e));
    insta::assert_json_snapshot!(json!({
        "turn": render(&ok.chunks, None),
        "not_found": e,
    }));
}

#[test]
fn tool_arguments_sent_as_an_object_are_kept_as_that_object() {
    let call = json!({"id": "call_o", "index": 0, "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Paris"}}});
    let chunks = [
        ollama_chunk(
            json!({"role": "assistant", "content": "", "tool_calls": [call]}),
            Value::Null,
        ),
        ollama_chunk(json!({"role": "assistant", "content": ""}), json!("stop")),
    ];
    let outcome =
        agentloop_providers::replay_sse(ApiKind::OpenaiChat, body("", &chunks).as_bytes());
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(outcome.stop_reason, Some(StopReason::ToolUse));
    let calls: Vec<_> = outcome
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolUse(call) => Some(call),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0].name.as_str(), &calls[0].input.value()),
        ("get_weather", &json!({"city": "Paris"}))
    );
}

fn vllm_chunk(delta: Value, finish: Value, stop: Value) -> Value {
    json!({"id": "chatcmpl-v", "object": "chat.completion.chunk", "created": 1, "model": "Qwen/Qwen3-8B",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish, "stop_reason": stop}]})
}

#[tokio::test]
async fn vllm_stop_string_reasoning_content_and_bare_errors() {
    let chunks = [
        vllm_chunk(
            json!({"role": "assistant", "content": ""}),
            Value::Null,
            Value::Null,
        ),
        vllm_chunk(
            json!({"reasoning_content": "Count to three."}),
            Value::Null,
            Value::Null,
        ),
        vllm_chunk(json!({"content": "1, 2, 3"}), Value::Null, Value::Null),
        vllm_chunk(json!({"content": ""}), json!("stop"), json!("\n\n")),
        json!({"id": "chatcmpl-v", "object": "chat.completion.chunk", "model": "Qwen/Qwen3-8B", "choices": [],
            "usage": {"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21, "prompt_tokens_details": {"cached_tokens": 8}}}),
    ];
    let ok = turn("/v1", sse(body("", &chunks)), "Qwen/Qwen3-8B").await;
    let Some(agentloop_types::ModelChunk::Finish { stop_reason, usage }) = ok.chunks.last() else {
        panic!("finish expected: {:?}", ok.error);
    };
    assert_eq!(
        *stop_reason,
        StopReason::StopSequence {
            sequence: Some("\n\n".into())
        }
    );
    assert_eq!((usage.input_tokens, usage.cache_read_tokens), (4, 8));
    assert!(usage.cost_unreliable, "a self-hosted model has no price");

    let mid_stream = body(
        "",
        &[
            vllm_chunk(json!({"content": "Par"}), Value::Null, Value::Null),
            json!({"object": "error", "message": "The engine died.", "type": "InternalServerError", "param": null, "code": 500}),
        ],
    );
    let broken = turn("/v1", sse(mid_stream), "Qwen/Qwen3-8B").await;
    let e = broken.error.unwrap();
    assert_eq!(e.kind, ProviderErrorKind::Api);
    assert_eq!(
        (e.error_type.as_deref(), e.message.as_str()),
        (Some("InternalServerError"), "The engine died.")
    );
    let rejected = turn(
        "/v1",
        ResponseTemplate::new(400).set_body_json(json!({"object": "error",
            "message": "This model's maximum context length is 32768 tokens.",
            "type": "BadRequestError", "param": null, "code": 400})),
        "Qwen/Qwen3-8B",
    )
    .await;
    let e = rejected.error.unwrap();
    assert_eq!(
        (e.status, e.error_type.as_deref()),
        (Some(400), Some("BadRequestError"))
    );
    assert!(e.message.contains("maximum context length"));
}

fn openrouter_chunk(delta: Value, finish: Value) -> Value {
    json!({"id": "gen-1", "provider": "Anthropic", "model": "anthropic/claude-sonnet-4.5", "object": "chat.completion.chunk",
        "created": 1, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "native_finish_reason": finish}]})
}

#[tokio::test]
async fn openrouter_comments_reported_cost_and_mid_stream_errors() {
    let chunks = [
        openrouter_chunk(
            json!({"role": "assistant", "content": "", "reasoning": "Short answer."}),
            Value::Null,
        ),
        openrouter_chunk(
            json!({"role": "assistant", "content": "Hi there."}),
            Value::Null,
        ),
        openrouter_chunk(json!({"role": "assistant", "content": ""}), json!("stop")),
        json!({"id": "gen-1", "provider": "Anthropic", "model": "anthropic/claude-sonnet-4.5", "object": "chat.completion.chunk", "choices": [],
            "usage": {"prompt_tokens": 3000, "completion_tokens": 16, "total_tokens": 3016, "cost": 0.001234, "is_byok": false,
                "prompt_tokens_details": {"cached_tokens": 2000, "cache_write_tokens": 900},
                "completion_tokens_details": {"reasoning_tokens": 4}}}),
    ];
    let ok = turn(
        "/api/v1",
        sse(body(
            ": OPENROUTER PROCESSING\n\n: OPENROUTER PROCESSING\n\n",
            &chunks,
        )),
        "anthropic/claude-sonnet-4.5",
    )
    .await;
    assert!(ok.error.is_none(), "{:?}", ok.error);
    let Some(agentloop_types::ModelChunk::Finish { usage, .. }) = ok.chunks.last() else {
        panic!("finish expected");
    };
    assert_eq!(usage.cost, 0.001234, "the router's own charge");
    assert!(!usage.cost_unreliable);
    assert_eq!(
        (
            usage.input_tokens,
            usage.cache_read_tokens,
            usage.cache_creation_tokens
        ),
        (100, 2000, 900)
    );

    let failing = body(
        "",
        &[
            openrouter_chunk(json!({"content": "Once upon"}), Value::Null),
            json!({"id": "gen-2", "object": "chat.completion.chunk", "created": 1, "model": "openai/gpt-5", "provider": "OpenAI",
                "error": {"code": "server_error", "message": "Provider disconnected unexpectedly"},
                "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}]}),
        ],
    );
    let broken = turn("/api/v1", sse(failing), "openai/gpt-5").await;
    let mid_stream = broken.error.clone().unwrap();
    assert_eq!(mid_stream.kind, ProviderErrorKind::Api);
    assert_eq!(mid_stream.error_type.as_deref(), Some("server_error"));

    let no_credits = turn(
        "/api/v1",
        ResponseTemplate::new(402).set_body_json(json!({"error": {"code": 402,
            "message": "Insufficient credits. Add more using https://openrouter.ai/credits",
            "metadata": {}}})),
        "openai/gpt-5",
    )
    .await;
    let e = no_credits.error.unwrap();
    assert_eq!(
        (e.status, e.error_type.as_deref()),
        (Some(402), Some("402"))
    );
    assert!(!is_retryable(&e));
    insta::assert_json_snapshot!(json!({
        "turn": render(&ok.chunks, None),
        "mid_stream_error": render(&broken.chunks, Some(&mid_stream)),
    }));
}

fn llama_chunk(delta: Value, finish: Value) -> Value {
    json!({"choices": [{"finish_reason": finish, "index": 0, "delta": delta}], "created": 1,
        "id": "chatcmpl-l1", "model": "smollm2-135m-instruct", "system_fingerprint": "b1-4227c9b",
        "object": "chat.completion.chunk"})
}

/// llama.cpp's `llama-server` (as built by `scripts/local-model.sh`, with
/// `--jinja`): a `content: null` opening delta, arguments in pieces, and
/// usage with its own `timings` on the chunk that finishes, not after it.
#[test]
fn llama_server_usage_on_the_finishing_chunk_and_a_null_opening_delta() {
    let mut finish = llama_chunk(json!({}), json!("tool_calls"));
    finish["usage"] = json!({"completion_tokens": 42, "prompt_tokens": 218, "total_tokens": 260});
    finish["timings"] = json!({"prompt_n": 218, "prompt_ms": 1597.2, "predicted_n": 42});
    let chunks = [
        llama_chunk(json!({"role": "assistant", "content": null}), Value::Null),
        llama_chunk(json!({"content": "Let me look."}), Value::Null),
        llama_chunk(
            json!({"tool_calls": [{"index": 0, "id": "rQ1", "type": "function",
                "function": {"name": "fs", "arguments": "{\"command\": \"vi"}}]}),
            Value::Null,
        ),
        llama_chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "ew\", \"path\": \"/\"}"}}]}),
            Value::Null,
        ),
        finish,
    ];
    let outcome =
        agentloop_providers::replay_sse(ApiKind::OpenaiChat, body("", &chunks).as_bytes());
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(outcome.stop_reason, Some(StopReason::ToolUse));
    let usage = outcome.usage.unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (218, 42));
    assert!(usage.cost_unreliable, "an unknown model has no price");
    assert!(
        matches!(&outcome.content[0], ContentBlock::Text { text, .. } if text == "Let me look.")
    );
    let ContentBlock::ToolUse(call) = &outcome.content[1] else {
        panic!("{:?}", outcome.content);
    };
    assert_eq!(
        (call.name.as_str(), &call.input.value()),
        ("fs", &json!({"command": "view", "path": "/"}))
    );
}
