//! Constructors for the [`ProviderError`] values the adapters return, and
//! the rule for which of them are retried.
//!
//! The error type itself is [`agentloop_types::ProviderError`]: one enum of
//! kinds plus HTTP status, provider error type, message and request id, so
//! the engine and every adapter share it.

use agentloop_types::{ProviderError, ProviderErrorKind};
use serde_json::Value;

/// An error event or error body from the provider (`overloaded_error`,
/// `insufficient_quota`, ...).
pub(crate) fn api(
    error_type: Option<String>,
    message: String,
    request_id: Option<String>,
) -> ProviderError {
    ProviderError {
        kind: ProviderErrorKind::Api,
        message,
        status: None,
        error_type,
        request_id,
        partial: None,
    }
}

/// Something the provider sent that could not be decoded.
pub(crate) fn decode(message: impl Into<String>, request_id: Option<String>) -> ProviderError {
    ProviderError {
        request_id,
        ..ProviderError::new(ProviderErrorKind::Decode, message)
    }
}

/// The body ended before the turn was complete.
pub(crate) fn truncated(message: impl Into<String>, request_id: Option<String>) -> ProviderError {
    ProviderError {
        request_id,
        ..ProviderError::new(ProviderErrorKind::Truncated, message)
    }
}

/// A feature the target API does not have.
pub(crate) fn unsupported(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ProviderErrorKind::Unsupported, message)
}

/// The request could not be built.
pub(crate) fn invalid_request(message: impl Into<String>) -> ProviderError {
    ProviderError::new(ProviderErrorKind::InvalidRequest, message)
}

/// The connection failed or broke.
pub(crate) fn connection(message: impl Into<String>, request_id: Option<String>) -> ProviderError {
    ProviderError {
        request_id,
        ..ProviderError::new(ProviderErrorKind::Connection, message)
    }
}

/// Pulls the provider's error type and message out of an error object,
/// whichever of the usual shapes it has:
/// `{"type":"error","error":{"type","message"}}` (Anthropic),
/// `{"error":{"message","type","code"}}` (OpenAI and compatible servers),
/// or a bare `{"code","message"}` (Responses `response.error`).
pub(crate) fn error_fields(value: &Value) -> (Option<String>, Option<String>) {
    let inner = match value.get("error") {
        Some(e) if e.is_object() => e,
        Some(Value::String(message)) => return (None, Some(message.clone())),
        _ => value,
    };
    let text = |key: &str| inner.get(key).and_then(Value::as_str).map(str::to_owned);
    // Google puts its canonical code name in `status` (`RESOURCE_EXHAUSTED`).
    let error_type = text("type")
        .filter(|t| t != "error")
        .or_else(|| text("code"))
        .or_else(|| text("status"))
        .or_else(|| {
            inner
                .get("code")
                .filter(|c| c.is_number())
                .map(Value::to_string)
        });
    (error_type, text("message"))
}

/// An HTTP error response, with whatever the body says about it.
pub(crate) fn http(status: u16, body: &[u8], request_id: Option<String>) -> ProviderError {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let (error_type, message) = parsed.as_ref().map(error_fields).unwrap_or((None, None));
    let request_id = request_id.or_else(|| {
        parsed
            .as_ref()
            .and_then(|v| v.get("request_id"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    let message = message.unwrap_or_else(|| {
        let text = String::from_utf8_lossy(body);
        let text = text.trim();
        if text.is_empty() {
            format!("HTTP {status}")
        } else {
            text.chars().take(2000).collect()
        }
    });
    ProviderError {
        kind: ProviderErrorKind::Http,
        message,
        status: Some(status),
        error_type,
        request_id,
        partial: None,
    }
}

/// Error types of stream error events that mean "try again later".
const RETRYABLE_EVENT_TYPES: &[&str] = &[
    "overloaded_error",
    "api_error",
    "rate_limit_error",
    "server_error",
    "rate_limit_exceeded",
    "UNAVAILABLE",
    "INTERNAL",
];

/// Whether a request that failed this way before any content was yielded
/// may be sent again: timeouts (408), conflicts (409), rate limits (429),
/// server errors (5xx, including Anthropic's 529 "overloaded"), connection
/// failures, and error events of those kinds (an `overloaded_error` event
/// right after `message_start`). Quota, authentication and request errors
/// are not retried.
pub fn is_retryable(error: &ProviderError) -> bool {
    match error.kind {
        ProviderErrorKind::Connection => true,
        ProviderErrorKind::Http => matches!(error.status, Some(408 | 409 | 429 | 500..=599)),
        ProviderErrorKind::Api => error
            .error_type
            .as_deref()
            .is_some_and(|t| RETRYABLE_EVENT_TYPES.contains(&t)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_error_shapes() {
        let anthropic = br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}"#;
        let e = http(529, anthropic, None);
        assert_eq!(e.error_type.as_deref(), Some("overloaded_error"));
        assert_eq!(e.message, "Overloaded");
        assert_eq!(e.request_id.as_deref(), Some("req_1"));
        assert!(is_retryable(&e));

        let openai = br#"{"error":{"message":"Bad key","type":"invalid_request_error","code":"invalid_api_key"}}"#;
        let e = http(401, openai, Some("req_2".into()));
        assert_eq!(e.error_type.as_deref(), Some("invalid_request_error"));
        assert_eq!(e.request_id.as_deref(), Some("req_2"));
        assert!(!is_retryable(&e));

        let e = http(502, b"<html>bad gateway</html>", None);
        assert_eq!(e.message, "<html>bad gateway</html>");
        assert!(is_retryable(&e));
    }
}
