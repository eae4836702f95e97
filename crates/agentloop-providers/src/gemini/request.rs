//! Gemini request bodies.

use agentloop_types::{
    ApiKind, ContentBlock, Message, ModelRequest, ProviderError, ReasoningEffort, Role,
};
use serde::Serialize;
use serde_json::{Value, json};

use super::{LOCAL_ID_PREFIX, PART, SIGNATURE};
use crate::attachments::{Attachments, Resolved};
use crate::request_common::{
    ParametersSchema, input_object, offered_tools, refuse_prefill, system_text, temperature_number,
    write_body, write_json,
};
use crate::wire_cache::{Segments, WireCache};

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
    capacity: usize,
    cache: &WireCache,
) -> Result<Vec<u8>, ProviderError> {
    let options = &request.options;
    refuse_prefill(options)?;
    let mut tools = Vec::new();
    let declarations: Vec<Declaration<'_>> = offered_tools(request)
        .into_iter()
        .map(|t| Declaration {
            name: &t.name,
            description: &t.description,
            parameters_json_schema: ParametersSchema::new(&t.input_schema, cache.schemas()),
        })
        .collect();
    if !declarations.is_empty() {
        tools.push(WireTool::Functions {
            function_declarations: declarations,
        });
    }
    if options.web_search_enabled {
        tools.push(WireTool::Search {
            google_search: Empty {},
        });
    }
    let mut thinking = ThinkingConfig::default();
    if options.enable_reasoning {
        thinking.include_thoughts = Some(true);
        if options.reasoning_budget_tokens > 0 {
            thinking.thinking_budget = Some(options.reasoning_budget_tokens);
        }
    }
    match options.reasoning_effort {
        Some(ReasoningEffort::None) => thinking.thinking_budget = Some(0),
        Some(effort) => {
            thinking.thinking_level = Some(crate::openai_chat::request::effort_name(effort));
        }
        None => {}
    }
    let rest = Rest {
        system_instruction: system_text(request).map(|text| SystemInstruction {
            parts: [TextPart { text }],
        }),
        tools,
        generation_config: GenerationConfig {
            max_output_tokens: options.max_tokens,
            temperature: options.temperature.map(temperature_number),
            stop_sequences: &options.stop_sequences,
            thinking_config: (thinking != ThinkingConfig::default()).then_some(thinking),
            response_mime_type: request.response_format.as_ref().map(|_| "application/json"),
            response_json_schema: request.response_format.as_ref().map(|o| &o.schema),
        },
    };
    let history = &request.messages;
    write_body(
        capacity,
        &Empty {},
        "contents",
        |out| {
            cache.with_segments(
                history,
                |index, message, out| write_parts(history, index, message, attachments, out),
                |segments| write_contents(history, segments, out),
            )
        },
        &rest,
    )
}

#[derive(Serialize)]
struct Empty {}

/// The fields after `contents`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Rest<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    system_instruction: Option<SystemInstruction>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    generation_config: GenerationConfig<'a>,
}

#[derive(Serialize)]
struct SystemInstruction {
    parts: [TextPart; 1],
}

#[derive(Serialize)]
struct TextPart {
    text: String,
}

#[derive(Serialize)]
#[serde(untagged, rename_all_fields = "camelCase")]
enum WireTool<'a> {
    Functions {
        function_declarations: Vec<Declaration<'a>>,
    },
    Search {
        google_search: Empty,
    },
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Declaration<'a> {
    name: &'a str,
    description: &'a str,
    parameters_json_schema: ParametersSchema<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerationConfig<'a> {
    max_output_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop_sequences: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_config: Option<ThinkingConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_mime_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_json_schema: Option<&'a Value>,
}

#[derive(Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
struct ThinkingConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    include_thoughts: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_budget: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_level: Option<&'static str>,
}

/// Writes the parts of history message `index`, each followed by a comma
/// (none for a system message: it goes to `systemInstruction`). Parts are
/// built as values here, once per message: later requests of the run copy
/// their bytes from the wire cache.
fn write_parts(
    history: &[Message],
    index: usize,
    message: &Message,
    attachments: &Attachments,
    out: &mut Vec<u8>,
) -> Result<(), ProviderError> {
    let parts = match message.role {
        Role::System => return Ok(()),
        Role::User => user_parts(&message.content, attachments, &history[..index])?,
        Role::Assistant => model_parts(&message.content),
    };
    for part in &parts {
        write_json(out, part)?;
        out.push(b',');
    }
    Ok(())
}

/// Writes `contents`: consecutive messages of one role merged into one
/// content, messages without parts left out.
fn write_contents(
    history: &[Message],
    segments: &Segments<'_>,
    out: &mut Vec<u8>,
) -> Result<(), ProviderError> {
    let mut open: Option<&str> = None;
    for (index, message) in history.iter().enumerate() {
        let role = match message.role {
            Role::System => continue,
            Role::User => "user",
            Role::Assistant => "model",
        };
        let parts = segments.message(index);
        if parts.is_empty() {
            continue;
        }
        if open != Some(role) {
            if open.is_some() {
                close_content(out);
            }
            out.extend_from_slice(b"{\"role\":");
            write_json(out, &role)?;
            out.extend_from_slice(b",\"parts\":[");
            open = Some(role);
        }
        out.extend_from_slice(parts);
    }
    if open.is_some() {
        close_content(out);
    }
    Ok(())
}

/// Ends the open content (dropping its last part's comma) and follows it
/// with a comma.
fn close_content(out: &mut Vec<u8>) {
    if out.last() == Some(&b',') {
        out.pop();
    }
    out.extend_from_slice(b"]},");
}

fn attachment_part(resolved: &Resolved) -> Value {
    match resolved {
        Resolved::Base64 { media_type, data } => {
            json!({"inlineData": {"mimeType": media_type, "data": data}})
        }
        Resolved::Url(url) => json!({"fileData": {"fileUri": url}}),
    }
}

/// The name of the call `id` among the messages `before` a result (the
/// message right before it, in a valid history).
fn call_name<'a>(before: &'a [Message], id: &str) -> Option<&'a str> {
    before
        .iter()
        .rev()
        .flat_map(|m| m.tool_uses())
        .find(|call| call.id == id)
        .map(|call| call.name.as_str())
}

fn user_parts(
    blocks: &[ContentBlock],
    attachments: &Attachments,
    before: &[Message],
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
                let name = call_name(before, id).unwrap_or(id);
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
