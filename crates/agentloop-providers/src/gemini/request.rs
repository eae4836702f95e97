//! Gemini request bodies.

use std::collections::HashMap;

use agentloop_types::{ApiKind, ContentBlock, ModelRequest, ProviderError, ReasoningEffort, Role};
use serde_json::{Map, Value, json};

use super::{LOCAL_ID_PREFIX, PART, SIGNATURE};
use crate::attachments::{Attachments, Resolved};
use crate::error;
use crate::request_common::{
    input_object, offered_tools, parameters_schema, system_text, temperature,
};

/// Signature Gemini documents for function calls it did not produce (a
/// history from another model): it skips signature validation.
const NO_SIGNATURE: &str = "skip_thought_signature_validator";

/// Builds the body of a `generateContent` / `streamGenerateContent`
/// request (the model and streaming are in the URL).
///
/// The system prompt goes to `systemInstruction`. Model turns become
/// `model` contents: text, function calls (with Gemini's ids, not ids made
/// up for calls that had none), thought signatures back on the part that
/// carried them, and parts kept verbatim; a turn from elsewhere whose calls
/// carry no signature gets Gemini's documented placeholder on its first
/// call. Thinking text is sent only as the thought part that carried a
/// signature (otherwise the signatures carry the reasoning).
/// Tool results become `functionResponse` parts named after their call.
/// Tool schemas go out as `parametersJsonSchema` (JSON Schema as is).
/// Prefill is refused as unsupported. An output schema goes out as
/// `generationConfig.responseJsonSchema` with a JSON `responseMimeType`.
pub(crate) fn build(
    request: &ModelRequest,
    attachments: &Attachments,
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
    let names: HashMap<&str, &str> = request
        .messages
        .iter()
        .flat_map(|m| m.tool_uses())
        .map(|call| (call.id.as_str(), call.name.as_str()))
        .collect();
    let mut contents: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in &request.messages {
        let (role, parts) = match message.role {
            Role::System => continue,
            Role::User => ("user", user_parts(&message.content, attachments, &names)?),
            Role::Assistant => ("model", model_parts(&message.content)),
        };
        if parts.is_empty() {
            continue;
        }
        match contents.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(parts),
            _ => contents.push((role, parts)),
        }
    }
    let contents: Vec<Value> = contents
        .into_iter()
        .map(|(role, parts)| json!({"role": role, "parts": parts}))
        .collect();

    let mut body = Map::new();
    body.insert("contents".into(), Value::Array(contents));
    if let Some(system) = system_text(request) {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": system}]}),
        );
    }
    let mut tools = Vec::new();
    let declarations: Vec<Value> = offered_tools(request)
        .into_iter()
        .map(|t| {
            json!({
                "name": t.name,
                "description": t.description,
                "parametersJsonSchema": parameters_schema(&t.input_schema),
            })
        })
        .collect();
    if !declarations.is_empty() {
        tools.push(json!({"functionDeclarations": declarations}));
    }
    if options.web_search_enabled {
        tools.push(json!({"googleSearch": {}}));
    }
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    let mut generation = Map::new();
    generation.insert("maxOutputTokens".into(), json!(options.max_tokens));
    if let Some(t) = options.temperature {
        generation.insert("temperature".into(), temperature(t));
    }
    if !options.stop_sequences.is_empty() {
        generation.insert("stopSequences".into(), json!(options.stop_sequences));
    }
    let mut thinking = Map::new();
    if options.enable_reasoning {
        thinking.insert("includeThoughts".into(), json!(true));
        if options.reasoning_budget_tokens > 0 {
            thinking.insert(
                "thinkingBudget".into(),
                json!(options.reasoning_budget_tokens),
            );
        }
    }
    match options.reasoning_effort {
        Some(ReasoningEffort::None) => {
            thinking.insert("thinkingBudget".into(), json!(0));
        }
        Some(effort) => {
            let level = crate::openai_chat::request::effort_name(effort);
            thinking.insert("thinkingLevel".into(), json!(level));
        }
        None => {}
    }
    if !thinking.is_empty() {
        generation.insert("thinkingConfig".into(), Value::Object(thinking));
    }
    if let Some(output) = &options.output_schema {
        generation.insert("responseMimeType".into(), json!("application/json"));
        generation.insert("responseJsonSchema".into(), output.schema.clone());
    }
    body.insert("generationConfig".into(), Value::Object(generation));
    Ok(Value::Object(body))
}

fn attachment_part(resolved: &Resolved) -> Value {
    match resolved {
        Resolved::Base64 { media_type, data } => {
            json!({"inlineData": {"mimeType": media_type, "data": data}})
        }
        Resolved::Url(url) => json!({"fileData": {"fileUri": url}}),
    }
}

fn user_parts(
    blocks: &[ContentBlock],
    attachments: &Attachments,
    names: &HashMap<&str, &str>,
) -> Result<Vec<Value>, ProviderError> {
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text { text, .. } if !text.is_empty() => {
                parts.push(json!({"text": text}));
            }
            ContentBlock::ToolResult(result) => {
                let id = result.tool_use_id.as_str();
                // Gemini pairs a response with its call by name (and id).
                let name = names.get(id).copied().unwrap_or(id);
                let key = if result.is_error { "error" } else { "result" };
                let mut response = json!({"name": name, "response": {key: result.content}});
                if !id.starts_with(LOCAL_ID_PREFIX) {
                    response["id"] = json!(id);
                }
                parts.push(json!({"functionResponse": response}));
            }
            ContentBlock::Image { source } => {
                parts.push(attachment_part(&attachments.resolve(source)?));
            }
            ContentBlock::Document { source, .. } => {
                let resolved = attachments.resolve(source)?;
                parts.push(match resolved.as_text() {
                    Some(text) => json!({"text": text}),
                    None => attachment_part(&resolved),
                });
            }
            _ => {}
        }
    }
    Ok(parts)
}

fn model_parts(blocks: &[ContentBlock]) -> Vec<Value> {
    let mut parts: Vec<Value> = Vec::new();
    let mut signed = false;
    // Thought text goes back only when its part carried a signature.
    let mut thought: Option<&str> = None;
    for block in blocks {
        let previous_thought = thought.take();
        match block {
            ContentBlock::Thinking { thinking, .. } => thought = Some(thinking),
            ContentBlock::Text { text, .. } if !text.is_empty() => {
                parts.push(json!({"text": text}));
            }
            ContentBlock::ToolUse(call) => {
                let mut function = json!({"name": call.name, "args": input_object(&call.input)});
                if !call.id.starts_with(LOCAL_ID_PREFIX) {
                    function["id"] = json!(call.id);
                }
                parts.push(json!({"functionCall": function}));
            }
            ContentBlock::Provider {
                api: ApiKind::Gemini,
                block,
            } => match block.get("type").and_then(Value::as_str) {
                Some(SIGNATURE) => {
                    signed = true;
                    let signature = block.get("thoughtSignature").cloned().unwrap_or_default();
                    let standalone =
                        block.get("standalone").and_then(Value::as_bool) != Some(false);
                    match (previous_thought, parts.last_mut()) {
                        (Some(text), _) if !standalone => parts.push(
                            json!({"text": text, "thought": true, "thoughtSignature": signature}),
                        ),
                        (None, Some(Value::Object(last))) if !standalone => {
                            last.insert("thoughtSignature".into(), signature);
                        }
                        _ => parts.push(json!({"text": "", "thoughtSignature": signature})),
                    }
                }
                Some(PART) => {
                    if let Some(part) = block.get("part") {
                        parts.push(part.clone());
                    }
                }
                // Grounding and safety records are for the reader only.
                _ => {}
            },
            _ => {}
        }
    }
    if !signed
        && let Some(Value::Object(first_call)) =
            parts.iter_mut().find(|p| p.get("functionCall").is_some())
    {
        first_call.insert("thoughtSignature".into(), json!(NO_SIGNATURE));
    }
    parts
}
