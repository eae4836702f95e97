//! Sending a request, with retries before any content exists.

use std::error::Error as _;
use std::sync::Mutex;

use agentloop_types::ProviderError;
use reqwest::header::{HeaderMap, HeaderName};
use tracing::Instrument;

use crate::config::{Auth, ProviderConfig};
use crate::error::{self, is_retryable};
use crate::retry;

/// The provider's request id from the response headers, if it sent one.
pub(crate) fn request_id(headers: &HeaderMap) -> Option<String> {
    // Static names: a `&str` name is parsed and checked on every lookup.
    static NAMES: [HeaderName; 3] = [
        HeaderName::from_static("request-id"),
        HeaderName::from_static("x-request-id"),
        HeaderName::from_static("apim-request-id"),
    ];
    NAMES
        .iter()
        .find_map(|name| headers.get(name))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// A reqwest error with its causes, for messages.
pub(crate) fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The endpoint last parsed, with its text: a run sends every request to
/// one URL, which is then parsed once, not per request.
#[derive(Debug, Default)]
pub(crate) struct ParsedEndpoint(Mutex<Option<(String, reqwest::Url)>>);

impl ParsedEndpoint {
    /// `url` parsed, or an error naming why it is not a URL (not the URL
    /// itself: its query may hold a key).
    pub(crate) fn parse(&self, url: String) -> Result<reqwest::Url, ProviderError> {
        let Ok(mut last) = self.0.lock() else {
            return parse_url(&url);
        };
        match last.as_ref() {
            Some((text, parsed)) if *text == url => Ok(parsed.clone()),
            _ => {
                let parsed = parse_url(&url)?;
                *last = Some((url, parsed.clone()));
                Ok(parsed)
            }
        }
    }
}

fn parse_url(url: &str) -> Result<reqwest::Url, ProviderError> {
    reqwest::Url::parse(url).map_err(|e| {
        error::invalid_request(format!("the provider's endpoint is not a valid URL: {e}"))
    })
}

/// Posts `body` to `url` and returns the successful response. Failed attempts that
/// [`is_retryable`] allows are repeated per the config's [`RetryPolicy`]
/// (`retry-after` honoured), counting in `retries` the retries the turn has
/// used; the wait ends at once when the caller drops the future.
///
/// [`RetryPolicy`]: crate::RetryPolicy
pub(crate) async fn send(
    client: &reqwest::Client,
    config: &ProviderConfig,
    url: reqwest::Url,
    body: Vec<u8>,
    retries: &mut u32,
) -> Result<reqwest::Response, ProviderError> {
    // Shared, so an attempt does not copy the body. The body was written
    // into room guessed from earlier requests: giving back what it did not
    // use (allocators shrink in place) lets `Bytes` take the buffer as is,
    // where spare room would cost it one more allocation and the request
    // would hold the room while it is in flight.
    let mut body = body;
    body.shrink_to_fit();
    let body = bytes::Bytes::from(body);
    loop {
        let attempt = tracing::info_span!(
            "http.attempt",
            retry = *retries,
            http.response.status_code = tracing::field::Empty,
        );
        let mut builder = client
            .post(url.clone())
            .header("content-type", "application/json")
            .body(body.clone());
        if let Some(key) = &config.api_key {
            builder = match config.auth {
                Auth::Bearer => builder.bearer_auth(key),
                Auth::XApiKey => builder.header("x-api-key", key),
                Auth::ApiKeyHeader => builder.header("api-key", key),
                Auth::GoogApiKey => builder.header("x-goog-api-key", key),
            };
        }
        for (name, value) in &config.headers {
            builder = builder.header(name, value);
        }
        let sent = builder.send().instrument(attempt.clone()).await;
        if let Ok(response) = &sent {
            attempt.record("http.response.status_code", response.status().as_u16());
        }
        match sent {
            Ok(response) if response.status().is_success() => return Ok(response),
            // Boxed: the rare path's futures (reading an error body, the
            // backoff) would otherwise make every turn's future larger.
            failed => Box::pin(back_off(failed, config, *retries, &attempt)).await?,
        }
        *retries += 1;
    }
}

/// After a failed attempt: the failure, when it is not retried (or the
/// retries are used up); otherwise waits out the backoff.
async fn back_off(
    sent: Result<reqwest::Response, reqwest::Error>,
    config: &ProviderConfig,
    retries: u32,
    attempt: &tracing::Span,
) -> Result<(), ProviderError> {
    let (failure, wait) = match sent {
        Ok(response) => {
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            let body = response.bytes().await.unwrap_or_default();
            let failure = error::http(status, &body, request_id(&headers));
            (failure, retry::retry_after(&headers))
        }
        Err(e) => (error::connection(describe(&e), None), None),
    };
    if retries >= config.retry.max_retries || !is_retryable(&failure) {
        return Err(failure);
    }
    let Some(delay) = config.retry.delay(retries, wait) else {
        return Err(failure);
    };
    attempt.in_scope(|| {
        retry::notice_retry(&failure, retries + 1, config.retry.max_retries, delay);
    });
    tokio::time::sleep(delay).await;
    Ok(())
}
