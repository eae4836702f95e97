//! Responses request bodies.

use agentloop_types::{
    ApiKind, ContentBlock, Message, ModelRequest, ProviderError, ReasoningSummary, Role,
};
use serde::Serialize;
use serde_json::{Value, json};

use crate::attachments::{Attachments, Resolved};
use crate::config::ProviderConfig;
use crate::error;
use crate::openai_chat::request::effort_name;
use crate::request_common::{
    ParametersSchema, arguments_text, offered_tools, refuse_prefill, system_text,
    temperature_number, write_body, write_json,
};
use crate::wire_cache::WireCache;

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
    capacity: usize,
    cache: &WireCache,
) -> Result<Vec<u8>, ProviderError> {
    let options = &request.options;
    refuse_prefill(options)?;
    if !options.stop_sequences.is_empty() {
        return Err(error::unsupported(
            "the Responses API has no stop sequences",
        ));
    }
    let reasoning = (options.reasoning_effort.is_some() || options.reasoning_summary.is_some())
        .then(|| Reasoning {
            effort: options.reasoning_effort.map(effort_name),
            summary: options.reasoning_summary.map(|summary| match summary {
                ReasoningSummary::Auto => "auto",
                ReasoningSummary::Concise => "concise",
                ReasoningSummary::Detailed => "detailed",
            }),
        });
    let mut tools: Vec<WireTool<'_>> = offered_tools(request)
        .into_iter()
        .map(|t| WireTool::Function {
            name: &t.name,
            description: &t.description,
            parameters: ParametersSchema::new(&t.input_schema, cache.schemas()),
        })
        .collect();
    if options.web_search_enabled {
        tools.push(WireTool::WebSearch);
    }
    let head = Head {
        model: &options.model,
        instructions: system_text(request),
    };
    let rest = Rest {
        max_output_tokens: options.max_tokens,
        temperature: options.temperature.map(temperature_number),
        // Reasoning comes back encrypted, to be sent again, and nothing is
        // stored by the provider.
        store: reasoning.as_ref().map(|_| false),
        include: reasoning.as_ref().map(|_| ["reasoning.encrypted_content"]),
        reasoning,
        tools,
        text: request.response_format.as_deref().map(|output| Text {
            format: Format {
                kind: "json_schema",
                name: &output.name,
                schema: &output.schema,
                strict: true,
            },
        }),
        prompt_cache_key: config.prompt_cache.key.as_deref(),
        stream: stream.then_some(true),
    };
    write_body(
        capacity,
        &head,
        "input",
        |out| {
            cache.write(&request.messages, out, |_, message, out| {
                write_message(message, attachments, out)
            })
        },
        &rest,
    )
}

#[derive(Serialize)]
struct Head<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<String>,
}

/// The fields after `input`.
#[derive(Serialize)]
struct Rest<'a> {
    max_output_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<Reasoning>,
    #[serde(skip_serializing_if = "Option::is_none")]
    store: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    include: Option<[&'static str; 1]>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<Text<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<bool>,
}

#[derive(Serialize)]
struct Reasoning {
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<&'static str>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireTool<'a> {
    Function {
        name: &'a str,
        description: &'a str,
        parameters: ParametersSchema<'a>,
    },
    WebSearch,
}

#[derive(Serialize)]
struct Text<'a> {
    format: Format<'a>,
}

#[derive(Serialize)]
struct Format<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    schema: &'a Value,
    strict: bool,
}

/// Writes the input items of one history message, each followed by a
/// comma. Items are built as values here, once per message: later
/// requests of the run copy their bytes from the wire cache.
fn write_message(
    message: &Message,
    attachments: &Attachments,
    out: &mut Vec<u8>,
) -> Result<(), ProviderError> {
    let mut items = Vec::new();
    match message.role {
        Role::System => {}
        Role::User => user_items(&message.content, attachments, &mut items)?,
        Role::Assistant => assistant_items(&message.content, &mut items),
    }
    for item in &items {
        write_json(out, item)?;
        out.push(b',');
    }
    Ok(())
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
                    "arguments": arguments_text(&call.input),
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
