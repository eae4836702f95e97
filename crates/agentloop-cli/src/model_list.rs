//! A provider's model list, `GET {base}/models`: OpenAI-compatible servers
//! and Anthropic answer `{"data": [{"id"}]}`, Gemini `{"models": [{"name":
//! "models/..."}]}`. `agentloop models` prints it; `run` asks it for the
//! model of an OpenAI-compatible server when none is named.

use std::time::Duration;

use agentloop_providers::{Auth, ProviderConfig, ensure_crypto_provider};
use serde_json::Value;

use crate::out::{Failure, sanitize};

/// Why a model list could not be had.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    /// Nothing answers at the address.
    #[error(
        "cannot reach {url} ({reason}): is the server running there? The address comes from \
         --base-url, else OPENAI_BASE_URL (or the provider's *_BASE_URL)"
    )]
    Unreachable {
        /// The list's URL.
        url: String,
        /// What the connection attempt said.
        reason: String,
    },
    /// The server answered, but not with a list.
    #[error("{0}")]
    Answer(String),
}

impl From<ListError> for Failure {
    fn from(error: ListError) -> Self {
        Self::Runtime(error.to_string())
    }
}

/// The model ids the provider lists.
pub async fn fetch(config: &ProviderConfig) -> Result<Vec<String>, ListError> {
    ensure_crypto_provider();
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| ListError::Answer(format!("cannot start an HTTP client: {e}")))?;
    let url = url(config);
    let mut request = client.get(&url);
    if let Some(key) = config.api_key.as_deref().filter(|k| !k.is_empty()) {
        request = match config.auth {
            Auth::Bearer => request.bearer_auth(key),
            Auth::XApiKey => request.header("x-api-key", key),
            Auth::ApiKeyHeader => request.header("api-key", key),
            Auth::GoogApiKey => request.header("x-goog-api-key", key),
        };
    }
    for (name, value) in &config.headers {
        request = request.header(name, value);
    }
    let response = request.send().await.map_err(|e| ListError::Unreachable {
        url: url.clone(),
        reason: innermost(&e),
    })?;
    let status = response.status();
    let body = response
        .text()
        .await
        .map_err(|e| ListError::Answer(format!("cannot read the answer of {url}: {e}")))?;
    if !status.is_success() {
        let first: String = body.chars().take(200).collect();
        return Err(ListError::Answer(format!(
            "{url} answered {status}: {}",
            sanitize(first.trim())
        )));
    }
    model_ids(&body)
        .ok_or_else(|| ListError::Answer(format!("{url} did not answer with a list of models")))
}

/// The deepest cause of an error (`Connection refused`, `dns error`),
/// which says more than reqwest's own wrapping.
fn innermost(error: &(dyn std::error::Error + 'static)) -> String {
    let mut error = error;
    while let Some(source) = error.source() {
        error = source;
    }
    error.to_string()
}

/// Where the list is asked.
pub fn url(config: &ProviderConfig) -> String {
    format!("{}/models", config.base_url.trim_end_matches('/'))
}

/// The model to use on a server when none is named: the only one it
/// lists; several, none, or no list is an error naming `--model`.
pub async fn only_model(config: &ProviderConfig) -> Result<String, Failure> {
    let url = url(config);
    let ids = fetch(config).await.map_err(|error| match error {
        ListError::Unreachable { .. } => Failure::from(error),
        ListError::Answer(why) => Failure::Runtime(format!(
            "no model is named, and the server's model list could not be read ({why}); \
             name the model with --model (or AGENTLOOP_MODEL, or model in the configuration)"
        )),
    })?;
    match ids.as_slice() {
        [only] => Ok(only.clone()),
        [] => Err(Failure::usage(format!(
            "no model is named, and {url} lists none; name the model with --model \
             (or AGENTLOOP_MODEL, or model in the configuration)"
        ))),
        several => {
            const SHOWN: usize = 20;
            let mut names: Vec<String> = several
                .iter()
                .take(SHOWN)
                .map(|id| sanitize(id).into_owned())
                .collect();
            if several.len() > SHOWN {
                names.push(format!("and {} more", several.len() - SHOWN));
            }
            Err(Failure::usage(format!(
                "no model is named, and {url} lists {} models: {}; choose one with --model \
                 (or AGENTLOOP_MODEL, or model in the configuration)",
                several.len(),
                names.join(", ")
            )))
        }
    }
}

/// The model ids of a `/models` answer.
pub fn model_ids(body: &str) -> Option<Vec<String>> {
    let value: Value = serde_json::from_str(body).ok()?;
    if let Some(data) = value["data"].as_array() {
        return Some(
            data.iter()
                .filter_map(|m| m["id"].as_str().map(str::to_owned))
                .collect(),
        );
    }
    let models = value["models"].as_array()?;
    Some(
        models
            .iter()
            .filter_map(|m| m["name"].as_str())
            .map(|name| name.strip_prefix("models/").unwrap_or(name).to_owned())
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_lists_of_every_shape_are_read() {
        assert_eq!(
            model_ids(r#"{"data": [{"id": "gpt-4.1"}, {"id": "o3"}]}"#),
            Some(vec!["gpt-4.1".to_owned(), "o3".to_owned()])
        );
        assert_eq!(
            model_ids(r#"{"models": [{"name": "models/gemini-2.5-flash"}]}"#),
            Some(vec!["gemini-2.5-flash".to_owned()])
        );
        assert_eq!(model_ids(r#"{"error": "nope"}"#), None);
    }
}
