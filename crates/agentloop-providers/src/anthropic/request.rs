//! Anthropic Messages request bodies.

use agentloop_types::{ApiKind, ContentBlock, ModelRequest, ProviderError, Role};
use serde_json::{Map, Value, json};

use crate::attachments::{Attachments, Resolved};
use crate::cache::{PromptCache, place_breakpoints};
use crate::request_common::{
    input_object, offered_tools, parameters_schema, system_text, temperature,
};

/// Smallest thinking budget the API accepts.
const MIN_THINKING_BUDGET: u32 = 1024;

/// Builds the body of a `POST /v1/messages` request.
///
/// Rules worth knowing: system messages are lifted into `system`; blocks of
/// other APIs and unsigned thinking (which Anthropic would reject) are left
/// out; empty text blocks are left out (the API rejects them); consecutive
/// messages of one role are merged; with thinking enabled `temperature` is
/// not sent (the API allows only the default) and `max_tokens` is raised
/// above the budget; a prefill becomes a trailing assistant message with
/// trailing whitespace removed; prompt-cache breakpoints are placed by the
/// policy of [`crate::cache`]. The API has no structured-output field: an
/// output schema is not sent (the engine asks through its `final_output`
/// tool instead).
pub(crate) fn build(
    request: &ModelRequest,
    attachments: &Attachments,
    stream: bool,
    cache: &PromptCache,
) -> Result<Value, ProviderError> {
    let options = &request.options;
    let mut messages: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in &request.messages {
        let role = match message.role {
            Role::System => continue,
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        let mut blocks = Vec::new();
        for block in &message.content {
            if let Some(b) = block_json(block, attachments)? {
                blocks.push(b);
            }
        }
        if blocks.is_empty() {
            continue;
        }
        match messages.last_mut() {
            Some((last_role, last)) if *last_role == role => last.extend(blocks),
            _ => messages.push((role, blocks)),
        }
    }
    if let Some(prefill) = options
        .prefill_response
        .as_deref()
        .map(str::trim_end)
        .filter(|p| !p.is_empty())
    {
        let block = json!({"type": "text", "text": prefill});
        match messages.last_mut() {
            Some(("assistant", last)) => last.push(block),
            _ => messages.push(("assistant", vec![block])),
        }
    }
    let messages: Vec<Value> = messages
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();

    let mut body = Map::new();
    body.insert("model".into(), json!(options.model));
    let mut max_tokens = options.max_tokens;
    if options.enable_reasoning {
        let budget = options.reasoning_budget_tokens.max(MIN_THINKING_BUDGET);
        if max_tokens <= budget {
            max_tokens = budget.saturating_add(options.max_tokens.max(1));
        }
        body.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": budget}),
        );
    } else if let Some(t) = options.temperature {
        body.insert("temperature".into(), temperature(t));
    }
    body.insert("max_tokens".into(), json!(max_tokens));
    if let Some(system) = system_text(request) {
        body.insert("system".into(), json!(system));
    }
    body.insert("messages".into(), Value::Array(messages));
    if !options.stop_sequences.is_empty() {
        body.insert("stop_sequences".into(), json!(options.stop_sequences));
    }
    let mut tools: Vec<Value> = offered_tools(request)
        .into_iter()
        .map(|t| {
            json!({
                "name": t.name,
                "description": t.description,
                "input_schema": parameters_schema(&t.input_schema),
            })
        })
        .collect();
    if options.web_search_enabled {
        tools.push(json!({"type": "web_search_20250305", "name": "web_search"}));
    }
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    place_breakpoints(&mut body, cache);
    if let Some(id) = container_id(request, std::time::SystemTime::now()) {
        body.insert("container".into(), json!(id));
    }
    if stream {
        body.insert("stream".into(), json!(true));
    }
    Ok(Value::Object(body))
}

/// The code-execution container to continue in: the one the latest
/// assistant message ran in, unless its `expires_at` has passed (a request
/// naming an expired container fails, a fresh one is created otherwise).
pub(crate) fn container_id(request: &ModelRequest, now: std::time::SystemTime) -> Option<String> {
    let block = request
        .messages
        .iter()
        .rev()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| m.content.iter().rev())
        .find_map(|b| match b {
            ContentBlock::Provider {
                api: ApiKind::AnthropicMessages,
                block,
            } if is_container(block) => Some(block),
            _ => None,
        })?;
    let expired = block
        .get("expires_at")
        .and_then(Value::as_str)
        .is_some_and(|at| crate::timestamp::is_past(at, now));
    if expired {
        return None;
    }
    block.get("id").and_then(Value::as_str).map(str::to_owned)
}

/// The block the decoder adds for a turn's container; it is not content.
fn is_container(block: &Value) -> bool {
    block.get("type").and_then(Value::as_str) == Some("container")
}

fn block_json(
    block: &ContentBlock,
    attachments: &Attachments,
) -> Result<Option<Value>, ProviderError> {
    Ok(Some(match block {
        ContentBlock::Text { text, citations } => {
            if text.is_empty() {
                return Ok(None);
            }
            let mut b = json!({"type": "text", "text": text});
            if !citations.is_empty() {
                b["citations"] = json!(citations);
            }
            b
        }
        ContentBlock::Thinking {
            thinking,
            signature,
        } => match signature {
            Some(signature) => {
                json!({"type": "thinking", "thinking": thinking, "signature": signature})
            }
            None => return Ok(None),
        },
        ContentBlock::RedactedThinking { data } => {
            json!({"type": "redacted_thinking", "data": data})
        }
        ContentBlock::ToolUse(call) => json!({
            "type": "tool_use",
            "id": call.id,
            "name": call.name,
            "input": input_object(&call.input),
        }),
        ContentBlock::ToolResult(result) => {
            let mut b = json!({
                "type": "tool_result",
                "tool_use_id": result.tool_use_id,
                "content": result.content,
            });
            if result.is_error {
                b["is_error"] = json!(true);
            }
            b
        }
        ContentBlock::Image { source } => {
            json!({"type": "image", "source": source_json(&attachments.resolve(source)?)})
        }
        ContentBlock::Document { source, name } => {
            let resolved = attachments.resolve(source)?;
            let source = match resolved.as_text() {
                Some(text) => json!({"type": "text", "media_type": "text/plain", "data": text}),
                None => source_json(&resolved),
            };
            let mut b = json!({"type": "document", "source": source});
            if let Some(name) = name {
                b["title"] = json!(name);
            }
            b
        }
        ContentBlock::Provider { api, block } => {
            if *api != ApiKind::AnthropicMessages || is_container(block) {
                return Ok(None);
            }
            block.clone()
        }
    }))
}

fn source_json(resolved: &Resolved) -> Value {
    match resolved {
        Resolved::Base64 { media_type, data } => {
            json!({"type": "base64", "media_type": media_type, "data": data})
        }
        Resolved::Url(url) => json!({"type": "url", "url": url}),
    }
}
