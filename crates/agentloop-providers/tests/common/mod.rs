//! Helpers shared by the integration tests: fixture bodies, a mock server
//! and a compact, readable rendering of a turn for snapshots.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use agentloop_providers::{HttpProvider, ProviderConfig, RetryPolicy};
use agentloop_types::{
    ApiKind, ContentBlock, Message, ModelChunk, ModelProvider, ModelRequest, ProviderError,
    RequestOptions, StreamAssembler, StreamDelta,
};
use futures::StreamExt;
use serde_json::{Value, json};

/// Path of a copied fixture.
pub fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The JSON lines of a fixture.
pub fn fixture_lines(name: &str) -> Vec<String> {
    std::fs::read_to_string(fixture_path(name))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// An SSE body built from JSON lines the way the API frames them.
pub fn sse_body(api: ApiKind, lines: &[String]) -> String {
    let mut body = String::new();
    for line in lines {
        match api {
            ApiKind::OpenaiChat | ApiKind::Gemini => body.push_str(&format!("data: {line}\n\n")),
            _ => {
                let value: Value = serde_json::from_str(line).unwrap();
                let kind = value["type"].as_str().unwrap();
                body.push_str(&format!("event: {kind}\ndata: {line}\n\n"));
            }
        }
    }
    if api == ApiKind::OpenaiChat {
        body.push_str("data: [DONE]\n\n");
    }
    body
}

/// The API a fixture file belongs to.
pub fn fixture_api(name: &str) -> ApiKind {
    if name.starts_with("anthropic") {
        ApiKind::AnthropicMessages
    } else if name.starts_with("google") {
        ApiKind::Gemini
    } else if name.starts_with("azure") || name == "openai-text.chunks.txt" {
        ApiKind::OpenaiChat
    } else {
        ApiKind::OpenaiResponses
    }
}

/// The fixture's SSE bodies (several for the multi-response recording).
pub fn fixture_bodies(name: &str) -> Vec<String> {
    let api = fixture_api(name);
    let lines = fixture_lines(name);
    let mut groups: Vec<Vec<String>> = Vec::new();
    for line in lines {
        if groups.is_empty() || line.contains("\"type\":\"response.created\"") {
            groups.push(Vec::new());
        }
        groups.last_mut().unwrap().push(line);
    }
    groups.iter().map(|g| sse_body(api, g)).collect()
}

/// A config for `api` pointing at `base`, with no retries unless given.
pub fn config(api: ApiKind, base: &str) -> ProviderConfig {
    let config = match api {
        ApiKind::AnthropicMessages => ProviderConfig::anthropic("test-key"),
        ApiKind::OpenaiChat => ProviderConfig::openai_chat("test-key"),
        ApiKind::OpenaiResponses => ProviderConfig::openai_responses("test-key"),
        ApiKind::Gemini => ProviderConfig::gemini("test-key"),
    };
    config.with_base_url(base).with_retry(RetryPolicy::none())
}

/// A provider whose client keeps no idle-connection timer, so that a
/// paused tokio clock only moves for the provider's own backoff.
pub fn paused_clock_provider(config: ProviderConfig) -> HttpProvider {
    agentloop_providers::ensure_crypto_provider();
    let client = reqwest::Client::builder()
        .pool_idle_timeout(None)
        .build()
        .unwrap();
    HttpProvider::with_client(config, client)
}

/// The endpoint path of `api` (for Gemini, streaming requests to the
/// model of [`request`]).
pub fn endpoint_path(api: ApiKind) -> &'static str {
    match api {
        ApiKind::AnthropicMessages => "/messages",
        ApiKind::OpenaiChat => "/chat/completions",
        ApiKind::OpenaiResponses => "/responses",
        ApiKind::Gemini => "/models/test-model:streamGenerateContent",
    }
}

/// A small request for `model`.
pub fn request(model: &str) -> ModelRequest {
    ModelRequest {
        options: RequestOptions {
            model: model.into(),
            ..RequestOptions::default()
        },
        response_format: None,
        messages: vec![Message::user_text("u1", "Hello")].into(),
        tools: Default::default(),
        attachments: None,
    }
}

/// Everything one turn yielded.
pub struct Turn {
    pub chunks: Vec<ModelChunk>,
    pub error: Option<ProviderError>,
    pub after_end: usize,
}

/// Runs one turn to its end.
pub async fn run(provider: &HttpProvider, request: ModelRequest) -> Turn {
    let mut stream = provider.stream(request);
    let mut chunks = Vec::new();
    let mut error = None;
    while let Some(item) = stream.next().await {
        match item {
            Ok(chunk) => chunks.push(chunk),
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    let after_end = stream.count().await;
    Turn {
        chunks,
        error,
        after_end,
    }
}

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let head: String = text.chars().take(max).collect();
        format!("{head}… ({} chars)", text.chars().count())
    }
}

/// A block rendered for snapshots: long opaque payloads shortened.
pub fn render_block(block: &ContentBlock) -> Value {
    match block {
        ContentBlock::Text { text, citations } => {
            let mut v = json!({"text": text});
            if !citations.is_empty() {
                let cites: Vec<Value> = citations
                    .iter()
                    .map(|c| json!({"type": c["type"], "url": c.get("url"), "title": c.get("title").map(|t| clip(t.as_str().unwrap_or_default(), 60))}))
                    .collect();
                v["citations"] = json!(cites);
            }
            v
        }
        ContentBlock::Thinking {
            thinking,
            signature,
        } => json!({
            "thinking": thinking,
            "signature": signature.as_ref().map(|s| clip(s, 16)),
        }),
        ContentBlock::RedactedThinking { data } => json!({"redacted_thinking": clip(data, 16)}),
        ContentBlock::ToolUse(call) => {
            json!({"tool_use": {"id": call.id, "name": call.name, "input": call.input}})
        }
        ContentBlock::ToolResult(result) => json!({"tool_result": result}),
        ContentBlock::Image { .. } | ContentBlock::Document { .. } => json!({"attachment": block}),
        ContentBlock::Provider { api, block } => {
            let keys: Vec<&String> = block
                .as_object()
                .map(|o| o.keys().collect())
                .unwrap_or_default();
            json!({"provider": {
                "api": api.as_str(),
                "type": block["type"],
                "id": block.get("id").or(block.get("tool_use_id")),
                "keys": keys,
                "input": block.get("input"),
                "json_len": block.to_string().len(),
            }})
        }
    }
}

/// A turn rendered for snapshots: content, stop reason, usage, error and
/// how many deltas of each kind arrived.
pub fn render(chunks: &[ModelChunk], error: Option<&ProviderError>) -> Value {
    let mut assembler = StreamAssembler::new();
    let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut finish = Value::Null;
    for chunk in chunks {
        match chunk {
            ModelChunk::Delta(delta) => {
                assembler.apply(delta).unwrap();
                let kind = match delta {
                    StreamDelta::BlockStart { .. } => "block_start",
                    StreamDelta::Text { .. } => "text",
                    StreamDelta::Thinking { .. } => "thinking",
                    StreamDelta::Signature { .. } => "signature",
                    StreamDelta::ToolInput { .. } => "tool_input",
                    StreamDelta::Citation { .. } => "citation",
                    StreamDelta::BlockStop { .. } => "block_stop",
                };
                *counts.entry(kind).or_default() += 1;
            }
            ModelChunk::Finish { stop_reason, usage } => {
                finish = json!({"stop_reason": stop_reason, "usage": usage});
            }
        }
    }
    let content: Vec<Value> = assembler.finish().iter().map(render_block).collect();
    json!({
        "content": content,
        "finish": finish,
        "error": error,
        "deltas": counts,
    })
}
