//! Retry policy: which failures are retried and how long to wait.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use reqwest::header::HeaderMap;

/// How failed requests are retried. Only failures before any content was
/// yielded are retried (see [`is_retryable`](crate::is_retryable)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (default 2).
    pub max_retries: u32,
    /// Wait before the first retry; doubled for each further one.
    pub initial_backoff: Duration,
    /// Longest computed wait.
    pub max_backoff: Duration,
    /// Longest `retry-after` honoured; a provider asking for more ends the
    /// retries and the error is returned.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// The wait before retry number `retry` (0-based), or `None` when the
    /// server asks for longer than [`max_retry_after`](Self::max_retry_after).
    /// A server's `retry-after` is used as given; otherwise the wait is
    /// exponential with up to 25% jitter taken off.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Option<Duration> {
        if let Some(wait) = retry_after {
            return (wait <= self.max_retry_after).then_some(wait);
        }
        let exp = self
            .initial_backoff
            .saturating_mul(2u32.saturating_pow(retry))
            .min(self.max_backoff);
        let jitter = exp.mul_f64(random_fraction() * 0.25);
        Some(exp.saturating_sub(jitter))
    }
}

/// A number in `[0, 1)` from the standard library's per-process random
/// hasher keys (enough for jitter; no extra dependency).
fn random_fraction() -> f64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(0x9E37_79B9_7F4A_7C15);
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// The wait a response asks for: `retry-after-ms` (milliseconds) or
/// `retry-after` (seconds). An HTTP-date form is ignored.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(saturating_secs(ms / 1000.0));
    }
    header("retry-after")
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(saturating_secs)
}

/// A finite, non-negative number of seconds as a `Duration`; a wait too
/// long for one (a server sending `1e30`) becomes the longest, which no
/// `max_retry_after` allows, instead of panicking.
fn saturating_secs(secs: f64) -> Duration {
    Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
}

/// Tells whoever listens (a terminal at the default level) that a failed
/// request is sent again: `rate limited (429): ...; retrying in 2.0 s (1/3)`.
pub(crate) fn notice_retry(
    failure: &agentloop_types::ProviderError,
    retry: u32,
    max_retries: u32,
    delay: std::time::Duration,
) {
    // The error is in the message only: a field with it too would print
    // it twice on every notice line.
    tracing::warn!(
        retry,
        wait_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
        "{failure}; retrying in {:.1} s ({retry}/{max_retries})",
        delay.as_secs_f64()
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn backoff_grows_with_jitter_and_caps() {
        let policy = RetryPolicy::default();
        for _ in 0..50 {
            let d0 = policy.delay(0, None).unwrap();
            assert!(
                d0 <= Duration::from_millis(500) && d0 >= Duration::from_millis(375),
                "{d0:?}"
            );
            let d1 = policy.delay(1, None).unwrap();
            assert!(d1 <= Duration::from_millis(1000) && d1 >= Duration::from_millis(750));
            let d9 = policy.delay(9, None).unwrap();
            assert!(d9 <= Duration::from_secs(8));
        }
        assert_eq!(
            policy.delay(0, Some(Duration::from_secs(3))),
            Some(Duration::from_secs(3))
        );
        assert_eq!(policy.delay(0, Some(Duration::from_secs(600))), None);
    }

    #[test]
    fn retry_after_headers() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("1500"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(1500)));
        let mut dated = HeaderMap::new();
        dated.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&dated), None);
    }

    #[test]
    fn huge_retry_after_is_refused_not_a_panic() {
        let policy = RetryPolicy::default();
        for (name, value) in [("retry-after", "1e30"), ("retry-after-ms", "1e300")] {
            let mut headers = HeaderMap::new();
            headers.insert(name, HeaderValue::from_static(value));
            let wait = retry_after(&headers);
            assert_eq!(wait, Some(Duration::MAX), "{name}: {value}");
            assert_eq!(policy.delay(0, wait), None, "{name}: {value}");
        }
    }
}
