//! Replaying a recorded stream body through an adapter, with no network.

use agentloop_types::{
    ApiKind, ContentBlock, ModelChunk, ProviderError, StopReason, StreamAssembler, TokenTotals,
};

use crate::decode::{DecodeContext, Item};
use crate::decoders::decoder_for;
use crate::error;
use crate::pricing::PricingTable;
use crate::provider::feed;
use crate::sse::{SseEvent, SseParser};

/// What a replayed stream assembled into.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayOutcome {
    /// Every item the adapter yielded before the turn ended, in order.
    pub chunks: Vec<ModelChunk>,
    /// The assembled content blocks (also when the turn ended in an error:
    /// then they hold what arrived before it).
    pub content: Vec<ContentBlock>,
    /// Why the turn ended, when it finished or reported it before failing.
    pub stop_reason: Option<StopReason>,
    /// Tokens and cost, when it finished or reported them before failing
    /// (then `cost_unreliable` is set). Cost uses the built-in
    /// [`PricingTable`] and the model the stream names.
    pub usage: Option<TokenTotals>,
    /// The error that ended the turn, if any.
    pub error: Option<ProviderError>,
}

/// Parses a raw server-sent-events body of `api` (as an HTTP response would
/// carry it) through the same SSE parser and decoder that
/// [`HttpProvider`](crate::HttpProvider) uses, and assembles the result.
///
/// The parser is incremental, so feeding the body whole gives the same
/// outcome as receiving the same bytes in any chunking over HTTP. Use it to
/// inspect recordings (`agentloop replay-stream`) or to test an adapter
/// against a captured stream. Cost uses the model named in the stream.
///
/// ```
/// use agentloop_providers::replay_sse;
/// use agentloop_types::{ApiKind, StopReason};
///
/// let body = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
/// let outcome = replay_sse(ApiKind::OpenaiChat, body);
/// assert_eq!(outcome.stop_reason, Some(StopReason::EndTurn));
/// assert!(outcome.error.is_none());
/// ```
pub fn replay_sse(api: ApiKind, body: &[u8]) -> ReplayOutcome {
    replay_sse_into(api, body, Assembly::default())
}

/// [`replay_sse`] without the list of chunks: each chunk is assembled and
/// then dropped, and `chunks` is left empty. A live turn keeps no such list
/// either (the engine passes each chunk on), so the SSE benchmark times
/// this.
#[doc(hidden)]
pub fn assemble_sse(api: ApiKind, body: &[u8]) -> ReplayOutcome {
    let assembly = Assembly {
        keep_chunks: false,
        ..Assembly::default()
    };
    replay_sse_into(api, body, assembly)
}

fn replay_sse_into(api: ApiKind, body: &[u8], mut assembly: Assembly) -> ReplayOutcome {
    let context = DecodeContext {
        model: String::new(),
        request_id: None,
        pricing: PricingTable::builtin(),
    };
    let mut decoder = decoder_for(api, context);
    let mut parser = SseParser::new();
    let mut items = Vec::new();
    let mut over = false;
    // Each event's items are assembled as they come, as a live stream's are.
    let mut on_event = |event: &SseEvent| {
        if !over {
            over = decoder.event(event, &mut items);
            assembly.take(&mut items);
        }
    };
    parser.push_each(body, &mut on_event);
    parser.finish_each(&mut on_event);
    if !over {
        decoder.end(&mut items);
        assembly.take(&mut items);
    }
    assembly.finish()
}

/// Decodes a whole non-streaming JSON response body of `api` the way
/// [`HttpProvider`](crate::HttpProvider) does when a server answers with
/// JSON, and assembles the result. Reached by the fuzz targets, which need
/// the non-streaming conversion without a network.
#[doc(hidden)]
pub fn replay_response(api: ApiKind, body: &[u8]) -> ReplayOutcome {
    let context = DecodeContext {
        model: String::new(),
        request_id: None,
        pricing: PricingTable::builtin(),
    };
    let mut decoder = decoder_for(api, context);
    let mut items = Vec::new();
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(value) => {
            let events = decoder.events_from_response(&value);
            if !feed(decoder.as_mut(), &events, &mut items) {
                decoder.end(&mut items);
            }
        }
        Err(e) => items.push(Err(error::decode(
            format!("response is not JSON: {e}"),
            None,
        ))),
    }
    let mut assembly = Assembly::default();
    assembly.take(&mut items);
    assembly.finish()
}

/// Decoder items assembled into what the turn came to, as they arrive.
struct Assembly {
    outcome: ReplayOutcome,
    assembler: StreamAssembler,
    /// Whether `outcome.chunks` lists every chunk.
    keep_chunks: bool,
    /// An error item ended the turn: later items are dropped.
    stopped: bool,
}

impl Default for Assembly {
    fn default() -> Self {
        Self {
            outcome: ReplayOutcome {
                chunks: Vec::new(),
                content: Vec::new(),
                stop_reason: None,
                usage: None,
                error: None,
            },
            assembler: StreamAssembler::new(),
            keep_chunks: true,
            stopped: false,
        }
    }
}

impl Assembly {
    /// Takes `items`, leaving the vector empty. Nothing after an error
    /// item is kept.
    fn take(&mut self, items: &mut Vec<Item>) {
        let outcome = &mut self.outcome;
        for item in items.drain(..) {
            if self.stopped {
                continue;
            }
            match item {
                Ok(chunk) => {
                    match &chunk {
                        ModelChunk::Delta(delta) => {
                            if let Err(e) = self.assembler.apply(delta) {
                                outcome.error = Some(error::decode(
                                    format!("adapter protocol violation: {e}"),
                                    None,
                                ));
                            }
                        }
                        ModelChunk::Finish { stop_reason, usage } => {
                            outcome.stop_reason = Some(stop_reason.clone());
                            outcome.usage = Some(*usage);
                        }
                    }
                    if self.keep_chunks {
                        outcome.chunks.push(chunk);
                    }
                }
                Err(e) => {
                    // A cut stream still says what it reported before the cut.
                    if let Some(partial) = &e.partial {
                        outcome.stop_reason = partial.stop_reason.clone();
                        outcome.usage = partial.usage;
                    }
                    outcome.error = Some(e);
                    self.stopped = true;
                }
            }
        }
    }

    fn finish(mut self) -> ReplayOutcome {
        self.outcome.content = self.assembler.finish();
        self.outcome
    }
}

/// Frames a recording that holds one JSON event per line (the SSE framing
/// stripped, as in the shared fixtures) back into an SSE body of `api`:
/// `event: <type>` plus `data:` for Anthropic and Responses, `data:` lines
/// ending with `data: [DONE]` for Chat Completions, bare `data:` lines for
/// Gemini. Blank lines are skipped.
/// A recording of several Responses turns in a row stays one body; split it
/// at each `response.created` first to replay the turns one by one.
pub fn sse_from_json_lines(api: ApiKind, recording: &str) -> String {
    let mut body = String::new();
    for line in recording.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if !matches!(api, ApiKind::OpenaiChat | ApiKind::Gemini) {
            let kind = serde_json::from_str::<serde_json::Value>(line)
                .ok()
                .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_owned));
            if let Some(kind) = kind {
                body.push_str("event: ");
                body.push_str(&kind);
                body.push('\n');
            }
        }
        body.push_str("data: ");
        body.push_str(line);
        body.push_str("\n\n");
    }
    if api == ApiKind::OpenaiChat {
        body.push_str("data: [DONE]\n\n");
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_json_lines_per_api() {
        let anthropic = sse_from_json_lines(ApiKind::AnthropicMessages, "{\"type\":\"ping\"}\n\n");
        assert_eq!(anthropic, "event: ping\ndata: {\"type\":\"ping\"}\n\n");
        let chat = sse_from_json_lines(ApiKind::OpenaiChat, "{\"choices\":[]}\n");
        assert_eq!(chat, "data: {\"choices\":[]}\n\ndata: [DONE]\n\n");
    }
}
