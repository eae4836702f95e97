//! The Gemini adapter beyond the recordings: the wire (URL, key, streaming
//! or not), thought signatures and call ids on the way back, and the
//! stream shapes the recordings lack (safety blocks, blocked prompts,
//! grounding, cached tokens, errors, cut streams).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agentloop_providers::{HttpProvider, ProviderConfig, replay_sse};
use agentloop_types::{
    ApiKind, ContentBlock, Message, ProviderErrorKind, Role, StopReason, ToolResultBlock,
    ToolUseBlock,
};
use common::*;
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn replay(chunks: &[Value]) -> agentloop_providers::ReplayOutcome {
    let lines: Vec<String> = chunks.iter().map(Value::to_string).collect();
    replay_sse(
        ApiKind::Gemini,
        sse_body(ApiKind::Gemini, &lines).as_bytes(),
    )
}

fn rendered(chunks: &[Value]) -> Value {
    let outcome = replay(chunks);
    render(&outcome.chunks, outcome.error.as_ref())
}

#[tokio::test]
async fn streams_and_whole_responses_over_the_wire() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/models/gemini-3-pro-preview:streamGenerateContent"))
        .and(query_param("alt", "sse"))
        .and(header("x-goog-api-key", "test-key"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(fixture_bodies("google-text.chunks.txt").remove(0)),
        )
        .expect(1)
        .mount(&server)
        .await;
    let whole: Value =
        serde_json::from_str(&fixture_lines("google-tool-call.chunks.txt")[0]).unwrap();
    let mut whole = whole;
    whole["candidates"][0]["finishReason"] = json!("STOP");
    Mock::given(method("POST"))
        .and(path("/models/gemini-3-pro-preview:generateContent"))
        .and(header("x-goog-api-key", "test-key"))
        .respond_with(ResponseTemplate::new(200).set_body_json(&whole))
        .expect(1)
        .mount(&server)
        .await;
    let provider = HttpProvider::new(config(ApiKind::Gemini, &server.uri())).unwrap();
    let streamed = run(&provider, request("gemini-3-pro-preview")).await;
    assert!(streamed.error.is_none(), "{:?}", streamed.error);
    let mut once = request("gemini-3-pro-preview");
    once.options.disable_stream = true;
    let whole_turn = run(&provider, once).await;
    assert!(whole_turn.error.is_none(), "{:?}", whole_turn.error);
    let Some(agentloop_types::ModelChunk::Finish { stop_reason, .. }) = whole_turn.chunks.last()
    else {
        panic!("finish expected");
    };
    assert_eq!(*stop_reason, StopReason::ToolUse);

    let body = provider
        .request_body(&request("gemini-3-pro-preview"))
        .await
        .unwrap();
    let received = &server.received_requests().await.unwrap()[0];
    let sent: Value = serde_json::from_slice(&received.body).unwrap();
    assert_eq!(sent, body);
    assert_eq!(
        ProviderConfig::gemini("k").endpoint_for("gemini-2.5-pro", true),
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    );
}

#[tokio::test]
async fn signatures_and_calls_go_back_where_they_came_from() {
    let streamed = replay_sse(
        ApiKind::Gemini,
        fixture_bodies("google-stream-no-args-tool-call.chunks.txt")[0].as_bytes(),
    );
    let text_turn = replay_sse(
        ApiKind::Gemini,
        fixture_bodies("google-issue-10781.1.chunks.txt")[0].as_bytes(),
    );
    let ids: Vec<String> = streamed
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolUse(call) => Some(call.id.clone()),
            _ => None,
        })
        .collect();
    let mut next = request("gemini-3-flash-preview");
    next.messages.push(Message::new(
        "a1",
        Role::Assistant,
        streamed.content.clone(),
    ));
    next.messages.push(Message::new(
        "r1",
        Role::User,
        ids.iter()
            .enumerate()
            .map(|(i, id)| {
                let result = if i == 0 {
                    ToolResultBlock::ok(id.clone(), "dark")
                } else {
                    ToolResultBlock::error(id.clone(), "no such screen")
                };
                ContentBlock::ToolResult(result)
            })
            .collect(),
    ));
    next.messages.push(Message::new(
        "a2",
        Role::Assistant,
        text_turn.content.clone(),
    ));
    next.messages.push(Message::new(
        "r2",
        Role::User,
        vec![ContentBlock::ToolResult(ToolResultBlock::ok(
            "g1bmv6il", "Sunny",
        ))],
    ));
    // A turn from another provider: its call carries no signature.
    next.messages.push(Message::new(
        "a3",
        Role::Assistant,
        vec![ContentBlock::ToolUse(ToolUseBlock {
            id: "toolu_1".into(),
            name: "read_theme".into(),
            input: json!({}).into(),
        })],
    ));
    next.messages.push(Message::new(
        "r3",
        Role::User,
        vec![ContentBlock::ToolResult(ToolResultBlock::ok(
            "toolu_1", "light",
        ))],
    ));
    let body = HttpProvider::new(ProviderConfig::gemini("k"))
        .unwrap()
        .request_body(&next)
        .await
        .unwrap();
    let contents = body["contents"].as_array().unwrap();
    let first_call = &contents[1]["parts"][0];
    let ContentBlock::Provider { block, .. } = &streamed.content[2] else {
        panic!("signature block expected");
    };
    assert_eq!(first_call["thoughtSignature"], block["thoughtSignature"]);
    // Shortened signatures keep the snapshot readable.
    let mut shown = body.clone();
    for content in shown["contents"].as_array_mut().unwrap() {
        for part in content["parts"].as_array_mut().unwrap() {
            if let Some(Value::String(s)) = part.get_mut("thoughtSignature") {
                s.truncate(12);
            }
        }
    }
    insta::assert_json_snapshot!(shown["contents"]);
}

#[test]
fn safety_blocks_prompt_blocks_and_grounding() {
    let usage = json!({"promptTokenCount": 1200, "cachedContentTokenCount": 1000, "candidatesTokenCount": 5, "thoughtsTokenCount": 7});
    let safety = rendered(&[
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Here is how to"}]}}], "modelVersion": "gemini-2.5-flash"}),
        json!({"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "SAFETY", "finishMessage": "blocked",
            "safetyRatings": [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": true}]}],
            "usageMetadata": usage, "modelVersion": "gemini-2.5-flash"}),
    ]);
    let prompt_blocked = rendered(&[json!({
        "promptFeedback": {"blockReason": "PROHIBITED_CONTENT", "safetyRatings": []},
        "usageMetadata": {"promptTokenCount": 40, "totalTokenCount": 40},
        "modelVersion": "gemini-2.5-flash"
    })]);
    let grounded = rendered(&[
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "It rained."}]}}], "modelVersion": "gemini-2.5-flash"}),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP",
            "groundingMetadata": {"webSearchQueries": ["weather berlin yesterday"],
                "groundingChunks": [{"web": {"uri": "https://example.com/w", "title": "Weather"}}],
                "groundingSupports": [{"segment": {"startIndex": 0, "endIndex": 10, "text": "It rained."}, "groundingChunkIndices": [0]}]}}],
            "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 4}, "modelVersion": "gemini-2.5-flash"}),
    ]);
    let long = rendered(&[
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "and so"}]}, "finishReason": "MAX_TOKENS"}],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2}, "modelVersion": "gemini-2.5-pro"}),
    ]);
    insta::assert_json_snapshot!(json!({
        "safety": safety,
        "prompt_blocked": prompt_blocked,
        "grounded": grounded,
        "max_tokens": long,
    }));
}

#[test]
fn errors_and_cut_streams() {
    let error = replay(&[
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"}]}}]}),
        json!({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}),
    ]);
    let e = error.error.unwrap();
    assert_eq!(e.kind, ProviderErrorKind::Api);
    assert_eq!(e.error_type.as_deref(), Some("UNAVAILABLE"));
    assert!(agentloop_providers::is_retryable(&e));

    let lines = fixture_lines("google-text.chunks.txt");
    let cut = replay_sse(
        ApiKind::Gemini,
        sse_body(ApiKind::Gemini, &lines[..2]).as_bytes(),
    );
    let e = cut.error.unwrap();
    assert_eq!(e.kind, ProviderErrorKind::Truncated);
    let usage = e.partial.unwrap().usage.unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (9, 23 + 185));
    assert!(usage.cost_unreliable);
    assert_eq!(
        cut.content,
        vec![ContentBlock::text(
            "There are **3** \"r\"s in strawberry.\n\nst**r**awbe**rr**y"
        )]
    );
}

#[tokio::test]
async fn http_errors_in_googles_shape() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({"error": {
            "code": 400, "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT"
        }})))
        .mount(&server)
        .await;
    let provider = HttpProvider::new(config(ApiKind::Gemini, &server.uri())).unwrap();
    let turn = run(&provider, request("gemini-2.5-flash")).await;
    let e = turn.error.unwrap();
    assert_eq!((e.kind, e.status), (ProviderErrorKind::Http, Some(400)));
    assert_eq!(e.error_type.as_deref(), Some("INVALID_ARGUMENT"));
    assert!(e.message.starts_with("API key not valid"));
}

#[tokio::test]
async fn a_signed_thought_goes_back_as_the_thought_part() {
    let outcome = replay(&[
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Plan: look it up.", "thought": true, "thoughtSignature": "c2lnLXRob3VnaHQ="}]}}]}),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Unsigned musing.", "thought": true}]}}]}),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Answer."}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 2, "thoughtsTokenCount": 9}}),
    ]);
    let mut next = request("gemini-2.5-flash");
    next.messages
        .push(Message::new("a1", Role::Assistant, outcome.content));
    next.messages.push(Message::user_text("u2", "Thanks"));
    let body = HttpProvider::new(ProviderConfig::gemini("k"))
        .unwrap()
        .request_body(&next)
        .await
        .unwrap();
    assert_eq!(
        body["contents"][1]["parts"],
        json!([
            {"text": "Plan: look it up.", "thought": true, "thoughtSignature": "c2lnLXRob3VnaHQ="},
            {"text": "Answer."},
        ])
    );
}

#[test]
fn unreadable_streamed_arguments_are_kept_not_guessed() {
    let outcome = replay(&[
        json!({"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "save", "willContinue": true}}]}}]}),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"partialArgs": [{"jsonPath": "$.path", "stringValue": "a.txt"}], "willContinue": true}}]}}]}),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"partialArgs": [{"jsonPath": "$.path.deeper", "stringValue": "x"}], "willContinue": true}}]}}]}),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {}}]}, "finishReason": "STOP"}]}),
    ]);
    let raw = raw_arguments(&outcome.content[0]);
    assert!(
        raw.starts_with("{\"path\":\"a.txt\"}") && raw.contains("$.path.deeper"),
        "{raw}"
    );
}

#[test]
fn a_hostile_array_index_is_kept_as_unreadable_not_allocated() {
    // Four billion nulls of padding would abort the process; the piece is
    // kept verbatim instead and the call is answered with an error.
    let outcome = replay(&[
        json!({"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "save", "willContinue": true}}]}}]}),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"partialArgs": [{"jsonPath": "$.items[4000000000]", "stringValue": "x"}], "willContinue": true}}]}}]}),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {}}]}, "finishReason": "STOP"}]}),
    ]);
    let raw = raw_arguments(&outcome.content[0]);
    assert!(raw.contains("$.items[4000000000]"), "{raw}");
}

/// The raw text a tool call kept for arguments it could not read.
fn raw_arguments(block: &ContentBlock) -> String {
    let ContentBlock::ToolUse(call) = block else {
        panic!("tool use expected, got {block:?}");
    };
    let Value::String(raw) = call.input.value() else {
        panic!("raw arguments expected: {:?}", call.input);
    };
    raw
}
