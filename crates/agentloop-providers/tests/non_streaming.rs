//! `disable_stream`: one JSON response decoded into the same deltas.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agentloop_providers::HttpProvider;
use agentloop_types::ApiKind;
use common::*;
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

async fn whole(api: ApiKind, model: &str, response: Value, disable_stream: bool) -> Value {
    let server = MockServer::start().await;
    let mut mock = Mock::given(method("POST")).and(path(endpoint_path(api)));
    if disable_stream {
        mock = mock.and(body_partial_json(json!({"model": model})));
    }
    mock.respond_with(ResponseTemplate::new(200).set_body_json(response))
        .expect(1)
        .mount(&server)
        .await;
    let provider = HttpProvider::new(config(api, &server.uri())).unwrap();
    let mut request = request(model);
    request.options.disable_stream = disable_stream;
    let turn = run(&provider, request).await;
    let sent: Value =
        serde_json::from_slice(&server.received_requests().await.unwrap()[0].body).unwrap();
    assert_eq!(sent.get("stream").is_some(), !disable_stream);
    render(&turn.chunks, turn.error.as_ref())
}

#[tokio::test]
async fn anthropic_message() {
    let response = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
        "content": [
            {"type": "thinking", "thinking": "Adding.", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "text", "text": "Calling the tool.", "citations": null},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}},
            {"type": "tool_use", "id": "toolu_1", "name": "calculator", "input": {"a": 1, "b": 2}},
            {"type": "tool_use", "id": "toolu_2", "name": "now", "input": {}}
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 20, "cache_read_input_tokens": 5, "cache_creation_input_tokens": 0, "server_tool_use": {"web_search_requests": 1}}
    });
    insta::assert_json_snapshot!(
        whole(
            ApiKind::AnthropicMessages,
            "claude-sonnet-4-5",
            response,
            true
        )
        .await
    );
}

#[tokio::test]
async fn openai_chat_completion_with_two_tool_calls() {
    let response = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4.1-2025-04-14",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "Two calls.", "refusal": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "calculator", "arguments": "{\"a\":1,\"b\":2}"}},
                {"id": "call_2", "type": "function", "function": {"name": "now", "arguments": "{}"}}
            ]}, "finish_reason": "tool_calls"},
            {"index": 1, "message": {"role": "assistant", "content": "second choice is ignored"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 30, "prompt_tokens_details": {"cached_tokens": 40}, "completion_tokens_details": {"reasoning_tokens": 0}}
    });
    insta::assert_json_snapshot!(whole(ApiKind::OpenaiChat, "gpt-4.1", response, true).await);
}

#[tokio::test]
async fn compatible_server_answering_json_to_a_stream_request() {
    let response = json!({
        "model": "llama3.2",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi there"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2}
    });
    insta::assert_json_snapshot!(whole(ApiKind::OpenaiChat, "llama3.2", response, false).await);
}

#[tokio::test]
async fn openai_response_object() {
    let response = json!({
        "id": "resp_1", "object": "response", "model": "gpt-5-2025-08-07", "status": "completed",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Thinking summary"}], "encrypted_content": "gAAA"},
            {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "q"}},
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [
                {"type": "output_text", "text": "Answer.", "annotations": [{"type": "url_citation", "url": "https://example.com", "title": "Example", "start_index": 0, "end_index": 7}]}
            ]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "calculator", "arguments": "{\"a\":1}", "status": "completed"}
        ],
        "usage": {"input_tokens": 50, "input_tokens_details": {"cached_tokens": 10}, "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 8}}
    });
    insta::assert_json_snapshot!(whole(ApiKind::OpenaiResponses, "gpt-5", response, true).await);
}

#[tokio::test]
async fn openai_response_incomplete_and_failed() {
    let incomplete = json!({
        "id": "resp_2", "model": "gpt-5", "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [{"type": "message", "id": "msg_2", "role": "assistant", "content": [{"type": "output_text", "text": "Cut", "annotations": []}]}],
        "usage": {"input_tokens": 5, "output_tokens": 16}
    });
    let failed = json!({
        "id": "resp_3", "model": "gpt-5", "status": "failed",
        "error": {"code": "server_error", "message": "The model failed."},
        "output": []
    });
    insta::assert_json_snapshot!([
        whole(ApiKind::OpenaiResponses, "gpt-5", incomplete, true).await,
        whole(ApiKind::OpenaiResponses, "gpt-5", failed, true).await,
    ]);
}

#[tokio::test]
async fn a_response_that_is_not_json_is_a_decode_error_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string("<html>gateway page</html>"))
        .expect(1)
        .mount(&server)
        .await;
    let provider = HttpProvider::new(config(ApiKind::OpenaiChat, &server.uri())).unwrap();
    let mut request = request("gpt-4.1-nano");
    request.options.disable_stream = true;
    let turn = run(&provider, request).await;
    let error = turn.error.expect("a decode error");
    assert_eq!(error.kind, agentloop_types::ProviderErrorKind::Decode);
    assert!(error.message.contains("not JSON"), "{}", error.message);
    assert!(turn.chunks.is_empty());
}
