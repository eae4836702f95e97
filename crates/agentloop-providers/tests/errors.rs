//! Error paths: HTTP errors and retries, broken and malformed streams.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use agentloop_providers::{HttpProvider, RetryPolicy};
use agentloop_types::{ApiKind, ModelChunk, ModelProvider, ProviderErrorKind, StopReason};
use common::*;
use futures::StreamExt;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn sse(body: &str) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body.to_owned())
}

fn anthropic_events(lines: &[serde_json::Value]) -> String {
    let lines: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    sse_body(ApiKind::AnthropicMessages, &lines)
}

fn retrying(api: ApiKind, base: &str, retries: u32) -> HttpProvider {
    let policy = RetryPolicy {
        max_retries: retries,
        ..RetryPolicy::default()
    };
    paused_clock_provider(config(api, base).with_retry(policy))
}

#[tokio::test]
async fn unauthorized_is_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/messages"))
        .respond_with(
            ResponseTemplate::new(401)
                .insert_header("request-id", "req_401")
                .set_body_string(r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#),
        )
        .expect(1)
        .mount(&server)
        .await;
    let provider = retrying(ApiKind::AnthropicMessages, &server.uri(), 2);
    let turn = run(&provider, request("claude-sonnet-4-5")).await;
    let error = turn.error.unwrap();
    assert_eq!(error.kind, ProviderErrorKind::Http);
    assert_eq!(error.status, Some(401));
    assert_eq!(error.error_type.as_deref(), Some("authentication_error"));
    assert_eq!(error.message, "invalid x-api-key");
    assert_eq!(error.request_id.as_deref(), Some("req_401"));
    assert!(turn.chunks.is_empty());
}

#[tokio::test(start_paused = true)]
async fn rate_limit_honours_retry_after() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "7")
                .set_body_string(r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#),
        )
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    let body = sse_body(
        ApiKind::OpenaiChat,
        &fixture_lines("azure-model-router.1.chunks.txt"),
    );
    Mock::given(method("POST"))
        .respond_with(sse(&body))
        .expect(1)
        .mount(&server)
        .await;

    let provider = retrying(ApiKind::OpenaiChat, &server.uri(), 2);
    let started = tokio::time::Instant::now();
    let turn = run(&provider, request("gpt-5-nano")).await;
    assert!(turn.error.is_none(), "{:?}", turn.error);
    assert!(
        started.elapsed() >= Duration::from_secs(7),
        "waited {:?}",
        started.elapsed()
    );
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "waited {:?}",
        started.elapsed()
    );
    assert!(matches!(
        turn.chunks.last(),
        Some(ModelChunk::Finish {
            stop_reason: StopReason::EndTurn,
            ..
        })
    ));
}

#[tokio::test(start_paused = true)]
async fn retry_after_ms_wins_over_retry_after() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(503)
                .insert_header("retry-after", "30")
                .insert_header("retry-after-ms", "250"),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    let body = sse_body(
        ApiKind::OpenaiChat,
        &fixture_lines("azure-model-router.1.chunks.txt"),
    );
    Mock::given(method("POST"))
        .respond_with(sse(&body))
        .mount(&server)
        .await;
    let provider = retrying(ApiKind::OpenaiChat, &server.uri(), 1);
    let started = tokio::time::Instant::now();
    let turn = run(&provider, request("gpt-5-nano")).await;
    assert!(turn.error.is_none());
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(250) && waited < Duration::from_secs(1),
        "waited {waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn overloaded_is_retried_then_surfaced() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(529)
                .insert_header("request-id", "req_529")
                .set_body_string(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#),
        )
        .expect(3)
        .mount(&server)
        .await;
    let provider = retrying(ApiKind::AnthropicMessages, &server.uri(), 2);
    let turn = run(&provider, request("claude-sonnet-4-5")).await;
    let error = turn.error.unwrap();
    assert_eq!(error.status, Some(529));
    assert_eq!(error.error_type.as_deref(), Some("overloaded_error"));
    assert_eq!(error.request_id.as_deref(), Some("req_529"));
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test(start_paused = true)]
async fn dropping_the_stream_ends_the_backoff() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "30"))
        .mount(&server)
        .await;
    let provider = retrying(ApiKind::OpenaiChat, &server.uri(), 5);
    let mut stream = provider.stream(request("gpt-5-nano"));
    // Poll the turn without letting the paused clock move (no timers here)
    // until the first attempt was answered and the backoff sleep began:
    // the clock then auto-advances by the requested 30 s, so stop at 10 s.
    let started = tokio::time::Instant::now();
    {
        let mut next = stream.next();
        while server.received_requests().await.unwrap().is_empty() {
            tokio::select! {
                biased;
                item = &mut next => panic!("turn ended early: {item:?}"),
                _ = tokio::task::yield_now() => {}
            }
        }
        let waited = tokio::time::timeout(Duration::from_secs(10), &mut next).await;
        assert!(waited.is_err(), "still backing off");
    }
    drop(stream);
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert!(started.elapsed() >= Duration::from_secs(130));
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        1,
        "no retry after the drop"
    );
}

#[tokio::test]
async fn connection_refused_is_a_connection_error() {
    // Bind then drop a listener to get a port nobody listens on.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let provider =
        HttpProvider::new(config(ApiKind::OpenaiChat, &format!("http://{addr}"))).unwrap();
    let turn = run(&provider, request("gpt-5-nano")).await;
    assert_eq!(turn.error.unwrap().kind, ProviderErrorKind::Connection);
}

#[tokio::test(start_paused = true)]
async fn an_endpoint_that_is_not_a_url_is_refused_at_once_without_its_query() {
    let mut config = config(ApiKind::OpenaiChat, "http://bad host/v1");
    config.query.push(("key".into(), "secret-in-query".into()));
    let provider = HttpProvider::new(config.with_retry(RetryPolicy {
        max_retries: 3,
        ..RetryPolicy::default()
    }))
    .unwrap();
    let started = tokio::time::Instant::now();
    let turn = run(&provider, request("gpt-5-nano")).await;
    let error = turn.error.unwrap();
    assert_eq!(error.kind, ProviderErrorKind::InvalidRequest);
    assert!(
        error.message.contains("not a valid URL"),
        "{}",
        error.message
    );
    assert!(
        !error.message.contains("secret-in-query"),
        "{}",
        error.message
    );
    assert_eq!(
        started.elapsed(),
        Duration::ZERO,
        "no backoff: it is not retried"
    );
}

#[tokio::test(start_paused = true)]
async fn connection_failures_before_the_response_are_retried() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let provider = retrying(ApiKind::AnthropicMessages, &format!("http://{addr}"), 2);
    let started = tokio::time::Instant::now();
    let turn = run(&provider, request("claude-sonnet-4-5")).await;
    assert_eq!(turn.error.unwrap().kind, ProviderErrorKind::Connection);
    // Two backoffs: about 0.5 s and 1 s, each with up to 25% jitter off.
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(1125) && waited <= Duration::from_millis(1500),
        "waited {waited:?}"
    );
}

#[tokio::test]
async fn connection_reset_mid_stream() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 65536];
        let _ = socket.read(&mut buf).await.unwrap();
        let event = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n";
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nrequest-id: req_reset\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{event}\r\n",
            event.len()
        );
        socket.write_all(head.as_bytes()).await.unwrap();
        socket.flush().await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(socket);
    });
    let provider = retrying(ApiKind::AnthropicMessages, &format!("http://{addr}"), 2);
    let turn = run(&provider, request("claude-sonnet-4-5")).await;
    server.await.unwrap();
    let error = turn.error.unwrap();
    assert_eq!(error.kind, ProviderErrorKind::Connection, "{error:?}");
    assert_eq!(error.request_id.as_deref(), Some("req_reset"));
    // The text that arrived was yielded, and nothing was retried.
    let texts = turn
        .chunks
        .iter()
        .filter(|c| {
            matches!(
                c,
                ModelChunk::Delta(agentloop_types::StreamDelta::Text { .. })
            )
        })
        .count();
    assert_eq!(texts, 1);
}

#[tokio::test]
async fn anthropic_stream_cut_before_message_stop() {
    let lines = fixture_lines("anthropic-text.chunks.txt");
    let body = sse_body(ApiKind::AnthropicMessages, &lines[..6]);
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse(&body))
        .mount(&server)
        .await;
    let provider = HttpProvider::new(config(ApiKind::AnthropicMessages, &server.uri())).unwrap();
    let turn = run(&provider, request("claude-sonnet-4-5")).await;
    let error = turn.error.unwrap();
    assert_eq!(error.kind, ProviderErrorKind::Truncated);
    assert!(error.message.contains("message_stop"));
    assert!(!turn.chunks.is_empty());
}

#[tokio::test]
async fn chat_stream_cut_before_done() {
    let lines = fixture_lines("openai-text.chunks.txt");
    let mut body = String::new();
    for line in &lines[..10] {
        body.push_str(&format!("data: {line}\n\n"));
    }
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse(&body))
        .mount(&server)
        .await;
    let provider = HttpProvider::new(config(ApiKind::OpenaiChat, &server.uri())).unwrap();
    let turn = run(&provider, request("gpt-4.1-nano")).await;
    assert_eq!(turn.error.unwrap().kind, ProviderErrorKind::Truncated);
}

#[tokio::test]
async fn responses_stream_cut_before_completed() {
    let lines = fixture_lines("openai-web-search-tool.1.chunks.txt");
    let body = sse_body(ApiKind::OpenaiResponses, &lines[..40]);
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse(&body))
        .mount(&server)
        .await;
    let provider = HttpProvider::new(config(ApiKind::OpenaiResponses, &server.uri())).unwrap();
    let turn = run(&provider, request("gpt-5")).await;
    assert_eq!(turn.error.unwrap().kind, ProviderErrorKind::Truncated);
}

#[tokio::test]
async fn malformed_json_event_is_a_decode_error() {
    let mut body = anthropic_events(&[
        json!({"type":"message_start","message":{"model":"claude-sonnet-4-5","usage":{"input_tokens":1}}}),
    ]);
    body.push_str(
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\n\n",
    );
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse(&body))
        .mount(&server)
        .await;
    let provider = HttpProvider::new(config(ApiKind::AnthropicMessages, &server.uri())).unwrap();
    let turn = run(&provider, request("claude-sonnet-4-5")).await;
    let error = turn.error.unwrap();
    assert_eq!(error.kind, ProviderErrorKind::Decode);
    assert!(
        error.message.contains("content_block_start"),
        "{}",
        error.message
    );
}

#[tokio::test]
async fn unknown_events_and_blocks_are_kept_or_skipped_never_fatal() {
    let body = anthropic_events(&[
        json!({"type":"message_start","message":{"model":"claude-sonnet-4-5","usage":{"input_tokens":5,"output_tokens":1}}}),
        json!({"type":"brand_new_event","payload":{"x":1}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"hologram","frames":[]}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"hologram_delta","frames_note":"a"}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"hologram_delta","frames_note":"b"}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}),
        json!({"type":"content_block_delta","index":1,"delta":{"type":"sparkle_delta","sparkle":true}}),
        json!({"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"wrong block"}}),
        json!({"type":"content_block_delta","index":9,"delta":{"type":"text_delta","text":"no such block"}}),
        json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"ok"}}),
        json!({"type":"content_block_stop","index":1}),
        json!({"type":"message_delta","delta":{"stop_reason":"a_new_reason"},"usage":{"output_tokens":4}}),
        json!({"type":"message_stop"}),
    ]);
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse(&body))
        .mount(&server)
        .await;
    let provider = HttpProvider::new(config(ApiKind::AnthropicMessages, &server.uri())).unwrap();
    let turn = run(&provider, request("claude-sonnet-4-5")).await;
    assert!(turn.error.is_none());
    insta::assert_json_snapshot!(render(&turn.chunks, None));
}

#[tokio::test]
async fn anthropic_error_event_mid_stream() {
    let body = anthropic_events(&[
        json!({"type":"message_start","message":{"model":"claude-sonnet-4-5","usage":{"input_tokens":5}}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Partial"}}),
        json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}),
    ]);
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse(&body).insert_header("request-id", "req_mid"))
        .expect(1)
        .mount(&server)
        .await;
    let provider = retrying(ApiKind::AnthropicMessages, &server.uri(), 2);
    let turn = run(&provider, request("claude-sonnet-4-5")).await;
    let error = turn.error.unwrap();
    assert_eq!(error.kind, ProviderErrorKind::Api);
    assert_eq!(error.error_type.as_deref(), Some("overloaded_error"));
    assert_eq!(error.message, "Overloaded");
    assert_eq!(error.request_id.as_deref(), Some("req_mid"));
    assert_eq!(turn.after_end, 0);
}

#[tokio::test(start_paused = true)]
async fn overloaded_event_before_any_content_is_retried() {
    let overloaded = anthropic_events(&[
        json!({"type":"message_start","message":{"model":"claude-sonnet-4-5","usage":{"input_tokens":5}}}),
        json!({"type":"ping"}),
        json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}),
    ]);
    let quota = anthropic_events(&[
        json!({"type":"error","error":{"type":"invalid_request_error","message":"no"}}),
    ]);
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(sse(&overloaded))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    let good = fixture_bodies("anthropic-text.chunks.txt").remove(0);
    Mock::given(method("POST"))
        .respond_with(sse(&good))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(sse(&quota))
        .mount(&server)
        .await;
    let provider = retrying(ApiKind::AnthropicMessages, &server.uri(), 2);
    let turn = run(&provider, request("claude-sonnet-4-5")).await;
    assert!(turn.error.is_none(), "{:?}", turn.error);
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
    // A request error event is not retried.
    let turn = run(&provider, request("claude-sonnet-4-5")).await;
    assert_eq!(
        turn.error.unwrap().error_type.as_deref(),
        Some("invalid_request_error")
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn max_tokens_mid_tool_call_keeps_the_raw_arguments() {
    let body = anthropic_events(&[
        json!({"type":"message_start","message":{"model":"claude-sonnet-4-5","usage":{"input_tokens":5}}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"write","input":{}}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"a.txt\", \"text\": \"unfin"}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":20}}),
        json!({"type":"message_stop"}),
    ]);
    let outcome = agentloop_providers::replay_sse(ApiKind::AnthropicMessages, body.as_bytes());
    assert_eq!(outcome.stop_reason, Some(StopReason::MaxTokens));
    let agentloop_types::ContentBlock::ToolUse(call) = &outcome.content[0] else {
        panic!("tool use expected");
    };
    // Not valid JSON: kept as the raw string so the engine answers the call
    // with an error instead of running it with made-up arguments.
    assert_eq!(call.input, json!("{\"path\": \"a.txt\", \"text\": \"unfin"));
}

#[tokio::test]
async fn json_padded_with_spaces_and_crlf_framing() {
    let body = "event: message_start\r\ndata:   { \"type\" : \"message_start\" , \"message\" : { \"model\" : \"claude-haiku-4-5\", \"usage\" : { \"input_tokens\" : 2 } } }  \r\n\r\n: keep-alive\r\n\r\nevent: content_block_start\r\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\r\n\r\nevent: content_block_delta\r\ndata: { \"type\": \"content_block_delta\", \"index\": 0, \"delta\": { \"type\": \"text_delta\", \"text\": \"hi\" } }\r\n\r\nevent: content_block_stop\r\ndata: {\"type\":\"content_block_stop\",\"index\":0}\r\n\r\nevent: message_delta\r\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"stop_sequence\"},\"usage\":{\"output_tokens\":1}}\r\n\r\nevent: message_stop\r\ndata: {\"type\":\"message_stop\"}\r\n\r\n";
    let outcome = agentloop_providers::replay_sse(ApiKind::AnthropicMessages, body.as_bytes());
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert_eq!(outcome.stop_reason, Some(StopReason::STOP_SEQUENCE));
    assert_eq!(
        outcome.content,
        vec![agentloop_types::ContentBlock::text("hi")]
    );
}
