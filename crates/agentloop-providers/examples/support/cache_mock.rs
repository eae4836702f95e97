//! A mock of Anthropic's prompt cache, applying the documented rules to
//! request bodies, and a scripted 30-step tool run priced through it.
//!
//! Rules applied: the cached prefix runs tools, then system, then messages,
//! block by block; an entry is written at each block marked with
//! `cache_control` whose prefix reaches the model's minimum (1,024 tokens
//! for Sonnet); a request reads the longest cached prefix found at one of
//! its marks or up to 20 blocks before it; the tokens from there to the
//! last mark are written, the rest after the last mark is plain input.
//! Entries are assumed to stay alive (steps come within the lifetime).
//! Tokens are estimated as four bytes of JSON each.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};

use agentloop_providers::{HttpProvider, PromptCache, ProviderConfig, replay_sse};
use agentloop_types::{
    ApiKind, ContentBlock, Message, ModelRequest, RequestOptions, Role, TokenTotals,
    ToolDefinition, ToolResultBlock, ToolUseBlock,
};
use serde_json::{Value, json};

/// Smallest cacheable prefix for the simulated model.
const MIN_CACHEABLE: u64 = 1024;
/// How far back from a mark the API looks for an earlier entry.
const LOOKBACK: usize = 20;

/// Anthropic's cache, as a set of prefix fingerprints.
#[derive(Default)]
pub struct CacheMock {
    entries: HashSet<u64>,
}

/// Input tokens of one request, as the API would report them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheUsage {
    /// Tokens billed at the full input rate.
    pub input: u64,
    /// Tokens written to the cache.
    pub write: u64,
    /// Tokens read from the cache.
    pub read: u64,
}

/// The body's blocks in prefix order, each with whether it is marked.
fn blocks(body: &Value) -> Vec<(Value, bool)> {
    let mut out = Vec::new();
    let mut push = |block: &Value| {
        let mut clean = block.clone();
        let marked = clean
            .as_object_mut()
            .and_then(|o| o.remove("cache_control"))
            .is_some();
        out.push((clean, marked));
    };
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .for_each(&mut push);
    match &body["system"] {
        Value::Array(items) => items.iter().for_each(&mut push),
        Value::String(text) => push(&json!({"type": "text", "text": text})),
        _ => {}
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        push(&json!({"role": message["role"]}));
        message["content"]
            .as_array()
            .into_iter()
            .flatten()
            .for_each(&mut push);
    }
    out
}

impl CacheMock {
    /// Applies the rules to one request body.
    pub fn request(&mut self, body: &Value) -> CacheUsage {
        let blocks = blocks(body);
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        let mut prefix = Vec::with_capacity(blocks.len());
        let mut tokens = Vec::with_capacity(blocks.len());
        let mut total = 0u64;
        for (block, _) in &blocks {
            let text = block.to_string();
            text.hash(&mut hasher);
            prefix.push(hasher.finish());
            total += (text.len() as u64).div_ceil(4);
            tokens.push(total);
        }
        let marks: Vec<usize> = (0..blocks.len()).filter(|i| blocks[*i].1).collect();
        let Some(&last) = marks.last() else {
            return CacheUsage {
                input: total,
                ..CacheUsage::default()
            };
        };
        let hit = marks
            .iter()
            .filter_map(|&mark| {
                (mark.saturating_sub(LOOKBACK)..=mark)
                    .rev()
                    .find(|&i| self.entries.contains(&prefix[i]))
            })
            .max();
        let read = hit.map_or(0, |i| tokens[i]);
        for &mark in &marks {
            if tokens[mark] >= MIN_CACHEABLE {
                self.entries.insert(prefix[mark]);
            }
        }
        let cached_end = if tokens[last] >= MIN_CACHEABLE {
            tokens[last]
        } else {
            read
        };
        CacheUsage {
            input: total - cached_end,
            write: cached_end - read,
            read,
        }
    }
}

/// The scripted run: a long system prompt, twelve tools, and per step a
/// call and a sizeable result.
pub fn request_at(step: usize) -> ModelRequest {
    let system = (0..120)
        .map(|i| format!("Rule {i}: keep changes small, tested and explained. "))
        .collect::<String>();
    let tools = (0..12)
        .map(|i| ToolDefinition {
            name: format!("tool_{i}"),
            description: format!("Tool number {i}. ").repeat(20),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}})
                .into(),
        })
        .collect();
    let mut messages = vec![Message::user_text("task", "Fix the failing tests.")];
    for i in 0..step {
        messages.push(Message::new(
            format!("a{i}"),
            Role::Assistant,
            vec![
                ContentBlock::text(format!("Step {i}: reading the next file.")),
                ContentBlock::ToolUse(ToolUseBlock {
                    id: format!("call_{i}"),
                    name: "tool_0".into(),
                    input: json!({"path": format!("src/file_{i}.rs")}).into(),
                }),
            ],
        ));
        messages.push(Message::new(
            format!("r{i}"),
            Role::User,
            vec![ContentBlock::ToolResult(ToolResultBlock::ok(
                format!("call_{i}"),
                format!("fn item_{i}() {{ /* body */ }}\n").repeat(80),
            ))],
        ));
    }
    ModelRequest {
        options: RequestOptions {
            model: "claude-sonnet-4-5".into(),
            system_prompt: Some(system),
            ..RequestOptions::default()
        },
        response_format: None,
        messages: messages.into(),
        tools,
        attachments: None,
    }
}

/// The usage the adapter decodes (and prices) for a turn that used
/// `cache` input tokens and wrote `output` tokens.
pub fn decoded_usage(cache: CacheUsage, output: u64) -> TokenTotals {
    let events = [
        json!({"type": "message_start", "message": {"model": "claude-sonnet-4-5", "usage": {
            "input_tokens": cache.input,
            "cache_creation_input_tokens": cache.write,
            "cache_read_input_tokens": cache.read,
            "cache_creation": {"ephemeral_5m_input_tokens": cache.write, "ephemeral_1h_input_tokens": 0},
            "output_tokens": 1,
        }}}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": output}}),
        json!({"type": "message_stop"}),
    ];
    let body: String = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
        .collect();
    replay_sse(ApiKind::AnthropicMessages, body.as_bytes())
        .usage
        .unwrap_or_default()
}

/// Runs `steps` requests of the scripted run with `cache` settings and
/// returns the summed usage.
pub async fn run(steps: usize, cache: PromptCache) -> Result<TokenTotals, String> {
    let provider = HttpProvider::new(ProviderConfig::anthropic("unused").with_prompt_cache(cache))
        .map_err(|e| e.to_string())?;
    let mut mock = CacheMock::default();
    let mut sum = TokenTotals::default();
    for step in 0..steps {
        let body = provider
            .request_body(&request_at(step))
            .await
            .map_err(|e| e.to_string())?;
        sum += decoded_usage(mock.request(&body), 150);
    }
    Ok(sum)
}
