//! Choosing the model provider from flags and the environment.
//!
//! `--base-url` (else `ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL` or
//! `GEMINI_BASE_URL`, by provider) replaces the provider's default address
//! for every provider, and is checked before any request is made.

use std::sync::Arc;

use agentloop_engine::scripted::ScriptedProvider;
use agentloop_providers::{HttpProvider, ProviderConfig};
use agentloop_types::ModelProvider;

use crate::out::Failure;

/// A provider ready to run, with its model.
pub struct Chosen {
    pub provider: Arc<dyn ModelProvider>,
    pub model: String,
    /// The model's context window, from the providers' model table.
    pub context_window: Option<u32>,
    /// The output cap per turn when `--max-tokens` names none: from the
    /// model table, 1024 for a model it knows no limit of
    /// ([`agentloop_providers::UNKNOWN_MODEL_MAX_TOKENS`]).
    pub max_tokens: u32,
}

/// The provider of a server started with no model configured: every
/// turn fails saying how to configure one, so the page and the API work
/// and a run ends `failed` with that message.
#[cfg(feature = "server")]
pub fn unconfigured(model: Option<&str>) -> Chosen {
    struct Unconfigured;
    impl ModelProvider for Unconfigured {
        fn stream(&self, _request: agentloop_types::ModelRequest) -> agentloop_types::ModelStream {
            let error = agentloop_types::ProviderError::new(
                agentloop_types::ProviderErrorKind::NotConfigured,
                UNCONFIGURED_RUN.to_owned(),
            );
            Box::pin(futures::stream::once(async move { Err(error) }))
        }
    }
    Chosen {
        provider: Arc::new(Unconfigured),
        model: model.unwrap_or("unconfigured").to_owned(),
        context_window: None,
        max_tokens: agentloop_providers::KNOWN_MODEL_MAX_TOKENS,
    }
}

/// The provider names `--provider` accepts (besides `scripted:FILE`).
pub const NAMES: &str = "anthropic, openai-chat, openai-responses, openai-compatible, gemini";

pub const NO_KEY: &str = "no model provider is configured. Set ANTHROPIC_API_KEY (Anthropic), \
OPENAI_API_KEY (OpenAI), GEMINI_API_KEY (Gemini), or OPENAI_BASE_URL (an OpenAI-compatible server \
such as Ollama or vLLM), in the environment or in keys.env beside the configuration file \
(`agentloop info` shows where); or pass --local to use the small model `scripts/local-model.sh \
build` installs (no key), or --provider scripted:FILE to play a scripted conversation.";

/// What `serve` says when it starts with no provider configured.
#[cfg(feature = "server")]
pub const SERVE_NO_KEY: &str = "no model provider is configured: the server starts, and its runs \
fail saying how to set one. Start it with --demo to play the shipped demo agents, or with --local \
to run them on the small model `scripts/local-model.sh build` installs (no key); or set \
ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY or OPENAI_BASE_URL (in the environment or in \
keys.env, see `agentloop info`) and restart it.";

/// Why a run of a server with no provider configured fails.
#[cfg(feature = "server")]
const UNCONFIGURED_RUN: &str = "no model provider is configured on this server, so no model can \
answer. To fix it, restart `agentloop serve` with --demo (the shipped demo agents) or --local (a \
small model on that machine, no key), or set ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY or \
OPENAI_BASE_URL and restart it.";

/// [`NO_KEY`] for `agentloop models`, which has no scripted provider to
/// offer: a server address instead.
pub const NO_KEY_FOR_MODELS: &str = "no model provider is configured. Set ANTHROPIC_API_KEY \
(Anthropic), OPENAI_API_KEY (OpenAI), GEMINI_API_KEY (Gemini), or OPENAI_BASE_URL (an \
OpenAI-compatible server such as Ollama or vLLM), or pass --base-url with the address of an \
OpenAI-compatible server (e.g. --base-url http://localhost:11434/v1).";

/// What the provider is resolved for: the hint given when no key is set
/// differs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A run, chat or server: a scripted provider is an alternative.
    Run,
    /// `agentloop models`: only a server can list models.
    ListModels,
}

impl Purpose {
    fn no_key(self) -> &'static str {
        match self {
            Self::Run => NO_KEY,
            Self::ListModels => NO_KEY_FOR_MODELS,
        }
    }
}

/// A setting from the environment, else from the key file.
fn env(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .or_else(|| crate::keys::get(name))
}

/// The settings that configure a provider.
pub const SETTINGS: [&str; 5] = [
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
];

/// Whether any provider is configured in the environment.
pub fn configured_in_env() -> bool {
    SETTINGS.iter().any(|name| env(name).is_some())
}

/// Where a setting comes from: `environment`, `key file`, or `None`.
pub fn setting_source(name: &str) -> Option<&'static str> {
    if std::env::var(name).is_ok_and(|v| !v.trim().is_empty()) {
        Some("environment")
    } else if crate::keys::get(name).is_some() {
        Some("key file")
    } else {
        None
    }
}

/// Checks a base URL before anything is sent to it: `http(s)://host...`.
pub fn check_base_url(url: &str) -> Result<(), Failure> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| {
            Failure::usage(format!(
                "--base-url {url:?} is not an http:// or https:// URL"
            ))
        })?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let bad_char = |c: char| c.is_whitespace() || c.is_control();
    if host.is_empty() || host.starts_with(':') || url.chars().any(bad_char) {
        return Err(Failure::usage(format!(
            "--base-url {url:?} has no host (expected e.g. http://localhost:11434/v1)"
        )));
    }
    Ok(())
}

/// Builds the provider named by `--provider` (or found in the
/// environment). An OpenAI-compatible server with no model named is asked
/// for its model list, and its only model is used.
pub async fn choose(
    provider: Option<&str>,
    model: Option<&str>,
    base_url: Option<&str>,
) -> Result<Chosen, Failure> {
    let model = model.map(str::to_owned).or_else(|| env("AGENTLOOP_MODEL"));
    if let Some(path) = provider.and_then(|name| name.strip_prefix("scripted:")) {
        if path.trim().is_empty() {
            return Err(Failure::usage(
                "--provider scripted: needs the script's path: scripted:FILE, FILE a JSON array \
                 of scripted turns (see examples/README.md)",
            ));
        }
        let json = std::fs::read_to_string(path)
            .map_err(|e| Failure::usage(format!("cannot read the script {path}: {e}")))?;
        return scripted(&json, path, model);
    }
    let (config, default_model) = resolve(provider, base_url, Purpose::Run)?;
    let model = match model {
        Some(model) => model,
        None if default_model.is_none() => {
            let only = crate::model_list::only_model(&config).await?;
            crate::out::note(format!(
                "using the model {} (the only one {} lists)",
                crate::out::sanitize(&only),
                crate::model_list::url(&config)
            ));
            only
        }
        None => default_model.unwrap_or_default().to_owned(),
    };
    let context_window = config
        .model_limits(&model)
        .map(|limits| u32::try_from(limits.context_window).unwrap_or(u32::MAX));
    let max_tokens = config.default_max_tokens(&model);
    let provider = HttpProvider::new(config)
        .map_err(|e| Failure::Runtime(format!("cannot start the provider: {e}")))?;
    Ok(Chosen {
        provider: Arc::new(provider),
        model,
        context_window,
        max_tokens,
    })
}

/// The configuration of the HTTP provider named by `--provider` (or found
/// in the environment) with its default model (none for an
/// OpenAI-compatible server: which models it serves is its own).
pub fn resolve(
    provider: Option<&str>,
    base_url: Option<&str>,
    purpose: Purpose,
) -> Result<(ProviderConfig, Option<&'static str>), Failure> {
    let name = match provider {
        Some(name) => name.to_owned(),
        None if env("ANTHROPIC_API_KEY").is_some() => "anthropic".to_owned(),
        None if base_url.is_some() || env("OPENAI_BASE_URL").is_some() => {
            "openai-compatible".to_owned()
        }
        None if env("OPENAI_API_KEY").is_some() => "openai-chat".to_owned(),
        None if env("GEMINI_API_KEY").is_some() || env("GOOGLE_API_KEY").is_some() => {
            "gemini".to_owned()
        }
        None => return Err(Failure::usage(purpose.no_key())),
    };
    if name.starts_with("scripted:") {
        return Err(Failure::usage(
            "a scripted provider has no server to ask; use anthropic, openai-chat, \
             openai-responses, openai-compatible or gemini",
        ));
    }
    let base_env = match name.as_str() {
        "anthropic" => "ANTHROPIC_BASE_URL",
        "gemini" => "GEMINI_BASE_URL",
        _ => "OPENAI_BASE_URL",
    };
    let base_url = base_url.map(str::to_owned).or_else(|| env(base_env));
    if let Some(url) = &base_url {
        check_base_url(url)?;
    }
    // A server of one's own (a base URL) may need no key.
    let key = |var: &str| -> Result<String, Failure> {
        match env(var) {
            Some(key) => Ok(key),
            None if base_url.is_some() => Ok(String::new()),
            None => Err(Failure::usage(format!(
                "{var} is not set. {}",
                purpose.no_key()
            ))),
        }
    };
    let (mut config, default_model) = match name.as_str() {
        "anthropic" => (
            ProviderConfig::anthropic(key("ANTHROPIC_API_KEY")?),
            Some("claude-sonnet-4-5"),
        ),
        "openai-chat" => (
            ProviderConfig::openai_chat(key("OPENAI_API_KEY")?),
            Some("gpt-4.1"),
        ),
        "openai-responses" => (
            ProviderConfig::openai_responses(key("OPENAI_API_KEY")?),
            Some("gpt-4.1"),
        ),
        "gemini" => {
            let key = env("GEMINI_API_KEY")
                .or_else(|| env("GOOGLE_API_KEY"))
                .map_or_else(|| key("GEMINI_API_KEY"), Ok)?;
            (ProviderConfig::gemini(key), Some("gemini-2.5-flash"))
        }
        "openai-compatible" => {
            let url = base_url.clone().ok_or_else(|| {
                Failure::usage("openai-compatible needs --base-url or OPENAI_BASE_URL")
            })?;
            (
                ProviderConfig::openai_compatible(url, env("OPENAI_API_KEY")),
                None,
            )
        }
        other => {
            return Err(Failure::usage(format!(
                "unknown provider {:?}; use {NAMES} or scripted:FILE",
                crate::out::sanitize(other)
            )));
        }
    };
    if let Some(url) = base_url {
        if config.api_key.as_deref() == Some("") {
            config.api_key = None;
        }
        config = config.with_base_url(url);
    }
    Ok((config, default_model))
}

/// A scripted provider playing `json` (a JSON array of turns); `origin`
/// names it in errors.
pub fn scripted(json: &str, origin: &str, model: Option<String>) -> Result<Chosen, Failure> {
    let provider = ScriptedProvider::from_json(json).map_err(|e| {
        Failure::usage(format!(
            "the script {origin} is not a JSON array of turns: {e}"
        ))
    })?;
    if provider.remaining() == 0 {
        return Err(Failure::usage(format!(
            "the script {origin} has no turns: it needs at least one, e.g. \
             [{{\"steps\": [{{\"type\": \"text\", \"chunks\": [\"Hello.\"]}}]}}]"
        )));
    }
    Ok(Chosen {
        provider,
        model: model.unwrap_or_else(|| "scripted".to_owned()),
        context_window: None,
        max_tokens: agentloop_providers::KNOWN_MODEL_MAX_TOKENS,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_are_checked_before_use() {
        assert!(check_base_url("http://localhost:11434/v1").is_ok());
        assert!(check_base_url("https://api.example.com").is_ok());
        for bad in [
            "localhost:11434",
            "ftp://x",
            "http://",
            "http:///v1",
            "http://a b",
        ] {
            assert!(
                matches!(check_base_url(bad), Err(Failure::Usage(_))),
                "{bad}"
            );
        }
    }
}
