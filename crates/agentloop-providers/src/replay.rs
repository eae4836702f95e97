//! Replaying a recorded stream body through an adapter, with no network.

use agentloop_types::{
    ApiKind, ContentBlock, ModelChunk, ProviderError, StopReason, StreamAssembler, TokenTotals,
};

use crate::decode::{DecodeContext, decoder_for};
use crate::error;
use crate::pricing::PricingTable;
use crate::provider::feed;
use crate::sse::SseParser;

/// What a replayed stream assembled into.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayOutcome {
    /// Every item the adapter yielded before the turn ended, in order.
    pub chunks: Vec<ModelChunk>,
    /// The assembled content blocks (also when the turn ended in an error:
    /// then they hold what arrived before it).
    pub content: Vec<ContentBlock>,
    /// Why the turn ended, when it finished.
    pub stop_reason: Option<StopReason>,
    /// Tokens and cost, when it finished. Cost uses the built-in
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
    let context = DecodeContext {
        model: String::new(),
        request_id: None,
        pricing: PricingTable::builtin(),
    };
    let mut decoder = decoder_for(api, context);
    let mut parser = SseParser::new();
    let mut events = Vec::new();
    parser.push(body, &mut events);
    parser.finish(&mut events);
    let mut items = Vec::new();
    if !feed(decoder.as_mut(), &events, &mut items) {
        decoder.end(&mut items);
    }
    let mut outcome = ReplayOutcome {
        chunks: Vec::new(),
        content: Vec::new(),
        stop_reason: None,
        usage: None,
        error: None,
    };
    let mut assembler = StreamAssembler::new();
    for item in items {
        match item {
            Ok(chunk) => {
                match &chunk {
                    ModelChunk::Delta(delta) => {
                        if let Err(e) = assembler.apply(delta) {
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
                outcome.chunks.push(chunk);
            }
            Err(e) => {
                outcome.error = Some(e);
                break;
            }
        }
    }
    outcome.content = assembler.finish();
    outcome
}
