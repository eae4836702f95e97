//! The reference for the SSE benchmark: each recording's `data:` payloads
//! deserialised by serde_json alone into borrowed structs holding the
//! fields each decoder reads. Objects a decoder keeps verbatim (provider
//! blocks, citations, output items) are `serde_json::Value` here too.

use std::borrow::Cow;

use agentloop_providers::WireStr;
use agentloop_types::ApiKind;
use serde::Deserialize;
use serde_json::Value;

/// Borrowed from the payload unless escaped (an `Option<Cow<str>>` would
/// always copy).
type Text<'a> = Option<WireStr<'a>>;

#[derive(Deserialize)]
struct AnthropicEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    index: Option<u32>,
    #[serde(borrow)]
    delta: Option<AnthropicDelta<'a>>,
    content_block: Option<Value>,
    #[serde(borrow)]
    message: Option<AnthropicMessage<'a>>,
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct AnthropicDelta<'a> {
    #[serde(rename = "type", borrow)]
    kind: Text<'a>,
    #[serde(borrow)]
    text: Text<'a>,
    #[serde(borrow)]
    thinking: Text<'a>,
    #[serde(borrow)]
    signature: Text<'a>,
    #[serde(borrow)]
    partial_json: Text<'a>,
    #[serde(borrow)]
    stop_reason: Text<'a>,
    citation: Option<Value>,
}

#[derive(Deserialize)]
struct AnthropicMessage<'a> {
    #[serde(borrow)]
    model: Text<'a>,
    usage: Option<Usage>,
}

/// The token counts any API reports, by any of their names.
#[derive(Deserialize)]
struct Usage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct ChatChunk<'a> {
    #[serde(borrow)]
    model: Text<'a>,
    #[serde(borrow, default)]
    choices: Vec<ChatChoice<'a>>,
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct ChatChoice<'a> {
    index: Option<u64>,
    #[serde(borrow)]
    delta: Option<ChatDelta<'a>>,
    #[serde(borrow)]
    finish_reason: Text<'a>,
}

#[derive(Deserialize)]
struct ChatDelta<'a> {
    #[serde(borrow)]
    content: Text<'a>,
    #[serde(borrow)]
    reasoning_content: Text<'a>,
    #[serde(borrow)]
    refusal: Text<'a>,
    #[serde(borrow)]
    tool_calls: Option<Vec<ChatToolCall<'a>>>,
}

#[derive(Deserialize)]
struct ChatToolCall<'a> {
    index: Option<u64>,
    #[serde(borrow)]
    id: Text<'a>,
    #[serde(borrow)]
    function: Option<ChatFunction<'a>>,
}

#[derive(Deserialize)]
struct ChatFunction<'a> {
    #[serde(borrow)]
    name: Text<'a>,
    #[serde(borrow)]
    arguments: Text<'a>,
}

#[derive(Deserialize)]
struct ResponsesEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    item_id: Text<'a>,
    #[serde(borrow)]
    delta: Text<'a>,
    content_index: Option<u64>,
    summary_index: Option<u64>,
    item: Option<Value>,
    #[serde(borrow)]
    part: Option<ResponsesPart<'a>>,
    annotation: Option<Value>,
    response: Option<Value>,
}

#[derive(Deserialize)]
struct ResponsesPart<'a> {
    #[serde(rename = "type", borrow)]
    kind: Text<'a>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GeminiChunk<'a> {
    #[serde(borrow, default)]
    candidates: Vec<GeminiCandidate<'a>>,
    usage_metadata: Option<Value>,
    #[serde(borrow)]
    model_version: Text<'a>,
    #[serde(borrow)]
    response_id: Text<'a>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GeminiCandidate<'a> {
    #[serde(borrow)]
    content: Option<GeminiContent<'a>>,
    #[serde(borrow)]
    finish_reason: Text<'a>,
}

#[derive(Deserialize)]
struct GeminiContent<'a> {
    #[serde(borrow, default)]
    parts: Vec<GeminiPart<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GeminiPart<'a> {
    #[serde(borrow)]
    text: Text<'a>,
    thought: Option<bool>,
    #[serde(borrow)]
    thought_signature: Text<'a>,
    function_call: Option<Value>,
}

/// Deserialises every payload; returns a checksum so nothing is optimised
/// away.
pub fn parse(api: ApiKind, payloads: &[&str]) -> Result<usize, serde_json::Error> {
    let mut sum = 0usize;
    for data in payloads {
        sum += match api {
            ApiKind::AnthropicMessages => {
                let e: AnthropicEvent = serde_json::from_str(data)?;
                e.kind.len()
                    + e.index.unwrap_or(0) as usize
                    + e.delta.map_or(0, |d| {
                        [
                            d.kind,
                            d.text,
                            d.thinking,
                            d.signature,
                            d.partial_json,
                            d.stop_reason,
                        ]
                        .iter()
                        .flatten()
                        .map(|t| t.len())
                        .sum::<usize>()
                            + usize::from(d.citation.is_some())
                    })
                    + usize::from(e.content_block.is_some())
                    + e.message.map_or(0, |m| {
                        m.model.map_or(0, |t| t.len()) + usage_sum(m.usage.as_ref())
                    })
                    + usage_sum(e.usage.as_ref())
            }
            ApiKind::OpenaiChat => {
                let c: ChatChunk = serde_json::from_str(data)?;
                c.model.map_or(0, |m| m.len())
                    + usage_sum(c.usage.as_ref())
                    + c.choices
                        .iter()
                        .map(|choice| {
                            choice.index.unwrap_or(0) as usize
                                + choice.finish_reason.as_ref().map_or(0, |r| r.len())
                                + choice.delta.as_ref().map_or(0, |d| {
                                    [&d.content, &d.reasoning_content, &d.refusal]
                                        .into_iter()
                                        .flatten()
                                        .map(|t| t.len())
                                        .sum::<usize>()
                                        + d.tool_calls.as_ref().map_or(0, |calls| {
                                            calls
                                                .iter()
                                                .map(|call| {
                                                    call.index.unwrap_or(0) as usize
                                                        + call.id.as_ref().map_or(0, |t| t.len())
                                                        + call.function.as_ref().map_or(0, |f| {
                                                            f.name.as_ref().map_or(0, |t| t.len())
                                                                + f.arguments
                                                                    .as_ref()
                                                                    .map_or(0, |t| t.len())
                                                        })
                                                })
                                                .sum()
                                        })
                                })
                        })
                        .sum::<usize>()
            }
            ApiKind::OpenaiResponses => {
                let e: ResponsesEvent = serde_json::from_str(data)?;
                e.kind.len()
                    + e.item_id.map_or(0, |t| t.len())
                    + e.delta.map_or(0, |t| t.len())
                    + e.content_index.unwrap_or(0) as usize
                    + e.summary_index.unwrap_or(0) as usize
                    + e.part.and_then(|p| p.kind).map_or(0, |t| t.len())
                    + usize::from(e.item.is_some())
                    + usize::from(e.annotation.is_some())
                    + usize::from(e.response.is_some())
            }
            ApiKind::Gemini => {
                let g: GeminiChunk = serde_json::from_str(data)?;
                usize::from(g.usage_metadata.is_some())
                    + g.model_version.map_or(0, |t| t.len())
                    + g.response_id.map_or(0, |t| t.len())
                    + g.candidates
                        .iter()
                        .map(|c| {
                            c.finish_reason.as_ref().map_or(0, |t| t.len())
                                + c.content.as_ref().map_or(0, |content| {
                                    content
                                        .parts
                                        .iter()
                                        .map(|p| {
                                            p.text.as_ref().map_or(0, |t| t.len())
                                                + usize::from(p.thought == Some(true))
                                                + p.thought_signature
                                                    .as_ref()
                                                    .map_or(0, |t| t.len())
                                                + usize::from(p.function_call.is_some())
                                        })
                                        .sum::<usize>()
                                })
                        })
                        .sum::<usize>()
            }
        };
    }
    Ok(sum)
}

fn usage_sum(usage: Option<&Usage>) -> usize {
    usage.map_or(0, |u| {
        [
            u.input_tokens,
            u.output_tokens,
            u.cache_creation_input_tokens,
            u.cache_read_input_tokens,
            u.prompt_tokens,
            u.completion_tokens,
        ]
        .iter()
        .flatten()
        .sum::<u64>() as usize
    })
}
