//! Responses request bodies.

use agentloop_types::{ApiKind, ContentBlock, ModelRequest, ProviderError, ReasoningSummary, Role};
use serde_json::{Map, Value, json};

use crate::attachments::{Attachments, Resolved};
use crate::config::ProviderConfig;
use crate::error;
use crate::openai_chat::request::effort_name;
use crate::request_common::{
    input_object, offered_tools, parameters_schema, system_text, temperature,
};

/// Builds the body of a `POST /responses` request.
///
/// The system prompt goes to `instructions`. Assistant turns become input
/// items in their original order: text as assistant messages, tool calls as
/// `function_call` items, and Responses items kept verbatim (reasoning with
/// its encrypted content, web search calls) in between, as the API requires
/// reasoning items to precede the calls they led to. Tool results become
/// `function_call_output` items. Thinking blocks are not sent (the reasoning
/// item carries them). When reasoning options are set, responses are not
/// stored and reasoning comes back encrypted so it can be sent again.
/// Prefill and stop sequences are refused as unsupported. A configured
/// prompt cache key goes out as `prompt_cache_key`; an output schema as a
/// strict `text.format` of type `json_schema`.
pub(crate) fn build(
    request: &ModelRequest,
    attachments: &Attachments,
    stream: bool,
    config: &ProviderConfig,
) -> Result<Value, ProviderError> {
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
    if !options.stop_sequences.is_empty() {
        return Err(error::unsupported(
            "the Responses API has no stop sequences",
        ));
    }
    let mut input = Vec::new();
    for message in &request.messages {
        match message.role {
            Role::System => {}
            Role::User => user_items(&message.content, attachments, &mut input)?,
            Role::Assistant => assistant_items(&message.content, &mut input),
        }
    }

    let mut body = Map::new();
    body.insert("model".into(), json!(options.model));
    if let Some(system) = system_text(request) {
        body.insert("instructions".into(), json!(system));
    }
    body.insert("input".into(), Value::Array(input));
    body.insert("max_output_tokens".into(), json!(options.max_tokens));
    if let Some(t) = options.temperature {
        body.insert("temperature".into(), temperature(t));
    }
    if options.reasoning_effort.is_some() || options.reasoning_summary.is_some() {
        let mut reasoning = Map::new();
        if let Some(effort) = options.reasoning_effort {
            reasoning.insert("effort".into(), json!(effort_name(effort)));
        }
        if let Some(summary) = options.reasoning_summary {
            let name = match summary {
                ReasoningSummary::Auto => "auto",
                ReasoningSummary::Concise => "concise",
                ReasoningSummary::Detailed => "detailed",
            };
            reasoning.insert("summary".into(), json!(name));
        }
        body.insert("reasoning".into(), Value::Object(reasoning));
        body.insert("store".into(), json!(false));
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    }
    let mut tools: Vec<Value> = offered_tools(request)
        .into_iter()
        .map(|t| {
            json!({
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": parameters_schema(&t.input_schema),
            })
        })
        .collect();
    if options.web_search_enabled {
        tools.push(json!({"type": "web_search"}));
    }
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(output) = &options.output_schema {
        body.insert(
            "text".into(),
            json!({"format": {
                "type": "json_schema",
                "name": output.name,
                "schema": output.schema,
                "strict": true,
            }}),
        );
    }
    if let Some(key) = &config.prompt_cache.key {
        body.insert("prompt_cache_key".into(), json!(key));
    }
    if stream {
        body.insert("stream".into(), json!(true));
    }
    Ok(Value::Object(body))
}

fn user_items(
    blocks: &[ContentBlock],
    attachments: &Attachments,
    out: &mut Vec<Value>,
) -> Result<(), ProviderError> {
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::ToolResult(result) => out.push(json!({
                "type": "function_call_output",
                "call_id": result.tool_use_id,
                "output": result.content,
            })),
            ContentBlock::Text { text, .. } if !text.is_empty() => {
                parts.push(json!({"type": "input_text", "text": text}));
            }
            ContentBlock::Image { source } => {
                let url = attachments.resolve(source)?.to_url();
                parts.push(json!({"type": "input_image", "image_url": url}));
            }
            ContentBlock::Document { source, name } => {
                let resolved = attachments.resolve(source)?;
                let filename = name.clone().unwrap_or_else(|| "document".into());
                parts.push(match (resolved.as_text(), &resolved) {
                    (Some(text), _) => json!({"type": "input_text", "text": text}),
                    (None, Resolved::Url(url)) => json!({"type": "input_file", "file_url": url}),
                    (None, Resolved::Base64 { .. }) => {
                        json!({"type": "input_file", "filename": filename, "file_data": resolved.to_url()})
                    }
                });
            }
            _ => {}
        }
    }
    if !parts.is_empty() {
        out.push(json!({"role": "user", "content": parts}));
    }
    Ok(())
}

fn assistant_items(blocks: &[ContentBlock], out: &mut Vec<Value>) {
    let mut text = String::new();
    for block in blocks {
        match block {
            ContentBlock::Text { text: t, .. } => text.push_str(t),
            ContentBlock::ToolUse(call) => {
                flush_text(&mut text, None, out);
                out.push(json!({
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": input_object(&call.input).to_string(),
                }));
            }
            ContentBlock::Provider {
                api: ApiKind::OpenaiResponses,
                block,
            } if is_message_marker(block) => flush_text(&mut text, block.get("phase"), out),
            ContentBlock::Provider {
                api: ApiKind::OpenaiResponses,
                block,
            } => {
                flush_text(&mut text, None, out);
                out.push(block.clone());
            }
            _ => {}
        }
    }
    flush_text(&mut text, None, out);
}

/// The block the decoder adds after a message that had a `phase`: the
/// message item without its content.
fn is_message_marker(block: &Value) -> bool {
    block.get("type").and_then(Value::as_str) == Some("message") && block.get("content").is_none()
}

/// Sends the text gathered so far as one assistant message, with the
/// `phase` its message had.
fn flush_text(text: &mut String, phase: Option<&Value>, out: &mut Vec<Value>) {
    if text.is_empty() {
        return;
    }
    let text = std::mem::take(text);
    match phase.filter(|p| !p.is_null()) {
        Some(phase) => out.push(json!({
            "type": "message",
            "role": "assistant",
            "phase": phase,
            "content": [{"type": "output_text", "text": text}],
        })),
        None => out.push(json!({"role": "assistant", "content": text})),
    }
}
