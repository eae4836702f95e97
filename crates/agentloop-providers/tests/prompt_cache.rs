//! Prompt-cache breakpoints on Anthropic requests and the OpenAI cache key.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agentloop_providers::{CacheTtl, HttpProvider, PromptCache, ProviderConfig};
use agentloop_types::{
    ApiKind, ContentBlock, Message, ModelRequest, Role, ToolDefinition, ToolResultBlock,
    ToolUseBlock,
};
use common::*;
use serde_json::{Value, json};

/// A tool run three steps in: every step a call and its result.
fn tool_run() -> ModelRequest {
    let mut request = request("claude-sonnet-4-5");
    request.options.system_prompt = Some("You are a careful coding agent.".into());
    request.tools = ["read_file", "run_tests"]
        .iter()
        .map(|name| ToolDefinition {
            name: (*name).into(),
            description: format!("The {name} tool."),
            input_schema: json!({"type": "object"}).into(),
        })
        .collect();
    for step in 0..3 {
        request.messages.push(Message::new(
            format!("a{step}"),
            Role::Assistant,
            vec![
                ContentBlock::Thinking {
                    thinking: "Next file.".into(),
                    signature: Some("sig".into()),
                },
                ContentBlock::ToolUse(ToolUseBlock {
                    id: format!("call_{step}"),
                    name: "read_file".into(),
                    input: json!({"path": format!("src/{step}.rs")}).into(),
                }),
            ],
        ));
        request.messages.push(Message::new(
            format!("r{step}"),
            Role::User,
            vec![ContentBlock::ToolResult(ToolResultBlock::ok(
                format!("call_{step}"),
                format!("contents of src/{step}.rs"),
            ))],
        ));
    }
    request
}

async fn body(config: ProviderConfig, request: &ModelRequest) -> Value {
    HttpProvider::new(config)
        .unwrap()
        .request_body(request)
        .await
        .unwrap()
}

/// Where the body carries `cache_control`, as JSON pointers.
fn marks(value: &Value, at: &str, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(control) = map.get("cache_control") {
                out.push(format!("{at} {control}"));
            }
            for (key, v) in map {
                marks(v, &format!("{at}/{key}"), out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                marks(v, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[tokio::test]
async fn anthropic_breakpoints_follow_the_policy() {
    let request = tool_run();
    let on = body(ProviderConfig::anthropic("k"), &request).await;
    let mut found = Vec::new();
    marks(&on, "", &mut found);
    assert!(found.len() <= 4, "the API allows four");
    let hour = body(
        ProviderConfig::anthropic("k").with_prompt_cache(PromptCache {
            ttl: CacheTtl::OneHour,
            ..PromptCache::default()
        }),
        &request,
    )
    .await;
    let mut found_1h = Vec::new();
    marks(&hour, "", &mut found_1h);
    let off = body(
        ProviderConfig::anthropic("k").with_prompt_cache(PromptCache::disabled()),
        &request,
    )
    .await;
    let mut none = Vec::new();
    marks(&off, "", &mut none);
    assert!(none.is_empty());
    assert_eq!(off["system"], "You are a careful coding agent.");
    insta::assert_json_snapshot!(json!({
        "five_minutes": found,
        "one_hour": found_1h,
    }));
}

#[tokio::test]
async fn a_prefill_or_no_tools_moves_no_mark_into_the_assistant_turn() {
    let mut request = tool_run();
    request.tools = Default::default();
    request.options.system_prompt = None;
    request.options.prefill_response = Some("Done:".into());
    let body = body(ProviderConfig::anthropic("k"), &request).await;
    let mut found = Vec::new();
    marks(&body, "", &mut found);
    // Only the two latest user messages (the prefill is the last message).
    assert_eq!(
        found,
        [
            "/messages/4/content/0 {\"type\":\"ephemeral\"}",
            "/messages/6/content/0 {\"type\":\"ephemeral\"}",
        ]
    );
}

#[tokio::test]
async fn openai_prompt_cache_key_is_configurable() {
    let cache = PromptCache {
        key: Some("chat-42".into()),
        ..PromptCache::default()
    };
    for api in [ApiKind::OpenaiChat, ApiKind::OpenaiResponses] {
        let config = config(api, "http://unused.invalid");
        let plain = body(config.clone(), &tool_run()).await;
        assert!(plain.get("prompt_cache_key").is_none());
        let keyed = body(config.with_prompt_cache(cache.clone()), &tool_run()).await;
        assert_eq!(keyed["prompt_cache_key"], "chat-42");
        let mut found = Vec::new();
        marks(&keyed, "", &mut found);
        assert!(found.is_empty(), "no cache_control outside Anthropic");
    }
}

#[test]
fn cached_tokens_are_reported_and_priced_apart() {
    let body = b"data: {\"model\":\"gpt-4.1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: {\"model\":\"gpt-4.1\",\"choices\":[],\"usage\":{\"prompt_tokens\":10000,\"completion_tokens\":10,\"prompt_tokens_details\":{\"cached_tokens\":8000}}}\n\ndata: [DONE]\n\n";
    let usage = agentloop_providers::replay_sse(ApiKind::OpenaiChat, body)
        .usage
        .unwrap();
    assert_eq!((usage.input_tokens, usage.cache_read_tokens), (2000, 8000));
    // gpt-4.1: $2 input, $0.50 cached input, $8 output per million.
    let expected = (2000.0 * 2.0 + 8000.0 * 0.5 + 10.0 * 8.0) / 1e6;
    assert!((usage.cost - expected).abs() < 1e-9, "{}", usage.cost);
}
