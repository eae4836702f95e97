//! Anthropic Messages request bodies.

use agentloop_types::{ApiKind, ContentBlock, Message, ModelRequest, ProviderError, Role};
use serde::Serialize;
use serde_json::{Value, json};

use crate::attachments::{Attachments, Resolved};
use crate::cache::{PromptCache, mark_last};
use crate::request_common::{
    ParametersSchema, input_object, offered_tools, system_text, temperature_number, write_body,
    write_json,
};
use crate::wire_cache::{Segments, WireCache};

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
    prompt_cache: &PromptCache,
    capacity: usize,
    cache: &WireCache,
) -> Result<Vec<u8>, ProviderError> {
    let options = &request.options;
    let control = prompt_cache.enabled.then(|| prompt_cache.control());
    let mut max_tokens = options.max_tokens;
    let mut thinking = None;
    if options.enable_reasoning {
        let budget = options.reasoning_budget_tokens.max(MIN_THINKING_BUDGET);
        if max_tokens <= budget {
            max_tokens = budget.saturating_add(options.max_tokens.max(1));
        }
        thinking = Some(Thinking {
            kind: "enabled",
            budget_tokens: budget,
        });
    }
    let head = Head {
        model: &options.model,
        temperature: options
            .temperature
            .filter(|_| !options.enable_reasoning)
            .map(temperature_number),
        thinking,
        max_tokens,
        system: system_text(request).map(|text| match &control {
            // A marked system prompt is one text block carrying the mark.
            Some(control) => System::Marked([SystemBlock {
                kind: "text",
                text,
                cache_control: control,
            }]),
            None => System::Text(text),
        }),
    };
    let mut tools: Vec<WireTool<'_>> = offered_tools(request)
        .into_iter()
        .map(|t| WireTool::Function {
            name: &t.name,
            description: &t.description,
            input_schema: ParametersSchema::new(&t.input_schema, cache.schemas()),
            cache_control: None,
        })
        .collect();
    if options.web_search_enabled {
        tools.push(WireTool::WebSearch {
            kind: "web_search_20250305",
            name: "web_search",
            cache_control: None,
        });
    }
    if let (Some(control), Some(last)) = (&control, tools.last_mut()) {
        match last {
            WireTool::Function { cache_control, .. }
            | WireTool::WebSearch { cache_control, .. } => {
                *cache_control = Some(control);
            }
        }
    }
    let rest = Rest {
        stop_sequences: &options.stop_sequences,
        tools,
        container: container_id(request, std::time::SystemTime::now()),
        stream: stream.then_some(true),
    };
    let prefill = options
        .prefill_response
        .as_deref()
        .map(str::trim_end)
        .filter(|p| !p.is_empty());
    write_body(
        capacity,
        &head,
        "messages",
        |out| {
            cache.with_segments(
                &request.messages,
                |_, message, out| write_blocks(message, attachments, out),
                |segments| {
                    let messages = Messages {
                        history: &request.messages,
                        segments,
                        attachments,
                        control: control.as_ref(),
                        prefill,
                    };
                    messages.write(out)
                },
            )
        },
        &rest,
    )
}

#[derive(Serialize)]
struct Head<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<System<'a>>,
}

#[derive(Serialize)]
struct Thinking {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u32,
}

#[derive(Serialize)]
#[serde(untagged)]
enum System<'a> {
    Text(String),
    Marked([SystemBlock<'a>; 1]),
}

#[derive(Serialize)]
struct SystemBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: String,
    cache_control: &'a Value,
}

/// The fields after `messages`.
#[derive(Serialize)]
struct Rest<'a> {
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop_sequences: &'a [String],
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    container: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<bool>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum WireTool<'a> {
    Function {
        name: &'a str,
        description: &'a str,
        input_schema: ParametersSchema<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<&'a Value>,
    },
    WebSearch {
        #[serde(rename = "type")]
        kind: &'static str,
        name: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<&'a Value>,
    },
}

/// Writes the content blocks of one history message, each followed by a
/// comma (none for a system message: it goes to `system`). Blocks are
/// built as values here, once per message: later requests of the run copy
/// their bytes from the wire cache.
fn write_blocks(
    message: &Message,
    attachments: &Attachments,
    out: &mut Vec<u8>,
) -> Result<(), ProviderError> {
    if message.role == Role::System {
        return Ok(());
    }
    for block in &message.content {
        if let Some(block) = block_json(block, attachments)? {
            write_json(out, &block)?;
            out.push(b',');
        }
    }
    Ok(())
}

/// The `messages` list: consecutive history messages of one role merged
/// into one wire message, the two latest user messages carrying a cache
/// breakpoint on their last block that may hold one, a prefill last.
struct Messages<'a> {
    history: &'a [Message],
    segments: &'a Segments<'a>,
    attachments: &'a Attachments,
    control: Option<&'a Value>,
    prefill: Option<&'a str>,
}

/// A wire message: its role and the history messages it merges.
struct Merged {
    role: &'static str,
    from: usize,
    to: usize,
}

impl Messages<'_> {
    fn write(&self, out: &mut Vec<u8>) -> Result<(), ProviderError> {
        let mut merged: Vec<Merged> = Vec::new();
        for (i, message) in self.history.iter().enumerate() {
            let role = match message.role {
                Role::System => continue,
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            if self.segments.message(i).is_empty() {
                continue;
            }
            match merged.last_mut() {
                Some(last) if last.role == role => last.to = i + 1,
                _ => merged.push(Merged {
                    role,
                    from: i,
                    to: i + 1,
                }),
            }
        }
        // The marked messages are written from values (the mark sits
        // inside them); every other one is copied from the segments.
        let mut marked: Vec<(usize, Vec<Value>)> = Vec::new();
        if let Some(control) = self.control {
            for (at, wire) in merged.iter().enumerate().rev() {
                if marked.len() == 2 {
                    break;
                }
                if wire.role != "user" {
                    continue;
                }
                let mut blocks = Vec::new();
                for message in &self.history[wire.from..wire.to] {
                    if message.role == Role::System {
                        continue;
                    }
                    for block in &message.content {
                        if let Some(block) = block_json(block, self.attachments)? {
                            blocks.push(block);
                        }
                    }
                }
                if mark_last(&mut blocks, control) {
                    marked.push((at, blocks));
                }
            }
        }
        let prefill = self
            .prefill
            .map(|text| json!({"type": "text", "text": text}));
        let last = merged.len().checked_sub(1);
        for (at, wire) in merged.iter().enumerate() {
            out.extend_from_slice(b"{\"role\":");
            write_json(out, &wire.role)?;
            out.extend_from_slice(b",\"content\":[");
            match marked.iter().find(|(m, _)| *m == at) {
                Some((_, blocks)) => {
                    for block in blocks {
                        write_json(out, block)?;
                        out.push(b',');
                    }
                }
                None => {
                    for i in wire.from..wire.to {
                        out.extend_from_slice(self.segments.message(i));
                    }
                }
            }
            if let Some(prefill) = &prefill
                && Some(at) == last
                && wire.role == "assistant"
            {
                write_json(out, prefill)?;
                out.push(b',');
            }
            if out.last() == Some(&b',') {
                out.pop();
            }
            out.extend_from_slice(b"]},");
        }
        if let Some(prefill) = &prefill
            && last.is_none_or(|at| merged[at].role != "assistant")
        {
            write_json(out, &json!({"role": "assistant", "content": [prefill]}))?;
            out.push(b',');
        }
        Ok(())
    }
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
