//! The shape every wire-format decoder has: server-sent events in, model
//! chunks out. HTTP streaming, non-streaming responses (converted to the
//! same events) and [`replay_sse`](crate::replay_sse) all go through it.

use std::sync::Arc;

use agentloop_types::{ApiKind, ModelChunk, ProviderError};
use serde_json::Value;

use crate::pricing::PricingTable;
use crate::sse::SseEvent;

/// One item of a model stream.
pub(crate) type Item = Result<ModelChunk, ProviderError>;

/// What a decoder knows besides the events.
#[derive(Debug, Clone)]
pub(crate) struct DecodeContext {
    /// Model requested; the model the stream reports wins for pricing.
    pub model: String,
    /// The provider's request id (from the response headers), if any.
    pub request_id: Option<String>,
    /// Prices used for the turn's cost.
    pub pricing: Arc<PricingTable>,
}

/// A wire-format state machine for one model turn.
pub(crate) trait Decoder: Send {
    /// Handles one event, appending items to `out`. Returns `true` once the
    /// turn is over (a finish or an error was appended); later events are
    /// not passed in.
    fn event(&mut self, event: &SseEvent, out: &mut Vec<Item>) -> bool;

    /// The body ended before the decoder said the turn was over; appends a
    /// finish when the turn is nevertheless complete, an error otherwise.
    fn end(&mut self, out: &mut Vec<Item>);

    /// Converts a whole non-streaming response body into the events the
    /// streaming API would have sent for it.
    fn events_from_response(&self, body: &Value) -> Vec<SseEvent>;
}

/// A decoder for `api`.
pub(crate) fn decoder_for(api: ApiKind, context: DecodeContext) -> Box<dyn Decoder> {
    match api {
        ApiKind::AnthropicMessages => {
            Box::new(crate::anthropic::decode::AnthropicDecoder::new(context))
        }
        ApiKind::OpenaiChat => Box::new(crate::openai_chat::decode::ChatDecoder::new(context)),
        ApiKind::OpenaiResponses => Box::new(
            crate::openai_responses::decode::ResponsesDecoder::new(context),
        ),
        ApiKind::Gemini => Box::new(crate::gemini::decode::GeminiDecoder::new(context)),
    }
}

/// An SSE event with this name and JSON payload.
pub(crate) fn synthetic(event: &str, data: &Value) -> SseEvent {
    SseEvent {
        event: event.to_owned(),
        data: data.to_string(),
        id: None,
        retry: None,
    }
}

/// The number at `path` in `value`, or `None`.
pub(crate) fn num(value: &Value, path: &[&str]) -> Option<u64> {
    let mut v = value;
    for key in path {
        v = v.get(*key)?;
    }
    v.as_u64()
}

/// The string at `key` in `value`, or `None`.
pub(crate) fn text<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// Parses an event payload, or the decode error that ends the turn.
pub(crate) fn parse_payload(
    event: &SseEvent,
    request_id: &Option<String>,
) -> Result<Value, ProviderError> {
    serde_json::from_str(&event.data).map_err(|e| {
        let preview: String = event.data.chars().take(200).collect();
        crate::error::decode(
            format!("malformed JSON in `{}` event: {e}: {preview}", event.event),
            request_id.clone(),
        )
    })
}
