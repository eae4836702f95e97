//! Gemini stream decoder.
//!
//! Each streamed chunk is a whole `GenerateContentResponse`; only the first
//! candidate is read. Consecutive text parts form one text block, thought
//! parts (`thought: true`) one thinking block, and each function call one
//! tool-use block: whole (`args`), without arguments, or with arguments
//! streamed as `partialArgs` between an opening part (`willContinue`) and
//! an empty closing one (a piece whose path cannot be placed leaves the
//! arguments as raw text, so the call is answered with an error rather
//! than run on a guess). A thought signature is kept in a provider block
//! right after the block of the part that carried it (or alone, for an
//! empty text part), so it goes back in the same place. Parts the loop does
//! not interpret (code execution, inline data) are kept verbatim. Grounding
//! metadata and safety verdicts become provider blocks at the end. The
//! stream has no end event: the turn finishes when the body ends after a
//! `finishReason`.

use agentloop_types::{
    ApiKind, BlockStart, ModelChunk, PartialTurn, StopReason, StreamDelta, TokenTotals,
};
use serde_json::{Map, Value, json};

use super::{LOCAL_ID_PREFIX, PART, SIGNATURE, args};
use crate::decode::{DecodeContext, Decoder, Item, num, parse_payload, synthetic, text};
use crate::error;
use crate::sse::SseEvent;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Run {
    Text,
    Thought,
}

struct OpenCall {
    index: u32,
    args: Value,
    signature: Option<String>,
    /// `partialArgs` entries that could not be applied.
    unreadable: Vec<Value>,
}

/// What a part the adapter interprets holds.
enum PartKind<'a> {
    Call(&'a Value),
    Text { text: &'a str, thought: bool },
}

/// Finish reasons that mean a safety system stopped the output.
const SAFETY_REASONS: &[&str] = &[
    "SAFETY",
    "RECITATION",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "IMAGE_SAFETY",
];

/// Decodes one Gemini turn.
pub(crate) struct GeminiDecoder {
    context: DecodeContext,
    model: Option<String>,
    response_id: Option<String>,
    next_index: u32,
    run: Option<(Run, u32)>,
    call: Option<OpenCall>,
    calls: u32,
    usage: Option<Value>,
    finish_reason: Option<String>,
    /// The candidate's last `finishReason` chunk, for safety details.
    finish_candidate: Option<Value>,
    grounding: Option<Value>,
    prompt_block: Option<Value>,
}

impl GeminiDecoder {
    pub(crate) fn new(context: DecodeContext) -> Self {
        Self {
            context,
            model: None,
            response_id: None,
            next_index: 0,
            run: None,
            call: None,
            calls: 0,
            usage: None,
            finish_reason: None,
            finish_candidate: None,
            grounding: None,
            prompt_block: None,
        }
    }

    fn push(out: &mut Vec<Item>, delta: StreamDelta) {
        out.push(Ok(ModelChunk::Delta(delta)));
    }

    fn open(&mut self, block: BlockStart, out: &mut Vec<Item>) -> u32 {
        let index = self.next_index;
        self.next_index += 1;
        Self::push(out, StreamDelta::BlockStart { index, block });
        index
    }

    /// A complete provider block.
    fn provider(&mut self, block: Value, out: &mut Vec<Item>) {
        let start = BlockStart::Provider {
            api: ApiKind::Gemini,
            block,
        };
        let index = self.open(start, out);
        Self::push(out, StreamDelta::BlockStop { index });
    }

    fn signature(&mut self, signature: &str, standalone: bool, out: &mut Vec<Item>) {
        let block =
            json!({"type": SIGNATURE, "thoughtSignature": signature, "standalone": standalone});
        self.provider(block, out);
    }

    fn close_run(&mut self, out: &mut Vec<Item>) {
        if let Some((_, index)) = self.run.take() {
            Self::push(out, StreamDelta::BlockStop { index });
        }
    }

    fn close_call(&mut self, out: &mut Vec<Item>) {
        let Some(call) = self.call.take() else {
            return;
        };
        if !call.unreadable.is_empty() {
            // Not JSON on purpose: the call is kept with its raw arguments
            // and answered with an error instead of run with a guess.
            let partial_json = format!(
                "{} (unreadable partialArgs: {})",
                call.args,
                Value::Array(call.unreadable)
            );
            Self::push(
                out,
                StreamDelta::ToolInput {
                    index: call.index,
                    partial_json,
                },
            );
        } else if call.args.as_object().is_some_and(|o| !o.is_empty()) {
            let partial_json = call.args.to_string();
            Self::push(
                out,
                StreamDelta::ToolInput {
                    index: call.index,
                    partial_json,
                },
            );
        }
        Self::push(out, StreamDelta::BlockStop { index: call.index });
        if let Some(signature) = call.signature {
            self.signature(&signature, false, out);
        }
    }

    fn append(&mut self, run: Run, fragment: &str, out: &mut Vec<Item>) {
        self.close_call(out);
        let index = match self.run {
            Some((open, index)) if open == run => index,
            _ => {
                self.close_run(out);
                let block = match run {
                    Run::Text => BlockStart::Text,
                    Run::Thought => BlockStart::Thinking,
                };
                let index = self.open(block, out);
                self.run = Some((run, index));
                index
            }
        };
        if fragment.is_empty() {
            return;
        }
        let delta = match run {
            Run::Text => StreamDelta::Text {
                index,
                text: fragment.to_owned(),
            },
            Run::Thought => StreamDelta::Thinking {
                index,
                thinking: fragment.to_owned(),
            },
        };
        Self::push(out, delta);
    }

    fn part(&mut self, part: &Value, out: &mut Vec<Item>) {
        let signature = text(part, "thoughtSignature").filter(|s| !s.is_empty());
        let kind = match (part.get("functionCall"), text(part, "text")) {
            (Some(call), _) => PartKind::Call(call),
            (None, Some(text)) => PartKind::Text {
                text,
                thought: part.get("thought").and_then(Value::as_bool) == Some(true),
            },
            (None, None) => {
                // Code execution, inline data and parts added later: verbatim.
                self.close_call(out);
                self.close_run(out);
                self.provider(json!({"type": PART, "part": part}), out);
                return;
            }
        };
        self.read_part(kind, signature, out);
    }

    /// A function call or text part, however it was read.
    fn read_part(&mut self, kind: PartKind<'_>, signature: Option<&str>, out: &mut Vec<Item>) {
        let (fragment, thought) = match kind {
            PartKind::Call(call) => {
                self.function_call(call, signature, out);
                return;
            }
            PartKind::Text { text, thought } => (text, thought),
        };
        let run = if thought { Run::Thought } else { Run::Text };
        if fragment.is_empty() {
            // An empty part only matters for the signature it carries,
            // which goes back in an empty part of its own.
            if let Some(signature) = signature {
                self.close_call(out);
                self.close_run(out);
                self.signature(signature, true, out);
            }
            return;
        }
        self.append(run, fragment, out);
        if let Some(signature) = signature {
            self.close_run(out);
            self.signature(signature, false, out);
        }
    }

    fn function_call(&mut self, call: &Value, signature: Option<&str>, out: &mut Vec<Item>) {
        let continues = call.get("willContinue").and_then(Value::as_bool) == Some(true);
        if let Some(name) = text(call, "name") {
            self.close_call(out);
            self.close_run(out);
            let id = match text(call, "id").filter(|id| !id.is_empty()) {
                Some(id) => id.to_owned(),
                None => {
                    let response = self.response_id.as_deref().unwrap_or("response");
                    format!("{LOCAL_ID_PREFIX}{response}-{}", self.calls)
                }
            };
            self.calls += 1;
            let start = BlockStart::ToolUse {
                id,
                name: name.to_owned(),
            };
            let index = self.open(start, out);
            let args = call
                .get("args")
                .filter(|a| a.is_object())
                .cloned()
                .unwrap_or_else(|| Value::Object(Map::new()));
            self.call = Some(OpenCall {
                index,
                args,
                signature: signature.map(str::to_owned),
                unreadable: Vec::new(),
            });
        } else if let Some(open) = self.call.as_mut() {
            for partial in call
                .get("partialArgs")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if !args::apply(&mut open.args, partial) {
                    open.unreadable.push(partial.clone());
                }
            }
            if let Some(signature) = signature {
                open.signature = Some(signature.to_owned());
            }
        }
        // A part without `willContinue` completes the call: a whole call,
        // or the empty part closing streamed arguments.
        if !continues {
            self.close_call(out);
        }
    }

    fn chunk(&mut self, value: &Value, out: &mut Vec<Item>) {
        if let Some(model) = text(value, "modelVersion") {
            self.model = Some(model.to_owned());
        }
        if let Some(id) = text(value, "responseId") {
            self.response_id = Some(id.to_owned());
        }
        if let Some(usage) = value.get("usageMetadata").filter(|u| u.is_object()) {
            self.usage = Some(usage.clone());
        }
        if let Some(feedback) = value
            .get("promptFeedback")
            .filter(|f| f.get("blockReason").is_some())
        {
            self.prompt_block = Some(feedback.clone());
        }
        let Some(candidate) = value
            .get("candidates")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
        else {
            return;
        };
        for part in candidate
            .get("content")
            .and_then(|c| c.get("parts"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            self.part(part, out);
        }
        if let Some(grounding) = candidate.get("groundingMetadata").filter(|g| g.is_object()) {
            self.grounding = Some(grounding.clone());
        }
        if let Some(reason) = text(candidate, "finishReason") {
            self.finish_reason = Some(reason.to_owned());
            self.finish_candidate = Some(candidate.clone());
        }
    }

    /// The fast path: a chunk read into borrowed structs, when it holds
    /// only what streams in the middle of a turn (text, thought and
    /// function call parts, usage). `false` (nothing done) for anything
    /// else, which the `Value` path then reads exactly as before.
    fn fast_chunk(&mut self, data: &str, out: &mut Vec<Item>) -> bool {
        let Ok(chunk) = serde_json::from_str::<typed::Chunk<'_>>(data) else {
            return false;
        };
        let candidate = chunk.candidates.0.as_ref();
        let plain = chunk.error.is_none()
            && chunk.prompt_feedback.is_none()
            && candidate.is_none_or(|c| {
                c.finish_reason.is_none()
                    && c.grounding_metadata.is_none()
                    && c.content.as_ref().is_none_or(|content| {
                        content
                            .parts
                            .iter()
                            .all(|p| p.function_call.is_some() || p.text.is_some())
                    })
            });
        if !plain {
            return false;
        }
        // Every chunk repeats these: copied only when they change.
        if let Some(model) = chunk.model_version
            && self.model.as_deref() != Some(&*model)
        {
            self.model = Some(model.into_owned());
        }
        if let Some(id) = chunk.response_id
            && self.response_id.as_deref() != Some(&*id)
        {
            self.response_id = Some(id.into_owned());
        }
        if let Some(usage) = chunk.usage_metadata.filter(Value::is_object) {
            self.usage = Some(usage);
        }
        let parts = candidate.and_then(|c| c.content.as_ref());
        for part in parts.map(|c| c.parts.as_slice()).unwrap_or_default() {
            let kind = match (&part.function_call, &part.text) {
                (Some(call), _) => PartKind::Call(call),
                (None, Some(text)) => PartKind::Text {
                    text,
                    thought: part.thought == Some(true),
                },
                (None, None) => continue,
            };
            let signature = part.thought_signature.as_deref().filter(|s| !s.is_empty());
            self.read_part(kind, signature, out);
        }
        true
    }

    fn usage_totals(&self) -> TokenTotals {
        let usage = self.usage.as_ref().unwrap_or(&Value::Null);
        let count = |key: &str| num(usage, &[key]).unwrap_or(0);
        let cached = count("cachedContentTokenCount");
        let thoughts = count("thoughtsTokenCount");
        let searches = self
            .grounding
            .as_ref()
            .and_then(|g| g.get("webSearchQueries"))
            .and_then(Value::as_array)
            .map_or(0, |q| q.len() as u64);
        let mut totals = TokenTotals {
            input_tokens: count("promptTokenCount")
                .saturating_sub(cached)
                .saturating_add(count("toolUsePromptTokenCount")),
            cache_read_tokens: cached,
            output_tokens: count("candidatesTokenCount").saturating_add(thoughts),
            reasoning_tokens: thoughts,
            web_search_count: searches,
            ..TokenTotals::default()
        };
        let model = self.model.as_deref().unwrap_or(&self.context.model);
        self.context.pricing.apply(model, &mut totals);
        totals.cost_unreliable |= self.usage.is_none();
        totals
    }

    fn finish(&mut self, out: &mut Vec<Item>) {
        self.close_call(out);
        self.close_run(out);
        let usage = self.usage_totals();
        if let Some(grounding) = self.grounding.take() {
            self.provider(
                json!({"type": "grounding_metadata", "metadata": grounding}),
                out,
            );
        }
        let reason = self.finish_reason.clone();
        let safety = reason
            .as_deref()
            .is_some_and(|r| SAFETY_REASONS.contains(&r));
        if safety && let Some(candidate) = self.finish_candidate.take() {
            let mut block = json!({"type": "safety", "finishReason": reason});
            for key in ["finishMessage", "safetyRatings", "citationMetadata"] {
                if let Some(v) = candidate.get(key) {
                    block[key] = v.clone();
                }
            }
            self.provider(block, out);
        }
        if let Some(feedback) = self.prompt_block.take() {
            self.provider(json!({"type": "safety", "promptFeedback": feedback}), out);
            out.push(Ok(ModelChunk::Finish {
                stop_reason: StopReason::ContentFilter,
                usage,
            }));
            return;
        }
        let stop_reason = match reason.as_deref() {
            Some("MAX_TOKENS") => StopReason::MaxTokens,
            _ if safety => StopReason::ContentFilter,
            _ if self.calls > 0 => StopReason::ToolUse,
            Some("STOP") | None => StopReason::EndTurn,
            Some(other) => StopReason::Other(other.to_ascii_lowercase()),
        };
        out.push(Ok(ModelChunk::Finish { stop_reason, usage }));
    }
}

impl Decoder for GeminiDecoder {
    fn event(&mut self, event: &SseEvent, out: &mut Vec<Item>) -> bool {
        if self.fast_chunk(&event.data, out) {
            return false;
        }
        let value = match parse_payload(event, &self.context.request_id) {
            Ok(value) => value,
            Err(e) => {
                out.push(Err(e));
                return true;
            }
        };
        if value.get("error").is_some_and(|e| !e.is_null()) {
            let (error_type, message) = error::error_fields(&value);
            let message = message.unwrap_or_else(|| value.to_string());
            out.push(Err(error::api(
                error_type,
                message,
                self.context.request_id.clone(),
            )));
            return true;
        }
        self.chunk(&value, out);
        false
    }

    fn end(&mut self, out: &mut Vec<Item>) {
        if self.finish_reason.is_some() || self.prompt_block.is_some() {
            self.finish(out);
            return;
        }
        let mut failure = error::truncated(
            "stream ended before a finishReason",
            self.context.request_id.clone(),
        );
        if self.usage.is_some() {
            let mut usage = self.usage_totals();
            usage.cost_unreliable = true;
            failure.partial = Some(Box::new(PartialTurn {
                stop_reason: None,
                usage: Some(usage),
            }));
        }
        out.push(Err(failure));
    }

    fn events_from_response(&self, body: &Value) -> Vec<SseEvent> {
        vec![synthetic("message", body)]
    }
}

/// Borrowed structs for the fast path; see [`GeminiDecoder::fast_chunk`].
mod typed {
    use serde::Deserialize;
    use serde::de::IgnoredAny;
    use serde_json::Value;

    use crate::decode::{First, Text};

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Chunk<'a> {
        /// Only the first candidate is read.
        #[serde(borrow, default)]
        pub candidates: First<Candidate<'a>>,
        pub usage_metadata: Option<Value>,
        #[serde(borrow)]
        pub model_version: Text<'a>,
        #[serde(borrow)]
        pub response_id: Text<'a>,
        pub prompt_feedback: Option<IgnoredAny>,
        pub error: Option<IgnoredAny>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Candidate<'a> {
        #[serde(borrow)]
        pub content: Option<Content<'a>>,
        pub finish_reason: Option<IgnoredAny>,
        pub grounding_metadata: Option<IgnoredAny>,
    }

    #[derive(Deserialize)]
    pub(super) struct Content<'a> {
        #[serde(borrow, default)]
        pub parts: Vec<Part<'a>>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub(super) struct Part<'a> {
        #[serde(borrow)]
        pub text: Text<'a>,
        pub thought: Option<bool>,
        #[serde(borrow)]
        pub thought_signature: Text<'a>,
        /// `Some(Null)` for `"functionCall": null`, which the `Value` path
        /// reads as a call too.
        #[serde(default, deserialize_with = "present")]
        pub function_call: Option<Value>,
    }

    fn present<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Value>, D::Error> {
        Value::deserialize(deserializer).map(Some)
    }
}
