//! Anthropic Messages stream decoder.
//!
//! Text, thinking, redacted thinking and client tool use become typed
//! deltas under Anthropic's own block index (unique within a message).
//! Every other block type (server tool use, tool results of server tools,
//! MCP blocks, compaction, types that do not exist yet) is accumulated here
//! and emitted complete and verbatim as [`BlockStart::Provider`] when it
//! stops: its `input_json_delta` fragments become its `input`, and other
//! string deltas are appended to the field of the same name.

use std::collections::BTreeMap;

use agentloop_types::{
    ApiKind, BlockStart, ModelChunk, PartialTurn, RefusalDetails, StopReason, StreamDelta,
    TokenTotals,
};
use serde_json::{Map, Value, json};

use crate::decode::{
    DecodeContext, Decoder, Item, Text, WireStr, num, owned, parse_payload, synthetic, text,
};
use crate::error;
use crate::pricing::ExtraUsage;
use crate::sse::SseEvent;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Typed {
    Text,
    Thinking,
    Redacted,
}

enum Open {
    Typed(Typed),
    ToolUse { initial: Value, got_input: bool },
    Provider { block: Value, json: String },
}

/// Decodes one Anthropic Messages turn.
pub(crate) struct AnthropicDecoder {
    context: DecodeContext,
    model: Option<String>,
    usage: TokenTotals,
    cache_write_1h: u64,
    stop_reason: Option<StopReason>,
    /// Open blocks by index: a handful at most, so no hashing.
    open: BTreeMap<u32, Open>,
    started: bool,
    /// The code-execution container the turn ran in (`id`, `expires_at`).
    container: Option<Value>,
}

/// Block index of the container block, out of the range Anthropic uses.
const CONTAINER_INDEX: u32 = u32::MAX;

impl AnthropicDecoder {
    pub(crate) fn new(context: DecodeContext) -> Self {
        Self {
            context,
            model: None,
            usage: TokenTotals::default(),
            cache_write_1h: 0,
            stop_reason: None,
            open: BTreeMap::new(),
            started: false,
            container: None,
        }
    }

    fn delta(out: &mut Vec<Item>, delta: StreamDelta) {
        out.push(Ok(ModelChunk::Delta(delta)));
    }

    fn read_usage(&mut self, usage: &Value) {
        let set = |field: &mut u64, path: &[&str]| {
            if let Some(n) = num(usage, path) {
                *field = n;
            }
        };
        set(&mut self.usage.input_tokens, &["input_tokens"]);
        set(&mut self.usage.output_tokens, &["output_tokens"]);
        set(
            &mut self.usage.cache_creation_tokens,
            &["cache_creation_input_tokens"],
        );
        set(
            &mut self.usage.cache_read_tokens,
            &["cache_read_input_tokens"],
        );
        set(
            &mut self.usage.web_search_count,
            &["server_tool_use", "web_search_requests"],
        );
        set(
            &mut self.usage.reasoning_tokens,
            &["output_tokens_details", "thinking_tokens"],
        );
        set(
            &mut self.cache_write_1h,
            &["cache_creation", "ephemeral_1h_input_tokens"],
        );
        // With server-side compaction the top-level counts cover only the
        // last iteration; every iteration is billed.
        if let Some(iterations) = usage.get("iterations").and_then(Value::as_array) {
            let sum = |key: &str| {
                iterations
                    .iter()
                    .filter_map(|i| num(i, &[key]))
                    .fold(0u64, u64::saturating_add)
            };
            if !iterations.is_empty() {
                self.usage.input_tokens = sum("input_tokens");
                self.usage.output_tokens = sum("output_tokens");
                self.usage.cache_creation_tokens = sum("cache_creation_input_tokens");
                self.usage.cache_read_tokens = sum("cache_read_input_tokens");
            }
        }
    }

    fn block_start(&mut self, index: u32, block: &Value, out: &mut Vec<Item>) {
        match text(block, "type").unwrap_or_default() {
            "text" => {
                Self::delta(
                    out,
                    StreamDelta::BlockStart {
                        index,
                        block: BlockStart::Text,
                    },
                );
                if let Some(t) = text(block, "text").filter(|t| !t.is_empty()) {
                    Self::delta(
                        out,
                        StreamDelta::Text {
                            index,
                            text: t.to_owned(),
                        },
                    );
                }
                for citation in block
                    .get("citations")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    Self::delta(
                        out,
                        StreamDelta::Citation {
                            index,
                            citation: citation.clone(),
                        },
                    );
                }
                self.open.insert(index, Open::Typed(Typed::Text));
            }
            "thinking" => {
                Self::delta(
                    out,
                    StreamDelta::BlockStart {
                        index,
                        block: BlockStart::Thinking,
                    },
                );
                if let Some(t) = text(block, "thinking").filter(|t| !t.is_empty()) {
                    Self::delta(
                        out,
                        StreamDelta::Thinking {
                            index,
                            thinking: t.to_owned(),
                        },
                    );
                }
                if let Some(s) = text(block, "signature").filter(|s| !s.is_empty()) {
                    Self::delta(
                        out,
                        StreamDelta::Signature {
                            index,
                            signature: s.to_owned(),
                        },
                    );
                }
                self.open.insert(index, Open::Typed(Typed::Thinking));
            }
            "redacted_thinking" => {
                let data = text(block, "data").unwrap_or_default().to_owned();
                let start = BlockStart::RedactedThinking { data };
                Self::delta(
                    out,
                    StreamDelta::BlockStart {
                        index,
                        block: start,
                    },
                );
                self.open.insert(index, Open::Typed(Typed::Redacted));
            }
            "tool_use" => {
                let id = text(block, "id").unwrap_or_default().to_owned();
                let name = text(block, "name").unwrap_or_default().to_owned();
                Self::delta(
                    out,
                    StreamDelta::BlockStart {
                        index,
                        block: BlockStart::ToolUse { id, name },
                    },
                );
                let initial = block.get("input").cloned().unwrap_or(Value::Null);
                self.open.insert(
                    index,
                    Open::ToolUse {
                        initial,
                        got_input: false,
                    },
                );
            }
            _ => {
                let json = String::new();
                self.open.insert(
                    index,
                    Open::Provider {
                        block: block.clone(),
                        json,
                    },
                );
            }
        }
    }

    fn block_delta(&mut self, index: u32, delta: &Value, out: &mut Vec<Item>) {
        let kind = text(delta, "type").unwrap_or_default();
        if let Some(Open::Provider { block, json }) = self.open.get_mut(&index) {
            merge_provider_delta(block, json, kind, delta);
            return;
        }
        let view = DeltaView {
            kind,
            text: text(delta, "text").map(WireStr::from),
            thinking: text(delta, "thinking").map(WireStr::from),
            signature: text(delta, "signature").map(WireStr::from),
            partial_json: text(delta, "partial_json").map(WireStr::from),
            citation: delta.get("citation"),
        };
        self.interpreted_delta(index, view, out);
    }

    /// A delta of a block this adapter interprets (text, thinking,
    /// redacted thinking, client tool use).
    fn interpreted_delta(&mut self, index: u32, delta: DeltaView<'_>, out: &mut Vec<Item>) {
        let kind = delta.kind;
        let Some(open) = self.open.get_mut(&index) else {
            return;
        };
        match open {
            // Their deltas go through `merge_provider_delta`.
            Open::Provider { .. } => {}
            Open::ToolUse { got_input, .. } => {
                if let Some(fragment) = delta.partial_json {
                    *got_input = true;
                    let partial_json = fragment.into_owned();
                    Self::delta(
                        out,
                        StreamDelta::ToolInput {
                            index,
                            partial_json,
                        },
                    );
                }
            }
            // A delta of another block kind is ignored rather than passed
            // on, so a provider bug cannot break the assembled message.
            Open::Typed(typed) => match (typed, kind) {
                (Typed::Text, "text_delta") => {
                    let t = owned(delta.text);
                    Self::delta(out, StreamDelta::Text { index, text: t });
                }
                (Typed::Thinking, "thinking_delta") => {
                    let t = owned(delta.thinking);
                    Self::delta(out, StreamDelta::Thinking { index, thinking: t });
                }
                (Typed::Thinking, "signature_delta") => {
                    let s = owned(delta.signature);
                    Self::delta(
                        out,
                        StreamDelta::Signature {
                            index,
                            signature: s,
                        },
                    );
                }
                (Typed::Text, "citations_delta") => {
                    if let Some(citation) = delta.citation {
                        let citation = citation.clone();
                        Self::delta(out, StreamDelta::Citation { index, citation });
                    }
                }
                _ => {}
            },
        }
    }

    fn block_stop(&mut self, index: u32, out: &mut Vec<Item>) {
        match self.open.remove(&index) {
            None => {}
            Some(Open::Typed(_)) => Self::delta(out, StreamDelta::BlockStop { index }),
            Some(Open::ToolUse { initial, got_input }) => {
                // A complete input given at block start (non-streaming
                // responses) and no fragments: send it as one fragment.
                if !got_input && initial.as_object().is_some_and(|o| !o.is_empty()) {
                    let partial_json = initial.to_string();
                    Self::delta(
                        out,
                        StreamDelta::ToolInput {
                            index,
                            partial_json,
                        },
                    );
                }
                Self::delta(out, StreamDelta::BlockStop { index });
            }
            Some(Open::Provider { mut block, json }) => {
                if !json.trim().is_empty() {
                    let input = serde_json::from_str(&json).unwrap_or(Value::String(json));
                    if let Some(obj) = block.as_object_mut() {
                        obj.insert("input".into(), input);
                    }
                }
                let start = BlockStart::Provider {
                    api: ApiKind::AnthropicMessages,
                    block,
                };
                Self::delta(
                    out,
                    StreamDelta::BlockStart {
                        index,
                        block: start,
                    },
                );
                Self::delta(out, StreamDelta::BlockStop { index });
            }
        }
    }

    /// The usage so far, priced.
    fn priced_usage(&self) -> TokenTotals {
        let mut usage = self.usage;
        let model = self.model.as_deref().unwrap_or(&self.context.model);
        let extra = ExtraUsage {
            cache_write_1h: self.cache_write_1h,
        };
        self.context.pricing.apply_extra(model, &mut usage, extra);
        usage
    }

    fn finish(&mut self, out: &mut Vec<Item>) {
        let open: Vec<u32> = self.open.keys().copied().collect();
        for index in open {
            self.block_stop(index, out);
        }
        if let Some(container) = self.container.take() {
            // Kept as a block of the message so the next request can run in
            // the same container (see `request::container_id`).
            let mut block = json!({"type": "container"});
            if let (Some(obj), Some(fields)) = (block.as_object_mut(), container.as_object()) {
                obj.extend(fields.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            let start = BlockStart::Provider {
                api: ApiKind::AnthropicMessages,
                block,
            };
            let index = CONTAINER_INDEX;
            Self::delta(
                out,
                StreamDelta::BlockStart {
                    index,
                    block: start,
                },
            );
            Self::delta(out, StreamDelta::BlockStop { index });
        }
        let usage = self.priced_usage();
        let stop_reason = self.stop_reason.clone().unwrap_or(StopReason::EndTurn);
        out.push(Ok(ModelChunk::Finish { stop_reason, usage }));
    }

    /// The fast path for the most frequent event: a `content_block_delta`
    /// of an interpreted block, deserialised into borrowed structs.
    /// `false` (nothing done) for anything else, which the lenient `Value`
    /// path then reads exactly as before.
    fn fast_delta(&mut self, data: &str, out: &mut Vec<Item>) -> bool {
        let Ok(event) = serde_json::from_str::<typed::BlockDelta<'_>>(data) else {
            return false;
        };
        let (Some(index), Some(delta)) = (event.index, event.delta) else {
            return false;
        };
        let Ok(index) = u32::try_from(index) else {
            return false;
        };
        let kind = delta.kind.as_deref().unwrap_or_default();
        let provider = matches!(self.open.get(&index), Some(Open::Provider { .. }));
        if event.kind != "content_block_delta" || provider || kind == "citations_delta" {
            return false;
        }
        let view = DeltaView {
            kind,
            text: delta.text,
            thinking: delta.thinking,
            signature: delta.signature,
            partial_json: delta.partial_json,
            citation: None,
        };
        self.interpreted_delta(index, view, out);
        true
    }

    fn read_message_delta(&mut self, delta: &Value) {
        if let Some(reason) = text(delta, "stop_reason") {
            self.stop_reason = Some(stop_reason(
                reason,
                text(delta, "stop_sequence"),
                delta.get("stop_details"),
            ));
        }
        if let Some(container) = delta.get("container").filter(|c| c.is_object()) {
            self.container = Some(container.clone());
        }
    }
}

/// The fields of a block delta an interpreted block reads.
/// The strings are taken as they were read: a fragment serde already
/// copied (it held escapes) becomes the delta without another copy.
struct DeltaView<'a> {
    kind: &'a str,
    text: Text<'a>,
    thinking: Text<'a>,
    signature: Text<'a>,
    partial_json: Text<'a>,
    citation: Option<&'a Value>,
}

/// Borrowed structs for the fast path of `content_block_delta`.
mod typed {
    use std::borrow::Cow;

    use serde::Deserialize;

    use crate::decode::Text;

    #[derive(Deserialize)]
    pub(super) struct BlockDelta<'a> {
        #[serde(rename = "type", borrow)]
        pub kind: Cow<'a, str>,
        pub index: Option<u64>,
        #[serde(borrow)]
        pub delta: Option<Delta<'a>>,
    }

    #[derive(Deserialize)]
    pub(super) struct Delta<'a> {
        #[serde(rename = "type", borrow)]
        pub kind: Text<'a>,
        #[serde(borrow)]
        pub text: Text<'a>,
        #[serde(borrow)]
        pub thinking: Text<'a>,
        #[serde(borrow)]
        pub signature: Text<'a>,
        #[serde(borrow)]
        pub partial_json: Text<'a>,
    }
}

/// Folds one delta of a block this adapter does not interpret into it.
fn merge_provider_delta(block: &mut Value, json: &mut String, kind: &str, delta: &Value) {
    if let Some(fragment) = text(delta, "partial_json") {
        json.push_str(fragment);
        return;
    }
    let (Some(obj), Some(fields)) = (block.as_object_mut(), delta.as_object()) else {
        return;
    };
    if kind == "citations_delta" {
        if let Some(citation) = delta.get("citation") {
            push_to_array(obj, "citations", citation.clone());
        }
        return;
    }
    for (key, value) in fields.iter().filter(|(k, _)| k.as_str() != "type") {
        match (obj.get_mut(key), value) {
            (Some(Value::String(acc)), Value::String(more)) => acc.push_str(more),
            (Some(slot @ Value::Null) | Some(slot @ Value::String(_)), value) => {
                *slot = value.clone()
            }
            (None, value) => {
                obj.insert(key.clone(), value.clone());
            }
            _ => {}
        }
    }
}

fn push_to_array(obj: &mut Map<String, Value>, key: &str, value: Value) {
    match obj.get_mut(key) {
        Some(Value::Array(items)) => items.push(value),
        _ => {
            obj.insert(key.to_owned(), Value::Array(vec![value]));
        }
    }
}

/// Maps Anthropic's `stop_reason`, with the matched `stop_sequence` and a
/// refusal's `stop_details`.
pub(crate) fn stop_reason(
    reason: &str,
    sequence: Option<&str>,
    details: Option<&Value>,
) -> StopReason {
    match reason {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" | "model_context_window_exceeded" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence {
            sequence: sequence.map(str::to_owned),
        },
        "refusal" => StopReason::Refusal {
            details: details.filter(|d| d.is_object()).map(|d| RefusalDetails {
                category: text(d, "category").map(str::to_owned),
                explanation: text(d, "explanation").map(str::to_owned),
            }),
        },
        "pause_turn" => StopReason::PauseTurn,
        other => StopReason::Other(other.to_owned()),
    }
}

impl Decoder for AnthropicDecoder {
    fn event(&mut self, event: &SseEvent, out: &mut Vec<Item>) -> bool {
        if event.event == "content_block_delta" && self.fast_delta(&event.data, out) {
            return false;
        }
        let value = match parse_payload(event, &self.context.request_id) {
            Ok(value) => value,
            Err(e) => {
                out.push(Err(e));
                return true;
            }
        };
        let index = num(&value, &["index"]).and_then(|i| u32::try_from(i).ok());
        match text(&value, "type").unwrap_or(event.event.as_str()) {
            "message_start" => {
                self.started = true;
                let message = value.get("message").unwrap_or(&Value::Null);
                self.model = text(message, "model").map(str::to_owned);
                if let Some(usage) = message.get("usage") {
                    self.read_usage(usage);
                }
                // A whole (non-streaming) message carries these up front.
                self.read_message_delta(message);
            }
            "content_block_start" => {
                if let (Some(index), Some(block)) = (index, value.get("content_block")) {
                    self.block_start(index, block, out);
                }
            }
            "content_block_delta" => {
                if let (Some(index), Some(delta)) = (index, value.get("delta")) {
                    self.block_delta(index, delta, out);
                }
            }
            "content_block_stop" => {
                if let Some(index) = index {
                    self.block_stop(index, out);
                }
            }
            "message_delta" => {
                if let Some(delta) = value.get("delta") {
                    self.read_message_delta(delta);
                }
                if let Some(usage) = value.get("usage") {
                    self.read_usage(usage);
                }
            }
            "message_stop" => {
                self.finish(out);
                return true;
            }
            "error" => {
                let (error_type, message) = error::error_fields(&value);
                let message = message.unwrap_or_else(|| "error event without a message".into());
                out.push(Err(error::api(
                    error_type,
                    message,
                    self.context.request_id.clone(),
                )));
                return true;
            }
            // `ping` and event types added after this was written.
            _ => {}
        }
        false
    }

    fn end(&mut self, out: &mut Vec<Item>) {
        let message = if self.started {
            "stream ended before message_stop"
        } else {
            "stream ended before message_start"
        };
        let mut failure = error::truncated(message, self.context.request_id.clone());
        if self.started {
            // What was reported is billed: keep it, marked as a lower bound.
            let mut usage = self.priced_usage();
            usage.cost_unreliable = true;
            failure.partial = Some(Box::new(PartialTurn {
                stop_reason: self.stop_reason.clone(),
                usage: Some(usage),
            }));
        }
        out.push(Err(failure));
    }

    fn events_from_response(&self, body: &Value) -> Vec<SseEvent> {
        if body.get("type").and_then(Value::as_str) == Some("error") {
            return vec![synthetic("error", body)];
        }
        let mut message = body.clone();
        let content = message
            .as_object_mut()
            .and_then(|m| m.insert("content".into(), json!([])))
            .and_then(|c| c.as_array().cloned())
            .unwrap_or_default();
        let mut events = vec![synthetic(
            "message_start",
            &json!({"type": "message_start", "message": message}),
        )];
        for (index, block) in content.iter().enumerate() {
            events.push(synthetic(
                "content_block_start",
                &json!({"type": "content_block_start", "index": index, "content_block": block}),
            ));
            events.push(synthetic(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": index}),
            ));
        }
        let delta = json!({
            "type": "message_delta",
            "delta": {
                "stop_reason": body.get("stop_reason"),
                "stop_sequence": body.get("stop_sequence"),
                "stop_details": body.get("stop_details"),
                "container": body.get("container"),
            },
            "usage": body.get("usage"),
        });
        events.push(synthetic("message_delta", &delta));
        events.push(synthetic("message_stop", &json!({"type": "message_stop"})));
        events
    }
}
