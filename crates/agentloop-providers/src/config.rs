//! Where and how a provider is reached.

use std::sync::Arc;
use std::time::Duration;

use agentloop_types::{ApiKind, ProviderError};

use crate::cache::PromptCache;
use crate::pricing::{ModelLimits, PricingTable};
use crate::retry::RetryPolicy;

/// How the API key is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// `Authorization: Bearer <key>` (OpenAI and most compatible servers).
    Bearer,
    /// `x-api-key: <key>` (Anthropic).
    XApiKey,
    /// `api-key: <key>` (Azure OpenAI).
    ApiKeyHeader,
    /// `x-goog-api-key: <key>` (Gemini API).
    GoogApiKey,
}

/// Everything an [`HttpProvider`](crate::HttpProvider) needs besides the
/// request. Its `Debug` output never shows the API key.
#[derive(Clone)]
pub struct ProviderConfig {
    /// Wire protocol.
    pub api: ApiKind,
    /// Base URL without the endpoint path, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// API key; `None` sends no credentials (local servers).
    pub api_key: Option<String>,
    /// How the key is sent.
    pub auth: Auth,
    /// Extra headers sent with every request (beta flags, organisation).
    pub headers: Vec<(String, String)>,
    /// Query parameters added to the endpoint (Azure's `api-version`).
    pub query: Vec<(String, String)>,
    /// Retry policy.
    pub retry: RetryPolicy,
    /// An OpenAI-compatible server rather than OpenAI itself: Chat requests
    /// use the widely supported `max_tokens` instead of
    /// `max_completion_tokens`.
    pub compatible: bool,
    /// Prices used for each turn's cost.
    pub pricing: Arc<PricingTable>,
    /// Longest wait for a TCP/TLS connection (default 30 s); a timeout is
    /// a connection error, retried like one. No timeout applies to the
    /// response itself: reasoning models may think for minutes before the
    /// first byte, and dropping the stream cancels a turn at any time.
    pub connect_timeout: Option<Duration>,
    /// Prompt caching: Anthropic breakpoints (on by default), OpenAI's
    /// `prompt_cache_key`.
    pub prompt_cache: PromptCache,
}

impl std::fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let redacted: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(name, value)| {
                let secret = ["authorization", "api-key", "x-api-key", "x-goog-api-key"]
                    .contains(&name.to_ascii_lowercase().as_str());
                (
                    name.as_str(),
                    if secret { "<redacted>" } else { value.as_str() },
                )
            })
            .collect();
        f.debug_struct("ProviderConfig")
            .field("api", &self.api)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("auth", &self.auth)
            .field("headers", &redacted)
            .field("query", &self.query)
            .field("retry", &self.retry)
            .field("compatible", &self.compatible)
            .field("connect_timeout", &self.connect_timeout)
            .field("prompt_cache", &self.prompt_cache)
            .finish_non_exhaustive()
    }
}

impl ProviderConfig {
    fn new(api: ApiKind, base_url: &str, api_key: Option<String>, auth: Auth) -> Self {
        Self {
            api,
            base_url: base_url.to_owned(),
            api_key,
            auth,
            headers: Vec::new(),
            query: Vec::new(),
            retry: RetryPolicy::default(),
            compatible: false,
            pricing: PricingTable::builtin(),
            connect_timeout: Some(Duration::from_secs(30)),
            prompt_cache: PromptCache::default(),
        }
    }

    /// The default configuration of `api` with this key: Anthropic or
    /// OpenAI itself.
    pub fn for_api(api: ApiKind, api_key: impl Into<String>) -> Self {
        match api {
            ApiKind::AnthropicMessages => Self::anthropic(api_key),
            ApiKind::OpenaiChat => Self::openai_chat(api_key),
            ApiKind::OpenaiResponses => Self::openai_responses(api_key),
            ApiKind::Gemini => Self::gemini(api_key),
        }
    }

    /// The configuration of `api` from the usual environment variables:
    /// `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL`, `OPENAI_API_KEY`
    /// and `OPENAI_BASE_URL`, or `GEMINI_API_KEY` and `GEMINI_BASE_URL`. With a base URL but no key (a local server)
    /// no credentials are sent. `lookup` reads a variable, e.g.
    /// `|name| std::env::var(name).ok()`.
    pub fn from_env(
        api: ApiKind,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ProviderError> {
        let prefix = match api {
            ApiKind::AnthropicMessages => "ANTHROPIC",
            ApiKind::OpenaiChat | ApiKind::OpenaiResponses => "OPENAI",
            ApiKind::Gemini => "GEMINI",
        };
        let non_empty = |name: String| lookup(&name).filter(|v| !v.trim().is_empty());
        let key = non_empty(format!("{prefix}_API_KEY"));
        let base = non_empty(format!("{prefix}_BASE_URL"));
        if key.is_none() && base.is_none() {
            return Err(crate::error::invalid_request(format!(
                "set {prefix}_API_KEY (or {prefix}_BASE_URL for a server without keys)"
            )));
        }
        let mut config = Self::for_api(api, key.clone().unwrap_or_default());
        config.api_key = key;
        if let Some(base) = base {
            config.base_url = base;
        }
        Ok(config)
    }

    /// Anthropic Messages at `https://api.anthropic.com/v1`.
    pub fn anthropic(api_key: impl Into<String>) -> Self {
        let mut config = Self::new(
            ApiKind::AnthropicMessages,
            "https://api.anthropic.com/v1",
            Some(api_key.into()),
            Auth::XApiKey,
        );
        config
            .headers
            .push(("anthropic-version".into(), "2023-06-01".into()));
        config
    }

    /// OpenAI Chat Completions at `https://api.openai.com/v1`.
    pub fn openai_chat(api_key: impl Into<String>) -> Self {
        Self::new(
            ApiKind::OpenaiChat,
            "https://api.openai.com/v1",
            Some(api_key.into()),
            Auth::Bearer,
        )
    }

    /// OpenAI Responses at `https://api.openai.com/v1`.
    pub fn openai_responses(api_key: impl Into<String>) -> Self {
        Self::new(
            ApiKind::OpenaiResponses,
            "https://api.openai.com/v1",
            Some(api_key.into()),
            Auth::Bearer,
        )
    }

    /// The Gemini API at `https://generativelanguage.googleapis.com/v1beta`.
    /// For Vertex AI, use [`with_base_url`](Self::with_base_url) with
    /// `https://<region>-aiplatform.googleapis.com/v1/projects/<project>/locations/<region>/publishers/google`
    /// and [`Auth::Bearer`] with an access token.
    pub fn gemini(api_key: impl Into<String>) -> Self {
        Self::new(
            ApiKind::Gemini,
            "https://generativelanguage.googleapis.com/v1beta",
            Some(api_key.into()),
            Auth::GoogApiKey,
        )
    }

    /// Any server speaking OpenAI Chat Completions (Ollama, vLLM, llama.cpp
    /// server, LM Studio ...): `base_url` is the part before
    /// `/chat/completions`, e.g. `http://localhost:11434/v1`.
    pub fn openai_compatible(base_url: impl Into<String>, api_key: Option<String>) -> Self {
        let mut config = Self::new(ApiKind::OpenaiChat, "", api_key, Auth::Bearer);
        config.base_url = base_url.into();
        config.compatible = true;
        config
    }

    /// Azure OpenAI Chat Completions for one deployment:
    /// `deployment_url` is `https://<resource>.openai.azure.com/openai/deployments/<name>`.
    pub fn azure_openai(
        deployment_url: impl Into<String>,
        api_key: impl Into<String>,
        api_version: impl Into<String>,
    ) -> Self {
        let mut config = Self::new(
            ApiKind::OpenaiChat,
            "",
            Some(api_key.into()),
            Auth::ApiKeyHeader,
        );
        config.base_url = deployment_url.into();
        config
            .query
            .push(("api-version".into(), api_version.into()));
        config
    }

    /// The same configuration with another base URL (a proxy, a test server).
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into();
        self
    }

    /// The same configuration with one more header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The same configuration with another retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The same configuration with another pricing table.
    pub fn with_pricing(mut self, pricing: Arc<PricingTable>) -> Self {
        self.pricing = pricing;
        self
    }

    /// The same configuration with entries of the model table overridden
    /// or added from JSON in the format of the built-in table (see
    /// [`PricingTable::merged`]).
    pub fn with_model_overrides(mut self, json: &str) -> Result<Self, ProviderError> {
        let overrides = PricingTable::from_json(json)
            .map_err(|e| crate::error::invalid_request(format!("model table overrides: {e}")))?;
        self.pricing = Arc::new(self.pricing.merged(&overrides));
        Ok(self)
    }

    /// The context window and output cap of `model` from the model table;
    /// `None` when the model is not known (the caller must not assume a
    /// window).
    pub fn model_limits(&self, model: &str) -> Option<ModelLimits> {
        self.pricing.limits(model)
    }

    /// The output cap per turn to ask for `model` when the caller names
    /// none ([`PricingTable::default_max_tokens`]): 1024 for a model the
    /// table knows no output limit of.
    pub fn default_max_tokens(&self, model: &str) -> u32 {
        self.pricing.default_max_tokens(model)
    }

    /// The same configuration with other prompt-caching settings.
    pub fn with_prompt_cache(mut self, prompt_cache: PromptCache) -> Self {
        self.prompt_cache = prompt_cache;
        self
    }

    /// The endpoint URL requests are posted to. Gemini names the model in
    /// the path: this is the streaming URL with a `{model}` placeholder;
    /// [`endpoint_for`](Self::endpoint_for) fills it in.
    pub fn endpoint(&self) -> String {
        self.endpoint_for("{model}", true)
    }

    /// The endpoint URL for a request to `model`, streaming or not (only
    /// Gemini's URL depends on either: `models/<model>:streamGenerateContent?alt=sse`
    /// or `models/<model>:generateContent`).
    pub fn endpoint_for(&self, model: &str, stream: bool) -> String {
        let mut url = String::with_capacity(self.base_url.len() + model.len() + 40);
        url.push_str(self.base_url.trim_end_matches('/'));
        url.push('/');
        match self.api {
            ApiKind::AnthropicMessages => url.push_str("messages"),
            ApiKind::OpenaiChat => url.push_str("chat/completions"),
            ApiKind::OpenaiResponses => url.push_str("responses"),
            ApiKind::Gemini => {
                url.push_str("models/");
                url.push_str(model);
                url.push_str(if stream {
                    ":streamGenerateContent"
                } else {
                    ":generateContent"
                });
            }
        }
        let sse = (self.api == ApiKind::Gemini && stream).then_some(("alt", "sse"));
        let query = sse
            .into_iter()
            .chain(self.query.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        for (i, (key, value)) in query.enumerate() {
            url.push(if i == 0 { '?' } else { '&' });
            url.push_str(key);
            url.push('=');
            url.push_str(value);
        }
        url
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_and_environment() {
        let vars = |name: &str| match name {
            "OPENAI_BASE_URL" => Some("http://localhost:8000/v1/".to_owned()),
            "ANTHROPIC_API_KEY" => Some("sk-ant".to_owned()),
            _ => None,
        };
        let local = ProviderConfig::from_env(ApiKind::OpenaiChat, vars).unwrap();
        assert_eq!(local.api_key, None);
        assert_eq!(
            local.endpoint(),
            "http://localhost:8000/v1/chat/completions"
        );
        let anthropic = ProviderConfig::from_env(ApiKind::AnthropicMessages, vars).unwrap();
        assert_eq!(anthropic.api_key.as_deref(), Some("sk-ant"));
        assert_eq!(
            anthropic.endpoint(),
            "https://api.anthropic.com/v1/messages"
        );
        assert!(ProviderConfig::from_env(ApiKind::OpenaiResponses, |_| None).is_err());
        let shown = format!("{:?}", anthropic.with_header("x-api-key", "sk-other"));
        assert!(
            !shown.contains("sk-ant") && !shown.contains("sk-other"),
            "{shown}"
        );

        let gemini_vars = |name: &str| (name == "GEMINI_API_KEY").then(|| "g-key".to_owned());
        let gemini = ProviderConfig::from_env(ApiKind::Gemini, gemini_vars).unwrap();
        assert_eq!(gemini.auth, Auth::GoogApiKey);
        assert_eq!(
            gemini.endpoint_for("gemini-2.5-flash", false),
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
        );
        let shown = format!("{:?}", gemini.with_header("x-goog-api-key", "g-other"));
        assert!(
            !shown.contains("g-key") && !shown.contains("g-other"),
            "{shown}"
        );

        let azure = ProviderConfig::azure_openai(
            "https://r.openai.azure.com/openai/deployments/d",
            "k",
            "2025-04-01-preview",
        );
        assert_eq!(
            azure.endpoint(),
            "https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=2025-04-01-preview"
        );
    }
}
