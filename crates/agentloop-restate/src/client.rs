//! Talking to Restate over HTTP: registering this process's service
//! endpoint with the admin API; starting a run's workflow, waking it and
//! cancelling it.

use std::time::Duration;

use serde_json::json;

use crate::endpoint::{Protocol, SERVICE};
use crate::error::{RestateError, RestateResult};

/// Restate as this process reaches it.
#[derive(Clone, Debug)]
pub struct RestateClient {
    http: reqwest::Client,
    ingress: String,
    admin: String,
}

impl RestateClient {
    /// A client of the Restate whose ingress and admin API answer at these
    /// `http://` URLs.
    pub fn new(ingress: &str, admin: &str) -> RestateResult<Self> {
        // See the manifest: a client built where reqwest uses rustls with
        // no provider needs one installed first.
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| RestateError::InvalidUrl {
                url: ingress.to_owned(),
                reason: e.to_string(),
            })?;
        Ok(Self {
            http,
            ingress: base_url(ingress)?,
            admin: base_url(admin)?,
        })
    }

    /// Registers the service endpoint at `endpoint` (an `http://` URL
    /// Restate reaches, speaking `protocol`) with the admin API.
    /// Idempotent: the same endpoint registered again replaces its own
    /// registration (`force`). The admin API is asked first whether it is
    /// up, so a failure says which side of Restate failed: the admin API
    /// unreachable ([`RestateError::Unreachable`]), or Restate unable to
    /// reach the endpoint ([`RestateError::EndpointUnreachable`]: Restate
    /// calls the endpoint while it registers it, and waits as long as the
    /// connection hangs).
    pub async fn register(&self, endpoint: &str, protocol: Protocol) -> RestateResult<()> {
        let endpoint = base_url(endpoint)?;
        let health = format!("{}/health", self.admin);
        self.send(
            self.http.get(&health).timeout(ADMIN_PROBE_TIMEOUT),
            &health,
            "the admin API's health",
        )
        .await?;
        let url = format!("{}/deployments", self.admin);
        let body = json!({
            "uri": endpoint,
            "force": true,
            "use_http_11": protocol == Protocol::Http1,
        });
        let unreachable = |message: String| RestateError::EndpointUnreachable {
            endpoint: endpoint.clone(),
            admin: self.admin.clone(),
            message,
        };
        let request = self
            .http
            .post(&url)
            .header("content-type", "application/json")
            .timeout(REGISTRATION_TIMEOUT)
            .body(body.to_string());
        match self
            .send(request, &url, "the deployment's registration")
            .await
        {
            Err(RestateError::Unreachable { message, .. }) => Err(unreachable(format!(
                "no answer within {} s ({message})",
                REGISTRATION_TIMEOUT.as_secs()
            ))),
            // Restate's code for an endpoint it could not discover.
            Err(RestateError::Refused { body, .. }) if body.contains(DISCOVERY_FAILED) => {
                Err(unreachable(discovery_message(&body)))
            }
            other => other,
        }
    }

    /// Starts the workflow of run `run_id` (its `run` handler), without
    /// waiting for it. Starting one that was started already is no error:
    /// Restate keeps the one workflow per key.
    pub async fn start(&self, run_id: &str) -> RestateResult<()> {
        let url = format!(
            "{}/{SERVICE}/{}/run/send",
            self.ingress,
            path_segment(run_id)
        );
        self.send(
            // The handler takes no input: Restate wants no body at all.
            self.http.post(&url),
            &url,
            "the run's start",
        )
        .await
    }

    /// Wakes the workflow of run `run_id` waiting on `wait` (see
    /// [`crate::Step::Waiting`]): its shared `wake` handler resolves the
    /// wait's durable promise. Waking a wait that is over changes nothing.
    pub async fn wake(&self, run_id: &str, wait: &str) -> RestateResult<()> {
        let url = format!("{}/{SERVICE}/{}/wake", self.ingress, path_segment(run_id));
        self.send(
            self.http
                .post(&url)
                .header("content-type", "application/json")
                .body(serde_json::Value::from(wait).to_string()),
            &url,
            "the run's wake-up",
        )
        .await
    }

    /// Cancels the workflow of run `run_id` with Restate's cancellation:
    /// Restate stops retrying it, and the workflow logs the run's end (see
    /// [`crate::workflow`]). A workflow that ended already, or never
    /// started, is left as it is.
    pub async fn cancel(&self, run_id: &str) -> RestateResult<()> {
        let Some(invocation) = self.open_invocation(run_id).await? else {
            return Ok(());
        };
        let url = format!(
            "{}/invocations/{}/cancel",
            self.admin,
            path_segment(&invocation)
        );
        match self
            .send(self.http.patch(&url), &url, "the run's cancellation")
            .await
        {
            // 404: gone meanwhile; 409: it completed meanwhile.
            Err(RestateError::Refused {
                status: 404 | 409, ..
            }) => Ok(()),
            other => other,
        }
    }

    /// The id of the open invocation of run `run_id`'s workflow (its `run`
    /// handler, not yet completed), read from the admin API's SQL view.
    async fn open_invocation(&self, run_id: &str) -> RestateResult<Option<String>> {
        let url = format!("{}/query", self.admin);
        let sql = format!(
            "SELECT id FROM sys_invocation WHERE target_service_name = '{SERVICE}' \
             AND target_service_key = '{}' AND target_handler_name = 'run' \
             AND status != 'completed'",
            run_id.replace('\'', "''")
        );
        let request = self
            .http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(json!({ "query": sql }).to_string());
        let body = self.answer(request, &url, "the run's invocation").await?;
        let rows: QueryRows = serde_json::from_str(&body).map_err(|e| RestateError::Refused {
            what: "the run's invocation".to_owned(),
            status: 200,
            body: format!("unreadable answer: {e}"),
        })?;
        Ok(rows.rows.into_iter().next().map(|row| row.id))
    }

    async fn send(
        &self,
        request: reqwest::RequestBuilder,
        url: &str,
        what: &str,
    ) -> RestateResult<()> {
        self.answer(request, url, what).await.map(drop)
    }

    /// Sends `request`; the body of a successful answer.
    async fn answer(
        &self,
        request: reqwest::RequestBuilder,
        url: &str,
        what: &str,
    ) -> RestateResult<String> {
        let response = request
            .send()
            .await
            .map_err(|e| RestateError::Unreachable {
                url: url.to_owned(),
                message: e.to_string(),
            })?;
        let status = response.status();
        if status.is_success() {
            return response
                .text()
                .await
                .map_err(|e| RestateError::Unreachable {
                    url: url.to_owned(),
                    message: e.to_string(),
                });
        }
        let mut body = response.text().await.unwrap_or_default();
        if body.len() > 512 {
            let mut cut = 512;
            while !body.is_char_boundary(cut) {
                cut -= 1;
            }
            body.truncate(cut);
        }
        Err(RestateError::Refused {
            what: what.to_owned(),
            status: status.as_u16(),
            body,
        })
    }
}

/// How long the admin API has to answer whether it is up.
const ADMIN_PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a registration may take: Restate calls the endpoint meanwhile.
const REGISTRATION_TIMEOUT: Duration = Duration::from_secs(30);

/// Restate's error code for an endpoint its discovery could not call.
const DISCOVERY_FAILED: &str = "META0003";

/// What Restate said about a failed discovery: its `message`, without the
/// repeated code prefix; the body as it is when it is not that JSON.
fn discovery_message(body: &str) -> String {
    let message = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(str::to_owned))
        .unwrap_or_else(|| body.to_owned());
    let prefix = format!("[{DISCOVERY_FAILED}]");
    let mut rest = message.as_str().trim_start();
    while let Some(after) = rest.strip_prefix(&prefix) {
        rest = after.trim_start();
    }
    format!("{rest} ({DISCOVERY_FAILED})")
}

/// Rows of the admin API's SQL view.
#[derive(serde::Deserialize)]
struct QueryRows {
    rows: Vec<InvocationRow>,
}

#[derive(serde::Deserialize)]
struct InvocationRow {
    id: String,
}

/// `url` without its trailing slash, refused unless it is `http://`.
fn base_url(url: &str) -> RestateResult<String> {
    let refuse = |reason: &str| RestateError::InvalidUrl {
        url: url.to_owned(),
        reason: reason.to_owned(),
    };
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| refuse("only http:// URLs are supported"))?;
    if rest.trim_end_matches('/').is_empty() {
        return Err(refuse("the URL names no host"));
    }
    Ok(url.trim_end_matches('/').to_owned())
}

/// A run id as one path segment: ids are ours (letters, digits, `-`),
/// anything else is percent-encoded.
fn path_segment(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for byte in id.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_' {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_must_be_http_with_a_host() {
        assert_eq!(
            base_url("http://127.0.0.1:8080/").unwrap(),
            "http://127.0.0.1:8080"
        );
        assert!(matches!(
            base_url("https://x"),
            Err(RestateError::InvalidUrl { .. })
        ));
        assert!(matches!(
            base_url("http://"),
            Err(RestateError::InvalidUrl { .. })
        ));
    }

    #[test]
    fn a_failed_discovery_reads_as_restate_said_it_once() {
        let body = r#"{"message":"[META0003] [META0003] error when calling 'http://w:9080/': connection refused","restate_code":"META0003"}"#;
        assert_eq!(
            discovery_message(body),
            "error when calling 'http://w:9080/': connection refused (META0003)"
        );
        assert_eq!(discovery_message("META0003 cut"), "META0003 cut (META0003)");
    }

    #[test]
    fn odd_ids_are_one_path_segment() {
        assert_eq!(path_segment("ab-1_2"), "ab-1_2");
        assert_eq!(path_segment("a/b c"), "a%2Fb%20c");
    }
}
