//! One user's HTTP client of the soaked server: every request is timed by
//! its route, and a 5xx or a broken connection is a finding.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::stats::Stats;

/// How long one request may take before it counts as a finding.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// A user of the API.
#[derive(Clone)]
pub struct Api {
    pub base: String,
    pub token: String,
    pub http: reqwest::Client,
    pub stats: Arc<Stats>,
}

/// An answer: status and JSON body (`Null` when it is not JSON).
pub struct Answer {
    pub status: u16,
    pub body: Value,
}

impl Api {
    /// Sends `method path` with `body` (raw bytes, sent as JSON) as this
    /// user, timed under `route`. `None` when the connection failed (a
    /// finding).
    pub async fn send(
        &self,
        route: &'static str,
        method: reqwest::Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Option<Answer> {
        self.send_as(route, method, path, body, Some(&self.token))
            .await
    }

    /// As [`send`](Self::send), with `token` (or none) as the credential.
    pub async fn send_as(
        &self,
        route: &'static str,
        method: reqwest::Method,
        path: &str,
        body: Option<Vec<u8>>,
        token: Option<&str>,
    ) -> Option<Answer> {
        let mut request = self
            .http
            .request(method.clone(), format!("{}{path}", self.base))
            .timeout(REQUEST_TIMEOUT);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body);
        }
        let sent = Instant::now();
        let answer = async {
            let response = request.send().await?;
            let status = response.status().as_u16();
            let bytes = response.bytes().await?;
            Ok::<_, reqwest::Error>((status, bytes))
        }
        .await;
        let took = sent.elapsed();
        match answer {
            Ok((status, bytes)) => {
                self.stats.answered(route, status, took);
                let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                if status >= 500 {
                    self.stats.finding(format!(
                        "{status} from {method} {path} ({route}): {}",
                        String::from_utf8_lossy(&bytes)
                    ));
                }
                Some(Answer { status, body })
            }
            Err(error) => {
                self.stats.finding(format!(
                    "connection failed on {method} {path} ({route}) after {took:?}: {error:?}"
                ));
                None
            }
        }
    }

    /// Sends a JSON value.
    pub async fn json(
        &self,
        route: &'static str,
        method: reqwest::Method,
        path: &str,
        body: Value,
    ) -> Option<Answer> {
        self.send(route, method, path, Some(body.to_string().into_bytes()))
            .await
    }

    /// Expects `want` from a request; anything else is a finding. Returns
    /// the body when the status was the one wanted.
    pub fn expect(&self, answer: Option<Answer>, want: u16, what: &str) -> Option<Value> {
        let answer = answer?;
        if answer.status == want {
            return Some(answer.body);
        }
        if answer.status < 500 {
            self.stats.finding(format!(
                "{what}: status {} where {want} was expected: {}",
                answer.status, answer.body
            ));
        }
        None
    }
}
