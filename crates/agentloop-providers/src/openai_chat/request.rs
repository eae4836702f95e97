//! Chat Completions request bodies, serialised from borrowed typed parts.

use std::borrow::Cow;

use agentloop_types::{
    ContentBlock, Message, ModelRequest, ProviderError, ReasoningEffort, Role, ToolUseBlock,
};
use serde::Serialize;
use serde::ser::Serializer;
use serde_json::Value;

use crate::attachments::{Attachments, Resolved};
use crate::config::ProviderConfig;
use crate::error;
use crate::request_common::{
    ArgumentsText, ParametersSchema, offered_tools, refuse_prefill, system_text,
    temperature_number, write_body, write_json,
};
use crate::wire_cache::WireCache;

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
    capacity: usize,
    cache: &WireCache,
) -> Result<Vec<u8>, ProviderError> {
    let options = &request.options;
    refuse_prefill(options)?;
    if options.web_search_enabled {
        return Err(error::unsupported(
            "web search is not available through Chat Completions; use the Responses or Anthropic API",
        ));
    }
    let (max_tokens, max_completion_tokens) = if config.compatible {
        (Some(options.max_tokens), None)
    } else {
        (None, Some(options.max_tokens))
    };
    let rest = Rest {
        max_tokens,
        max_completion_tokens,
        temperature: options.temperature.map(temperature_number),
        stop: &options.stop_sequences,
        reasoning_effort: options.reasoning_effort.map(effort_name),
        tools: offered_tools(request)
            .into_iter()
            .map(|t| FunctionTool {
                kind: "function",
                function: Function {
                    name: &t.name,
                    description: &t.description,
                    parameters: ParametersSchema::new(&t.input_schema, cache.schemas()),
                },
            })
            .collect(),
        response_format: request
            .response_format
            .as_deref()
            .map(|output| ResponseFormat {
                kind: "json_schema",
                json_schema: JsonSchema {
                    name: &output.name,
                    schema: &output.schema,
                    strict: true,
                },
            }),
        prompt_cache_key: config.prompt_cache.key.as_deref(),
        stream: stream.then_some(true),
        stream_options: stream.then_some(StreamOptions {
            include_usage: true,
        }),
    };
    let system = system_text(request);
    let head = Head {
        model: &options.model,
    };
    write_body(
        capacity,
        &head,
        "messages",
        |out| {
            if let Some(system) = &system {
                write_json(out, &WireMessage::text("system", system))?;
                out.push(b',');
            }
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
}

/// Writes the wire messages of one history message, each followed by a
/// comma: a user message's tool results as `tool` messages, then the rest
/// of it; an assistant message's text and calls; system messages are sent
/// in the system prompt instead.
fn write_message(
    message: &Message,
    attachments: &Attachments,
    out: &mut Vec<u8>,
) -> Result<(), ProviderError> {
    match message.role {
        Role::System => {}
        Role::User => {
            for block in &message.content {
                if let ContentBlock::ToolResult(result) = block {
                    write_json(
                        out,
                        &ToolMessage {
                            role: "tool",
                            tool_call_id: &result.tool_use_id,
                            content: &result.content,
                        },
                    )?;
                    out.push(b',');
                }
            }
            if let Some(content) = user_content(&message.content, attachments)? {
                let wire = WireMessage {
                    role: "user",
                    content: Some(content),
                    tool_calls: ToolCalls(&[]),
                };
                write_json(out, &wire)?;
                out.push(b',');
            }
        }
        Role::Assistant => {
            if let Some(wire) = assistant_message(&message.content) {
                write_json(out, &wire)?;
                out.push(b',');
            }
        }
    }
    Ok(())
}

/// The fields after `messages`.
#[derive(Serialize)]
struct Rest<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<FunctionTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

#[derive(Serialize)]
struct FunctionTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
}

#[derive(Serialize)]
struct Function<'a> {
    name: &'a str,
    description: &'a str,
    parameters: ParametersSchema<'a>,
}

#[derive(Serialize)]
struct ResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: JsonSchema<'a>,
}

#[derive(Serialize)]
struct JsonSchema<'a> {
    name: &'a str,
    schema: &'a Value,
    strict: bool,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct ToolMessage<'a> {
    role: &'static str,
    tool_call_id: &'a str,
    content: &'a str,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Option<Content<'a>>,
    #[serde(skip_serializing_if = "ToolCalls::is_empty")]
    tool_calls: ToolCalls<'a>,
}

impl<'a> WireMessage<'a> {
    fn text(role: &'static str, text: &'a str) -> Self {
        Self {
            role,
            content: Some(Content::Text(Cow::Borrowed(text))),
            tool_calls: ToolCalls(&[]),
        }
    }
}

#[derive(Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<Part<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: Url },
    File { file: File<'a> },
}

#[derive(Serialize)]
struct Url {
    url: String,
}

#[derive(Serialize)]
struct File<'a> {
    filename: &'a str,
    file_data: String,
}

/// The tool calls among an assistant message's blocks, written as they
/// are found.
struct ToolCalls<'a>(&'a [ContentBlock]);

impl ToolCalls<'_> {
    fn is_empty(&self) -> bool {
        !self.0.iter().any(|b| matches!(b, ContentBlock::ToolUse(_)))
    }
}

impl Serialize for ToolCalls<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().filter_map(|block| match block {
            ContentBlock::ToolUse(call) => Some(tool_call(call)),
            _ => None,
        }))
    }
}

#[derive(Serialize)]
struct ToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: CallFunction<'a>,
}

#[derive(Serialize)]
struct CallFunction<'a> {
    name: &'a str,
    arguments: ArgumentsText<'a>,
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

/// The content of a user message's non-result blocks: its text when it
/// is only text (joined by blank lines), else its parts; `None` when
/// nothing is left.
fn user_content<'a>(
    blocks: &'a [ContentBlock],
    attachments: &Attachments,
) -> Result<Option<Content<'a>>, ProviderError> {
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text { text, .. } if !text.is_empty() => parts.push(Part::Text {
                text: Cow::Borrowed(text),
            }),
            ContentBlock::Image { source } => parts.push(Part::ImageUrl {
                image_url: Url {
                    url: attachments.resolve(source)?.to_url(),
                },
            }),
            ContentBlock::Document { source, name } => {
                let resolved = attachments.resolve(source)?;
                parts.push(match (resolved.as_text(), &resolved) {
                    (Some(text), _) => Part::Text {
                        text: Cow::Owned(text),
                    },
                    (None, Resolved::Base64 { .. }) => Part::File {
                        file: File {
                            filename: name.as_deref().unwrap_or("document"),
                            file_data: resolved.to_url(),
                        },
                    },
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
        return Ok(None);
    }
    if !parts.iter().all(|p| matches!(p, Part::Text { .. })) {
        return Ok(Some(Content::Parts(parts)));
    }
    let mut texts = parts.into_iter().filter_map(|p| match p {
        Part::Text { text } => Some(text),
        _ => None,
    });
    let first = texts.next().unwrap_or_default();
    let joined = texts.fold(first, |mut all, text| {
        let all_mut = all.to_mut();
        all_mut.push_str("\n\n");
        all_mut.push_str(&text);
        all
    });
    Ok(Some(Content::Text(joined)))
}

/// An assistant message: its text (or `null`) and its tool calls; `None`
/// when it has neither.
fn assistant_message(blocks: &[ContentBlock]) -> Option<WireMessage<'_>> {
    let mut text: Option<Cow<'_, str>> = None;
    for block in blocks {
        if let ContentBlock::Text { text: t, .. } = block {
            match &mut text {
                None => text = Some(Cow::Borrowed(t)),
                Some(all) => all.to_mut().push_str(t),
            }
        }
    }
    let text = text.filter(|t| !t.is_empty());
    let tool_calls = ToolCalls(blocks);
    if text.is_none() && tool_calls.is_empty() {
        return None;
    }
    Some(WireMessage {
        role: "assistant",
        content: text.map(Content::Text),
        tool_calls,
    })
}

fn tool_call(call: &ToolUseBlock) -> ToolCall<'_> {
    ToolCall {
        id: &call.id,
        kind: "function",
        function: CallFunction {
            name: &call.name,
            arguments: ArgumentsText(&call.input),
        },
    }
}
