//! OpenAI Chat Completions stream decoder (also for compatible servers).
//!
//! Chat chunks carry no block structure, so blocks are made here: a run of
//! `content` deltas is one text block, a run of `reasoning_content` /
//! `reasoning` deltas (vLLM, DeepSeek, Ollama) one thinking block, a
//! `refusal` run one text block, and each `tool_calls[index]` one tool-use
//! block. Block indices are assigned in order of appearance. Only choice 0
//! is read: with `n > 1` the other choices are ignored.
//!
//! Dialects of compatible servers: vLLM names the stop string that matched
//! in `stop_reason` and reports errors as a bare `{"object": "error"}`;
//! OpenRouter reports its own charge (`usage.cost`, used as the cost unless
//! the call ran on the caller's key), cache writes
//! (`prompt_tokens_details.cache_write_tokens`) and mid-stream failures as
//! an `error` field with `finish_reason: "error"`; Ollama sends reasoning
//! as `reasoning` and tool calls whole, finishing with `stop`; llama.cpp's
//! `llama-server` opens with a `content: null` delta, puts `usage` (and its
//! own `timings`, ignored) on the chunk that carries `finish_reason` rather
//! than on a chunk of its own, and offers tool calls only when started with
//! `--jinja` (it then streams their arguments in pieces, as OpenAI does).

use agentloop_types::{BlockStart, ModelChunk, PartialTurn, StopReason, StreamDelta, TokenTotals};
use serde_json::{Value, json};

use crate::decode::{
    DecodeContext, Decoder, Item, Text, WireStr, num, parse_payload, synthetic, text,
};
use crate::error;
use crate::sse::SseEvent;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Run {
    Text,
    Thinking,
    Refusal,
}

/// Decodes one Chat Completions turn.
pub(crate) struct ChatDecoder {
    context: DecodeContext,
    model: Option<String>,
    next_index: u32,
    /// The open text, thinking or refusal block.
    run: Option<(Run, u32)>,
    /// Open tool calls: (tool_calls index, block index, call id).
    tools: Vec<(u64, u32, String)>,
    finish_reason: Option<String>,
    /// vLLM's `stop_reason`: the stop string that matched.
    matched_stop: Option<String>,
    saw_refusal: bool,
    saw_tool_call: bool,
    usage: Option<TokenTotals>,
    /// The charge a router reports itself (OpenRouter's `usage.cost`).
    reported_cost: Option<f64>,
}

impl ChatDecoder {
    pub(crate) fn new(context: DecodeContext) -> Self {
        Self {
            context,
            model: None,
            next_index: 0,
            run: None,
            tools: Vec::new(),
            finish_reason: None,
            matched_stop: None,
            saw_refusal: false,
            saw_tool_call: false,
            usage: None,
            reported_cost: None,
        }
    }

    fn push(out: &mut Vec<Item>, delta: StreamDelta) {
        out.push(Ok(ModelChunk::Delta(delta)));
    }

    fn close_run(&mut self, out: &mut Vec<Item>) {
        if let Some((_, index)) = self.run.take() {
            Self::push(out, StreamDelta::BlockStop { index });
        }
    }

    fn append(&mut self, kind: Run, fragment: WireStr<'_>, out: &mut Vec<Item>) {
        if fragment.is_empty() {
            return;
        }
        let index = match self.run {
            Some((open, index)) if open == kind => index,
            _ => {
                self.close_run(out);
                let index = self.next_index;
                self.next_index += 1;
                let block = match kind {
                    Run::Thinking => BlockStart::Thinking,
                    Run::Text | Run::Refusal => BlockStart::Text,
                };
                Self::push(out, StreamDelta::BlockStart { index, block });
                self.run = Some((kind, index));
                index
            }
        };
        let text = fragment.into_owned();
        let delta = match kind {
            Run::Thinking => StreamDelta::Thinking {
                index,
                thinking: text,
            },
            Run::Text | Run::Refusal => StreamDelta::Text { index, text },
        };
        Self::push(out, delta);
    }

    fn tool_call(&mut self, call: CallView<'_>, out: &mut Vec<Item>) {
        let CallView {
            position,
            id,
            name,
            arguments,
        } = call;
        let id = id.filter(|id| !id.is_empty());
        let existing = self.tools.iter().find(|t| t.0 == position);
        // A different id at a known position starts a new call (servers
        // that send every call complete at index 0).
        let index = match existing {
            Some((_, index, known)) if id.is_none_or(|id| id == known) => *index,
            _ => {
                self.close_run(out);
                let index = self.next_index;
                self.next_index += 1;
                let id = id.unwrap_or_default().to_owned();
                let start = BlockStart::ToolUse {
                    id: id.clone(),
                    name: name.unwrap_or_default().to_owned(),
                };
                Self::push(
                    out,
                    StreamDelta::BlockStart {
                        index,
                        block: start,
                    },
                );
                if let Some(pos) = self.tools.iter().position(|t| t.0 == position) {
                    let (_, old, _) = self.tools.remove(pos);
                    Self::push(out, StreamDelta::BlockStop { index: old });
                }
                self.tools.push((position, index, id));
                self.saw_tool_call = true;
                index
            }
        };
        if let Some(arguments) = arguments.filter(|a| !a.is_empty()) {
            Self::push(
                out,
                StreamDelta::ToolInput {
                    index,
                    partial_json: arguments.into_owned(),
                },
            );
        }
    }

    /// The text fragments of choice 0's delta, in the order they open
    /// blocks.
    fn fragments(
        &mut self,
        reasoning: Text<'_>,
        content: Text<'_>,
        refusal: Text<'_>,
        out: &mut Vec<Item>,
    ) {
        if let Some(fragment) = reasoning {
            self.append(Run::Thinking, fragment, out);
        }
        if let Some(fragment) = content {
            self.append(Run::Text, fragment, out);
        }
        if let Some(fragment) = refusal {
            self.saw_refusal |= !fragment.is_empty();
            self.append(Run::Refusal, fragment, out);
        }
    }

    fn reasons(&mut self, finish_reason: Option<&str>, stop_reason: Option<&str>) {
        if let Some(reason) = finish_reason {
            self.finish_reason = Some(reason.to_owned());
        }
        if let Some(sequence) = stop_reason {
            self.matched_stop = Some(sequence.to_owned());
        }
    }

    /// A chunk read by the typed fast path.
    fn chunk(&mut self, chunk: typed::Chunk<'_>, out: &mut Vec<Item>) {
        // Every chunk repeats the model: copied only when it changes.
        if let Some(model) = chunk.model.filter(|m| !m.is_empty())
            && self.model.as_deref() != Some(&*model)
        {
            self.model = Some(model.into_owned());
        }
        if let Some(usage) = chunk.usage {
            self.read_usage(usage);
        }
        let Some(choice) = chunk
            .choices
            .into_iter()
            .find(|c| c.index.unwrap_or(0) == 0)
        else {
            return;
        };
        if let Some(delta) = choice.delta {
            let reasoning = delta.reasoning_content.or(delta.reasoning);
            self.fragments(reasoning, delta.content, delta.refusal, out);
            for call in delta.tool_calls.into_iter().flatten() {
                let function = call.function.unwrap_or_default();
                let view = CallView {
                    position: call.index.unwrap_or(0),
                    id: call.id.as_deref(),
                    name: function.name.as_deref(),
                    arguments: function.arguments,
                };
                self.tool_call(view, out);
            }
        }
        self.reasons(
            choice.finish_reason.as_deref(),
            choice.stop_reason.as_deref(),
        );
    }

    fn read_usage(&mut self, usage: typed::Usage) {
        let prompt = usage.prompt_tokens.unwrap_or(0);
        let details = usage.prompt_tokens_details.unwrap_or_default();
        let cached = details.cached_tokens.unwrap_or(0);
        // OpenRouter counts cache writes of the providers behind it.
        let written = details.cache_write_tokens.unwrap_or(0);
        // OpenRouter's own charge, unless the call ran on the caller's key
        // (then the upstream provider bills it).
        let byok = usage.is_byok == Some(true);
        self.reported_cost = usage.cost.filter(|c| c.is_finite() && *c >= 0.0 && !byok);
        self.usage = Some(TokenTotals {
            input_tokens: prompt.saturating_sub(cached).saturating_sub(written),
            cache_read_tokens: cached,
            cache_creation_tokens: written,
            output_tokens: usage.completion_tokens.unwrap_or(0),
            reasoning_tokens: usage
                .completion_tokens_details
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
            ..TokenTotals::default()
        });
    }

    fn finish(&mut self, out: &mut Vec<Item>) {
        self.close_run(out);
        for (_, index, _) in std::mem::take(&mut self.tools) {
            Self::push(out, StreamDelta::BlockStop { index });
        }
        let stop_reason = match self.finish_reason.as_deref() {
            Some("length") => StopReason::MaxTokens,
            Some("content_filter") => StopReason::ContentFilter,
            Some("tool_calls" | "function_call") => StopReason::ToolUse,
            // Some compatible servers report `stop` with tool calls.
            _ if self.saw_tool_call => StopReason::ToolUse,
            _ if self.saw_refusal => StopReason::REFUSAL,
            Some("stop") if self.matched_stop.is_some() => StopReason::StopSequence {
                sequence: self.matched_stop.clone(),
            },
            Some("stop") | None => StopReason::EndTurn,
            Some(other) => StopReason::Other(other.to_owned()),
        };
        let mut usage = self.usage.unwrap_or_default();
        let model = self.model.as_deref().unwrap_or(&self.context.model);
        self.context.pricing.apply(model, &mut usage);
        if let Some(cost) = self.reported_cost {
            usage.cost = cost;
            usage.cost_unreliable = false;
        }
        // No usage reported (a server ignoring `include_usage`): the zero
        // cost is not a real price.
        usage.cost_unreliable |= self.usage.is_none();
        out.push(Ok(ModelChunk::Finish { stop_reason, usage }));
    }
}

impl Decoder for ChatDecoder {
    fn event(&mut self, event: &SseEvent, out: &mut Vec<Item>) -> bool {
        // Every chunk starts with `{`; only other payloads are trimmed.
        if !event.data.starts_with('{') && event.data.trim() == "[DONE]" {
            self.finish(out);
            return true;
        }
        if let Some(chunk) = typed::Chunk::parse(&event.data) {
            self.chunk(chunk, out);
            return false;
        }
        let value = match parse_payload(event, &self.context.request_id) {
            Ok(value) => value,
            Err(e) => {
                out.push(Err(e));
                return true;
            }
        };
        // vLLM sends a bare error object (`"object": "error"`), others an
        // `error` field (OpenRouter's with `finish_reason: "error"`).
        let bare_error = text(&value, "object") == Some("error");
        if bare_error || value.get("error").is_some_and(|e| !e.is_null()) {
            let (error_type, message) = error::error_fields(&value);
            let message = message.unwrap_or_else(|| value.to_string());
            out.push(Err(error::api(
                error_type,
                message,
                self.context.request_id.clone(),
            )));
            return true;
        }
        if let Some(model) = text(&value, "model").filter(|m| !m.is_empty()) {
            self.model = Some(model.to_owned());
        }
        if let Some(usage) = value.get("usage").filter(|u| u.is_object()) {
            self.read_usage(typed::Usage::of(usage));
        }
        let choices = value.get("choices").and_then(Value::as_array);
        let Some(choice) =
            choices.and_then(|c| c.iter().find(|c| num(c, &["index"]).unwrap_or(0) == 0))
        else {
            return false;
        };
        if let Some(delta) = choice.get("delta").or_else(|| choice.get("message")) {
            // Servers name it differently; some send both with the same text.
            let reasoning = text(delta, "reasoning_content").or_else(|| text(delta, "reasoning"));
            self.fragments(
                reasoning.map(WireStr::from),
                text(delta, "content").map(WireStr::from),
                text(delta, "refusal").map(WireStr::from),
                out,
            );
            for call in delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let function = call.get("function").unwrap_or(&Value::Null);
                let view = CallView {
                    position: num(call, &["index"]).unwrap_or(0),
                    id: text(call, "id"),
                    name: text(function, "name"),
                    arguments: match function.get("arguments") {
                        None | Some(Value::Null) => None,
                        Some(Value::String(arguments)) => Some(WireStr::from(arguments.as_str())),
                        // Ollama sends them as an object.
                        Some(other) => Some(WireStr::from(other.to_string())),
                    },
                };
                self.tool_call(view, out);
            }
        }
        // vLLM names the stop string that ended the output (a number there
        // is a stop token id, not a sequence the caller set).
        self.reasons(text(choice, "finish_reason"), text(choice, "stop_reason"));
        false
    }

    fn end(&mut self, out: &mut Vec<Item>) {
        // Everything but `[DONE]` (and maybe usage) arrived: the content is
        // complete, so finish rather than fail.
        if self.finish_reason.is_some() {
            self.finish(out);
        } else {
            let message = "stream ended before finish_reason and [DONE]";
            let mut failure = error::truncated(message, self.context.request_id.clone());
            if let Some(mut usage) = self.usage {
                let model = self.model.as_deref().unwrap_or(&self.context.model);
                self.context.pricing.apply(model, &mut usage);
                usage.cost_unreliable = true;
                failure.partial = Some(Box::new(PartialTurn {
                    stop_reason: None,
                    usage: Some(usage),
                }));
            }
            out.push(Err(failure));
        }
    }

    fn events_from_response(&self, body: &Value) -> Vec<SseEvent> {
        if body.get("error").is_some_and(|e| !e.is_null()) {
            return vec![synthetic("message", body)];
        }
        let choice = body
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
            .cloned()
            .unwrap_or(Value::Null);
        let mut message = choice.get("message").cloned().unwrap_or(json!({}));
        if let Some(calls) = message.get_mut("tool_calls").and_then(Value::as_array_mut) {
            for (i, call) in calls.iter_mut().enumerate() {
                call["index"] = json!(i);
            }
        }
        let chunk = json!({
            "model": body.get("model"),
            "choices": [{"index": 0, "delta": message, "finish_reason": choice.get("finish_reason")}],
            "usage": body.get("usage"),
        });
        let done = SseEvent {
            event: "message".into(),
            data: "[DONE]".into(),
            id: None,
            retry: None,
        };
        vec![synthetic("message", &chunk), done]
    }
}

/// One tool-call entry of a delta, however it was read.
struct CallView<'a> {
    position: u64,
    id: Option<&'a str>,
    name: Option<&'a str>,
    arguments: Text<'a>,
}

/// The fast path: a chunk deserialised into borrowed structs holding only
/// the fields the decoder reads. Anything these types do not accept (a
/// number where a string was expected, a `message` instead of a `delta`,
/// an error) makes `parse` answer `None`, and the chunk is read again as a
/// `Value` by the lenient path, so both paths decode every chunk alike.
mod typed {
    use serde::Deserialize;
    use serde::de::IgnoredAny;
    use serde_json::Value;

    use crate::decode::{Text, num};

    #[derive(Deserialize)]
    pub(super) struct Chunk<'a> {
        #[serde(borrow)]
        pub model: Text<'a>,
        #[serde(borrow, default)]
        pub choices: Vec<Choice<'a>>,
        pub usage: Option<Usage>,
        #[serde(borrow)]
        object: Text<'a>,
        error: Option<IgnoredAny>,
    }

    #[derive(Deserialize)]
    pub(super) struct Choice<'a> {
        pub index: Option<u64>,
        #[serde(borrow)]
        pub delta: Option<Delta<'a>>,
        message: Option<IgnoredAny>,
        #[serde(borrow)]
        pub finish_reason: Text<'a>,
        #[serde(borrow)]
        pub stop_reason: Text<'a>,
    }

    #[derive(Deserialize)]
    pub(super) struct Delta<'a> {
        #[serde(borrow)]
        pub reasoning_content: Text<'a>,
        #[serde(borrow)]
        pub reasoning: Text<'a>,
        #[serde(borrow)]
        pub content: Text<'a>,
        #[serde(borrow)]
        pub refusal: Text<'a>,
        #[serde(borrow)]
        pub tool_calls: Option<Vec<ToolCall<'a>>>,
    }

    #[derive(Deserialize)]
    pub(super) struct ToolCall<'a> {
        pub index: Option<u64>,
        #[serde(borrow)]
        pub id: Text<'a>,
        #[serde(borrow)]
        pub function: Option<Function<'a>>,
    }

    #[derive(Deserialize, Default)]
    pub(super) struct Function<'a> {
        #[serde(borrow)]
        pub name: Text<'a>,
        /// Arguments sent as an object (Ollama) are read by the lenient
        /// path.
        #[serde(borrow)]
        pub arguments: Text<'a>,
    }

    /// Token counts, with OpenRouter's `cost`, `is_byok` and cache writes.
    #[derive(Deserialize)]
    pub(super) struct Usage {
        pub prompt_tokens: Option<u64>,
        pub completion_tokens: Option<u64>,
        pub prompt_tokens_details: Option<PromptDetails>,
        pub completion_tokens_details: Option<CompletionDetails>,
        pub cost: Option<f64>,
        pub is_byok: Option<bool>,
    }

    #[derive(Deserialize, Default)]
    pub(super) struct PromptDetails {
        pub cached_tokens: Option<u64>,
        pub cache_write_tokens: Option<u64>,
    }

    #[derive(Deserialize)]
    pub(super) struct CompletionDetails {
        pub reasoning_tokens: Option<u64>,
    }

    impl Usage {
        /// The counts of a `usage` object read leniently: a field of
        /// another type counts as missing.
        pub(super) fn of(usage: &Value) -> Self {
            Self {
                prompt_tokens: num(usage, &["prompt_tokens"]),
                completion_tokens: num(usage, &["completion_tokens"]),
                prompt_tokens_details: Some(PromptDetails {
                    cached_tokens: num(usage, &["prompt_tokens_details", "cached_tokens"]),
                    cache_write_tokens: num(
                        usage,
                        &["prompt_tokens_details", "cache_write_tokens"],
                    ),
                }),
                completion_tokens_details: Some(CompletionDetails {
                    reasoning_tokens: num(
                        usage,
                        &["completion_tokens_details", "reasoning_tokens"],
                    ),
                }),
                cost: usage.get("cost").and_then(Value::as_f64),
                is_byok: usage.get("is_byok").and_then(Value::as_bool),
            }
        }
    }

    impl<'a> Chunk<'a> {
        /// The chunk, when the fast path reads it exactly as the lenient
        /// path would.
        pub(super) fn parse(data: &'a str) -> Option<Self> {
            let chunk: Self = serde_json::from_str(data).ok()?;
            let plain = chunk.error.is_none()
                && chunk.object.as_deref() != Some("error")
                && chunk.choices.iter().all(|c| c.message.is_none());
            plain.then_some(chunk)
        }
    }
}
