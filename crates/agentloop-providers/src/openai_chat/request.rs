//! Chat Completions request bodies.

use agentloop_types::{ContentBlock, ModelRequest, ProviderError, ReasoningEffort, Role};
use serde_json::{Map, Value, json};

use crate::attachments::{Attachments, Resolved};
use crate::config::ProviderConfig;
use crate::error;
use crate::request_common::{
    input_object, offered_tools, parameters_schema, system_text, temperature,
};

/// Builds the body of a `POST /chat/completions` request.
///
/// Tool results become `tool` messages placed before the rest of their
/// user message; thinking and blocks of other APIs are not sent (Chat has
/// no field for them); prefill and web search are refused as unsupported;
/// `reasoning_summary` is ignored (Chat has no summaries); a configured
/// prompt cache key goes out as `prompt_cache_key`; an output schema as a
/// strict `response_format` of type `json_schema`.
pub(crate) fn build(
    request: &ModelRequest,
    attachments: &Attachments,
    stream: bool,
    config: &ProviderConfig,
) -> Result<Value, ProviderError> {
    let compatible = config.compatible;
    let options = &request.options;
    if options
        .prefill_response
        .as_deref()
        .is_some_and(|p| !p.is_empty())
    {
        return Err(error::unsupported(
            "prefill_response is supported only by the Anthropic Messages API",
        ));
    }
    if options.web_search_enabled {
        return Err(error::unsupported(
            "web search is not available through Chat Completions; use the Responses or Anthropic API",
        ));
    }
    let mut messages = Vec::new();
    if let Some(system) = system_text(request) {
        messages.push(json!({"role": "system", "content": system}));
    }
    for message in &request.messages {
        match message.role {
            Role::System => {}
            Role::User => user_messages(&message.content, attachments, &mut messages)?,
            Role::Assistant => {
                if let Some(m) = assistant_message(&message.content) {
                    messages.push(m);
                }
            }
        }
    }

    let mut body = Map::new();
    body.insert("model".into(), json!(options.model));
    body.insert("messages".into(), Value::Array(messages));
    let max_key = if compatible {
        "max_tokens"
    } else {
        "max_completion_tokens"
    };
    body.insert(max_key.into(), json!(options.max_tokens));
    if let Some(t) = options.temperature {
        body.insert("temperature".into(), temperature(t));
    }
    if !options.stop_sequences.is_empty() {
        body.insert("stop".into(), json!(options.stop_sequences));
    }
    if let Some(effort) = options.reasoning_effort {
        body.insert("reasoning_effort".into(), json!(effort_name(effort)));
    }
    let tools: Vec<Value> = offered_tools(request)
        .into_iter()
        .map(|t| {
            json!({
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": parameters_schema(&t.input_schema),
                },
            })
        })
        .collect();
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(output) = &options.output_schema {
        body.insert(
            "response_format".into(),
            json!({
                "type": "json_schema",
                "json_schema": {"name": output.name, "schema": output.schema, "strict": true},
            }),
        );
    }
    if let Some(key) = &config.prompt_cache.key {
        body.insert("prompt_cache_key".into(), json!(key));
    }
    if stream {
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Ok(Value::Object(body))
}

/// The wire name of a reasoning effort (shared with Responses).
pub(crate) fn effort_name(effort: ReasoningEffort) -> &'static str {
    match effort {
        ReasoningEffort::None => "none",
        ReasoningEffort::Minimal => "minimal",
        ReasoningEffort::Low => "low",
        ReasoningEffort::Medium => "medium",
        ReasoningEffort::High => "high",
    }
}

fn user_messages(
    blocks: &[ContentBlock],
    attachments: &Attachments,
    out: &mut Vec<Value>,
) -> Result<(), ProviderError> {
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::ToolResult(result) => out.push(json!({
                "role": "tool",
                "tool_call_id": result.tool_use_id,
                "content": result.content,
            })),
            ContentBlock::Text { text, .. } if !text.is_empty() => {
                parts.push(json!({"type": "text", "text": text}))
            }
            ContentBlock::Image { source } => {
                let url = attachments.resolve(source)?.to_url();
                parts.push(json!({"type": "image_url", "image_url": {"url": url}}));
            }
            ContentBlock::Document { source, name } => {
                let resolved = attachments.resolve(source)?;
                parts.push(match (resolved.as_text(), &resolved) {
                    (Some(text), _) => json!({"type": "text", "text": text}),
                    (None, Resolved::Base64 { .. }) => json!({
                        "type": "file",
                        "file": {"filename": name.clone().unwrap_or_else(|| "document".into()), "file_data": resolved.to_url()},
                    }),
                    (None, Resolved::Url(url)) => {
                        return Err(error::unsupported(format!(
                            "Chat Completions cannot fetch documents by URL ({url}); attach the bytes"
                        )));
                    }
                });
            }
            _ => {}
        }
    }
    if parts.is_empty() {
        return Ok(());
    }
    let all_text = parts.iter().all(|p| p["type"] == "text");
    let content = if all_text {
        let texts: Vec<&str> = parts.iter().filter_map(|p| p["text"].as_str()).collect();
        json!(texts.join("\n\n"))
    } else {
        Value::Array(parts)
    };
    out.push(json!({"role": "user", "content": content}));
    Ok(())
}

fn assistant_message(blocks: &[ContentBlock]) -> Option<Value> {
    let mut text = String::new();
    let mut calls = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text { text: t, .. } => text.push_str(t),
            ContentBlock::ToolUse(call) => calls.push(json!({
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": input_object(&call.input).to_string()},
            })),
            _ => {}
        }
    }
    if text.is_empty() && calls.is_empty() {
        return None;
    }
    let mut message = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    Some(message)
}
