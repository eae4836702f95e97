//! OpenAI Responses stream decoder.
//!
//! Output items map to blocks as follows: each text or refusal content part
//! of a `message` item is a text block (annotations become citations); each
//! reasoning summary part (and raw reasoning text) is a thinking block,
//! followed by the reasoning item itself, verbatim, as a provider block so
//! it can be sent back (with its `encrypted_content`) alongside the tool
//! calls it led to; `function_call` items are tool-use blocks; every other
//! item type (`web_search_call`, future ones) is a verbatim provider block
//! emitted when the item is done. A `message` item with a `phase`
//! (commentary or final answer) is followed by a provider block holding the
//! item without its content, so the phase goes back with the text. Block
//! indices are assigned here.

use std::collections::HashMap;

use agentloop_types::{ApiKind, BlockStart, ModelChunk, StopReason, StreamDelta, TokenTotals};
use serde_json::{Value, json};

use crate::decode::{DecodeContext, Decoder, Item, num, owned, parse_payload, synthetic, text};
use crate::error;
use crate::sse::SseEvent;

/// The output item types the decoder tells apart.
#[derive(Clone, Copy)]
enum ItemKind {
    FunctionCall,
    Message,
    Reasoning,
    WebSearch,
    Other,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Content(u64),
    Summary(u64),
    Reasoning(u64),
}

/// Decodes one Responses turn.
pub(crate) struct ResponsesDecoder {
    context: DecodeContext,
    model: Option<String>,
    next_index: u32,
    /// Open parts: (item id, part, block index). A few at a time, looked
    /// up by the borrowed id of every delta without a copy or a hash.
    parts: Vec<(String, Part, u32)>,
    /// Items whose parts were streamed (so `output_item.done` adds nothing).
    streamed: HashMap<String, bool>,
    /// Open function calls: item id → (block index, got arguments).
    calls: HashMap<String, (u32, bool)>,
    saw_call: bool,
    saw_refusal: bool,
    web_searches: u64,
    started: bool,
}

impl ResponsesDecoder {
    pub(crate) fn new(context: DecodeContext) -> Self {
        Self {
            context,
            model: None,
            next_index: 0,
            parts: Vec::new(),
            streamed: HashMap::new(),
            calls: HashMap::new(),
            saw_call: false,
            saw_refusal: false,
            web_searches: 0,
            started: false,
        }
    }

    fn push(out: &mut Vec<Item>, delta: StreamDelta) {
        out.push(Ok(ModelChunk::Delta(delta)));
    }

    fn open_block(&mut self, block: BlockStart, out: &mut Vec<Item>) -> u32 {
        let index = self.next_index;
        self.next_index += 1;
        Self::push(out, StreamDelta::BlockStart { index, block });
        index
    }

    /// The block of a part, opened on first use.
    fn part(&mut self, item: &str, part: Part, out: &mut Vec<Item>) -> u32 {
        if let Some((_, _, index)) = self.parts.iter().find(|(i, p, _)| i == item && *p == part) {
            return *index;
        }
        self.streamed.insert(item.to_owned(), true);
        let block = match part {
            Part::Content(_) => BlockStart::Text,
            Part::Summary(_) | Part::Reasoning(_) => BlockStart::Thinking,
        };
        let index = self.open_block(block, out);
        self.parts.push((item.to_owned(), part, index));
        index
    }

    fn close_part(&mut self, item: &str, part: Part, out: &mut Vec<Item>) {
        if let Some(position) = self
            .parts
            .iter()
            .position(|(i, p, _)| i == item && *p == part)
        {
            let (_, _, index) = self.parts.remove(position);
            Self::push(out, StreamDelta::BlockStop { index });
        }
    }

    fn close_item_parts(&mut self, item: &str, out: &mut Vec<Item>) {
        let mut open: Vec<(Part, u32)> = self
            .parts
            .iter()
            .filter(|(id, _, _)| id == item)
            .map(|(_, p, i)| (*p, *i))
            .collect();
        open.sort_by_key(|(_, index)| *index);
        for (part, _) in open {
            self.close_part(item, part, out);
        }
    }

    fn item_added(&mut self, item: &Value, out: &mut Vec<Item>) {
        let id = text(item, "id").unwrap_or_default().to_owned();
        if text(item, "type") == Some("function_call") {
            let start = BlockStart::ToolUse {
                id: text(item, "call_id").unwrap_or_default().to_owned(),
                name: text(item, "name").unwrap_or_default().to_owned(),
            };
            let index = self.open_block(start, out);
            self.calls.insert(id, (index, false));
            self.saw_call = true;
        }
    }

    fn item_done(&mut self, item: Value, out: &mut Vec<Item>) {
        let id = text(&item, "id").unwrap_or_default().to_owned();
        let streamed = self.streamed.remove(&id).unwrap_or(false);
        let kind = match text(&item, "type").unwrap_or_default() {
            "function_call" => ItemKind::FunctionCall,
            "message" => ItemKind::Message,
            "reasoning" => ItemKind::Reasoning,
            "web_search_call" => ItemKind::WebSearch,
            _ => ItemKind::Other,
        };
        match kind {
            ItemKind::FunctionCall => {
                if !self.calls.contains_key(&id) {
                    self.item_added(&item, out);
                }
                if let Some((index, got_arguments)) = self.calls.remove(&id) {
                    let arguments = text(&item, "arguments").unwrap_or_default();
                    if !got_arguments && !arguments.is_empty() {
                        let partial_json = arguments.to_owned();
                        Self::push(
                            out,
                            StreamDelta::ToolInput {
                                index,
                                partial_json,
                            },
                        );
                    }
                    Self::push(out, StreamDelta::BlockStop { index });
                }
            }
            ItemKind::Message => {
                self.close_item_parts(&id, out);
                if !streamed {
                    self.message_from_item(&item, out);
                }
                if item.get("phase").is_some_and(|p| !p.is_null()) {
                    // The message's `phase` must go back with its text; the
                    // item without its content (the text blocks before it
                    // hold that) marks where the message ends.
                    let mut marker = item;
                    if let Some(obj) = marker.as_object_mut() {
                        obj.remove("content");
                    }
                    self.provider_block(marker, out);
                }
            }
            ItemKind::Reasoning => {
                self.close_item_parts(&id, out);
                if !streamed {
                    for summary in item
                        .get("summary")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        if let Some(t) = text(summary, "text").filter(|t| !t.is_empty()) {
                            let index = self.open_block(BlockStart::Thinking, out);
                            Self::push(
                                out,
                                StreamDelta::Thinking {
                                    index,
                                    thinking: t.to_owned(),
                                },
                            );
                            Self::push(out, StreamDelta::BlockStop { index });
                        }
                    }
                }
                self.provider_block(item, out);
            }
            ItemKind::WebSearch | ItemKind::Other => {
                if matches!(kind, ItemKind::WebSearch) {
                    self.web_searches += 1;
                }
                self.provider_block(item, out);
            }
        }
    }

    fn provider_block(&mut self, item: Value, out: &mut Vec<Item>) {
        let block = BlockStart::Provider {
            api: ApiKind::OpenaiResponses,
            block: item,
        };
        let index = self.open_block(block, out);
        Self::push(out, StreamDelta::BlockStop { index });
    }

    fn message_from_item(&mut self, item: &Value, out: &mut Vec<Item>) {
        for part in item
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let (body, refusal) = match text(part, "type") {
                Some("output_text") => (text(part, "text").unwrap_or_default(), false),
                Some("refusal") => (text(part, "refusal").unwrap_or_default(), true),
                _ => continue,
            };
            self.saw_refusal |= refusal;
            let index = self.open_block(BlockStart::Text, out);
            if !body.is_empty() {
                Self::push(
                    out,
                    StreamDelta::Text {
                        index,
                        text: body.to_owned(),
                    },
                );
            }
            for citation in part
                .get("annotations")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                Self::push(
                    out,
                    StreamDelta::Citation {
                        index,
                        citation: citation.clone(),
                    },
                );
            }
            Self::push(out, StreamDelta::BlockStop { index });
        }
    }

    fn finish(&mut self, response: &Value, out: &mut Vec<Item>) {
        let mut open: Vec<u32> = self
            .parts
            .drain(..)
            .map(|(_, _, i)| i)
            .chain(self.calls.drain().map(|(_, (i, _))| i))
            .collect();
        open.sort_unstable();
        for index in open {
            Self::push(out, StreamDelta::BlockStop { index });
        }
        let usage = response.get("usage").unwrap_or(&Value::Null);
        let input = num(usage, &["input_tokens"]).unwrap_or(0);
        let cached = num(usage, &["input_tokens_details", "cached_tokens"]).unwrap_or(0);
        let mut totals = TokenTotals {
            input_tokens: input.saturating_sub(cached),
            cache_read_tokens: cached,
            output_tokens: num(usage, &["output_tokens"]).unwrap_or(0),
            reasoning_tokens: num(usage, &["output_tokens_details", "reasoning_tokens"])
                .unwrap_or(0),
            web_search_count: self.web_searches,
            ..TokenTotals::default()
        };
        let model = text(response, "model")
            .or(self.model.as_deref())
            .unwrap_or(&self.context.model);
        self.context.pricing.apply(model, &mut totals);
        totals.cost_unreliable |= !usage.is_object();
        let incomplete = response
            .get("incomplete_details")
            .and_then(|d| text(d, "reason"));
        let stop_reason = match (text(response, "status"), incomplete) {
            (_, Some("max_output_tokens")) => StopReason::MaxTokens,
            (_, Some("content_filter")) => StopReason::ContentFilter,
            (_, Some(other)) => StopReason::Other(other.to_owned()),
            _ if self.saw_call => StopReason::ToolUse,
            _ if self.saw_refusal => StopReason::REFUSAL,
            _ => StopReason::EndTurn,
        };
        out.push(Ok(ModelChunk::Finish {
            stop_reason,
            usage: totals,
        }));
    }

    fn fail(&self, error: &Value, out: &mut Vec<Item>) {
        let (error_type, message) = error::error_fields(error);
        let message = message.unwrap_or_else(|| "the response failed".into());
        out.push(Err(error::api(
            error_type,
            message,
            self.context.request_id.clone(),
        )));
    }
}

impl Decoder for ResponsesDecoder {
    fn event(&mut self, event: &SseEvent, out: &mut Vec<Item>) -> bool {
        let mut lenient;
        let fields = match serde_json::from_str::<typed::Event<'_>>(&event.data) {
            Ok(fields) => fields,
            // A field of an unexpected type is read as missing.
            Err(_) => match parse_payload(event, &self.context.request_id) {
                Ok(value) => {
                    lenient = value;
                    typed::Event::lenient(&mut lenient)
                }
                Err(e) => {
                    out.push(Err(e));
                    return true;
                }
            },
        };
        let typed::Event {
            kind,
            item_id,
            delta,
            content_index,
            summary_index,
            item,
            part,
            annotation,
            response,
            error,
        } = fields;
        let kind = kind.as_deref().unwrap_or(event.event.as_str());
        let item_id = item_id.as_deref().unwrap_or_default();
        let content_index = content_index.unwrap_or(0);
        let summary_index = summary_index.unwrap_or(0);
        match kind {
            "response.created" | "response.in_progress" => {
                self.started = true;
                if let Some(model) = response.as_ref().and_then(|r| text(r, "model")) {
                    self.model = Some(model.to_owned());
                }
            }
            "response.output_item.added" => {
                if let Some(item) = &item {
                    self.item_added(item, out);
                }
            }
            "response.output_item.done" => {
                if let Some(item) = item {
                    self.item_done(item, out);
                }
            }
            "response.content_part.added" => {
                if part.and_then(|p| p.kind).as_deref() == Some("refusal") {
                    self.saw_refusal = true;
                }
                self.part(item_id, Part::Content(content_index), out);
            }
            "response.content_part.done" => {
                self.close_part(item_id, Part::Content(content_index), out)
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                if kind == "response.refusal.delta" {
                    self.saw_refusal = true;
                }
                let index = self.part(item_id, Part::Content(content_index), out);
                Self::push(
                    out,
                    StreamDelta::Text {
                        index,
                        text: owned(delta),
                    },
                );
            }
            "response.output_text.annotation.added" => {
                if let Some(citation) = annotation {
                    let index = self.part(item_id, Part::Content(content_index), out);
                    Self::push(out, StreamDelta::Citation { index, citation });
                }
            }
            "response.reasoning_summary_part.added" => {
                self.part(item_id, Part::Summary(summary_index), out);
            }
            "response.reasoning_summary_part.done" => {
                self.close_part(item_id, Part::Summary(summary_index), out)
            }
            "response.reasoning_summary_text.delta" => {
                let index = self.part(item_id, Part::Summary(summary_index), out);
                Self::push(
                    out,
                    StreamDelta::Thinking {
                        index,
                        thinking: owned(delta),
                    },
                );
            }
            "response.reasoning_text.delta" => {
                let index = self.part(item_id, Part::Reasoning(content_index), out);
                Self::push(
                    out,
                    StreamDelta::Thinking {
                        index,
                        thinking: owned(delta),
                    },
                );
            }
            "response.function_call_arguments.delta" => {
                if let Some((index, got)) = self.calls.get_mut(item_id) {
                    *got = true;
                    if let Some(delta) = delta.filter(|d| !d.is_empty()) {
                        let index = *index;
                        Self::push(
                            out,
                            StreamDelta::ToolInput {
                                index,
                                partial_json: delta.into_owned(),
                            },
                        );
                    }
                }
            }
            "response.completed" | "response.incomplete" => {
                self.finish(&response.unwrap_or_default(), out);
                return true;
            }
            "response.failed" => {
                let response = response.unwrap_or_default();
                let error = response.get("error").cloned().unwrap_or(json!({}));
                self.fail(&error, out);
                return true;
            }
            "error" => {
                // Without an error object, the event itself describes it.
                let error = error
                    .filter(Value::is_object)
                    .unwrap_or_else(|| serde_json::from_str(&event.data).unwrap_or_default());
                self.fail(&error, out);
                return true;
            }
            // Progress events (web search status, `.done` events repeating
            // accumulated text) and event types added later.
            _ => {}
        }
        false
    }

    fn end(&mut self, out: &mut Vec<Item>) {
        let message = if self.started {
            "stream ended before response.completed"
        } else {
            "stream ended before response.created"
        };
        out.push(Err(error::truncated(
            message,
            self.context.request_id.clone(),
        )));
    }

    fn events_from_response(&self, body: &Value) -> Vec<SseEvent> {
        if body.get("error").is_some_and(|e| !e.is_null()) && text(body, "status") != Some("failed")
        {
            return vec![synthetic(
                "error",
                &json!({"type": "error", "error": body["error"]}),
            )];
        }
        let mut events = Vec::new();
        for item in body
            .get("output")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let done = json!({"type": "response.output_item.done", "item": item});
            events.push(synthetic("response.output_item.done", &done));
        }
        let kind = match text(body, "status") {
            Some("failed") => "response.failed",
            Some("incomplete") => "response.incomplete",
            _ => "response.completed",
        };
        events.push(synthetic(kind, &json!({"type": kind, "response": body})));
        events
    }
}

/// An event read into borrowed fields: the ones the decoder reads, with
/// the objects that become blocks or end the turn as values.
mod typed {
    use serde::Deserialize;
    use serde_json::Value;

    use crate::decode::{Text, WireStr};

    #[derive(Deserialize)]
    pub(super) struct Event<'a> {
        #[serde(rename = "type", borrow)]
        pub kind: Text<'a>,
        #[serde(borrow)]
        pub item_id: Text<'a>,
        #[serde(borrow)]
        pub delta: Text<'a>,
        pub content_index: Option<u64>,
        pub summary_index: Option<u64>,
        pub item: Option<Value>,
        #[serde(borrow)]
        pub part: Option<PartKind<'a>>,
        pub annotation: Option<Value>,
        pub response: Option<Value>,
        pub error: Option<Value>,
    }

    /// A content part is read for its type alone: a `.done` part repeats
    /// the whole text, which the deltas already gave.
    #[derive(Deserialize)]
    pub(super) struct PartKind<'a> {
        #[serde(rename = "type", borrow)]
        pub kind: Text<'a>,
    }

    impl<'a> Event<'a> {
        /// The fields of an event whose fields have unexpected types: those
        /// are missing, as `Value` accessors would read them.
        pub(super) fn lenient(value: &'a mut Value) -> Self {
            let mut take = |key| value.get_mut(key).map(Value::take);
            let (item, annotation) = (take("item"), take("annotation"));
            let (response, error) = (take("response"), take("error"));
            let value: &'a Value = value;
            let text = |key| value.get(key).and_then(Value::as_str).map(WireStr::from);
            let part = value
                .get("part")
                .filter(|p| p.is_object())
                .map(|p| PartKind {
                    kind: p.get("type").and_then(Value::as_str).map(WireStr::from),
                });
            let number = |key| value.get(key).and_then(Value::as_u64);
            Self {
                kind: text("type"),
                item_id: text("item_id"),
                delta: text("delta"),
                content_index: number("content_index"),
                summary_index: number("summary_index"),
                item,
                part,
                annotation,
                response,
                error: error.filter(|e| !e.is_null()),
            }
        }
    }
}
