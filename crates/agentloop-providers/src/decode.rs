//! The shape every wire-format decoder has: server-sent events in, model
//! chunks out, and the small readers the decoders share. HTTP streaming,
//! non-streaming responses (converted to the same events) and
//! [`replay_sse`](crate::replay_sse) all go through it; `decoders` picks the
//! decoder of an API.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use agentloop_types::{ModelChunk, ProviderError};
use serde::de::{Deserialize, Deserializer, IgnoredAny, SeqAccess, Visitor};
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

/// An optional string field of a typed wire event.
pub(crate) type Text<'a> = Option<WireStr<'a>>;

/// A string of a wire event, borrowed from the payload unless it holds
/// escapes. serde borrows a bare `Cow<str>` field marked `#[serde(borrow)]`
/// but copies one inside an `Option`; this type borrows wherever it sits.
#[doc(hidden)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireStr<'a>(Cow<'a, str>);

impl WireStr<'_> {
    /// The string, owned.
    pub fn into_owned(self) -> String {
        self.0.into_owned()
    }
}

/// The string of an optional field, owned (empty when it is missing).
pub(crate) fn owned(text: Text<'_>) -> String {
    text.map(WireStr::into_owned).unwrap_or_default()
}

impl<'a> From<&'a str> for WireStr<'a> {
    fn from(text: &'a str) -> Self {
        Self(Cow::Borrowed(text))
    }
}

impl From<String> for WireStr<'_> {
    fn from(text: String) -> Self {
        Self(Cow::Owned(text))
    }
}

impl std::ops::Deref for WireStr<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for WireStr<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Borrowing;

        impl<'de> Visitor<'de> for Borrowing {
            type Value = WireStr<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(WireStr(Cow::Borrowed(text)))
            }

            fn visit_str<E>(self, text: &str) -> Result<Self::Value, E> {
                Ok(WireStr(Cow::Owned(text.to_owned())))
            }

            fn visit_string<E>(self, text: String) -> Result<Self::Value, E> {
                Ok(WireStr(Cow::Owned(text)))
            }
        }

        deserializer.deserialize_str(Borrowing)
    }
}

/// The first element of a JSON array, read without collecting the others
/// (they are skipped unread): a decoder that reads only the first
/// candidate neither allocates a list nor moves its elements per event.
pub(crate) struct First<T>(pub Option<T>);

impl<T> Default for First<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for First<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FirstVisitor<T>(std::marker::PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for FirstVisitor<T> {
            type Value = First<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let first = seq.next_element()?;
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(First(first))
            }
        }

        deserializer.deserialize_seq(FirstVisitor(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct Fields<'a> {
        #[serde(borrow)]
        plain: Text<'a>,
        #[serde(borrow)]
        escaped: Text<'a>,
        #[serde(borrow)]
        absent: Text<'a>,
    }

    #[test]
    fn wire_strings_borrow_unless_escaped() {
        let payload = r#"{"plain":"abc","escaped":"a\nb"}"#;
        let fields: Fields = serde_json::from_str(payload).unwrap();
        let plain = fields.plain.unwrap();
        assert!(matches!(plain.0, Cow::Borrowed("abc")));
        assert_eq!(
            fields.escaped.map(WireStr::into_owned).as_deref(),
            Some("a\nb")
        );
        assert!(fields.absent.is_none());
        let wrong = serde_json::from_str::<Fields>(r#"{"plain":1,"escaped":null}"#);
        assert!(wrong.is_err());
    }

    #[test]
    fn first_reads_the_first_element_and_skips_the_rest() {
        let first: First<u32> = serde_json::from_str(r#"[7, "not a number", {"x": 1}]"#).unwrap();
        assert_eq!(first.0, Some(7));
        let empty: First<u32> = serde_json::from_str("[]").unwrap();
        assert_eq!(empty.0, None);
        assert!(serde_json::from_str::<First<u32>>("null").is_err());
        assert!(serde_json::from_str::<First<u32>>(r#"["x"]"#).is_err());
    }
}
