//! Choosing the model provider from flags and the environment.

use std::sync::Arc;

use agentloop_engine::scripted::ScriptedProvider;
use agentloop_providers::{HttpProvider, ProviderConfig};
use agentloop_types::{ApiKind, ModelProvider};

/// A provider ready to run, with its API and model.
pub struct Chosen {
    pub provider: Arc<dyn ModelProvider>,
    pub api: ApiKind,
    pub model: String,
    /// The model's context window from the provider's model table; `None`
    /// for models the table does not know.
    pub context_window: Option<u32>,
}

const NO_KEY: &str = "no model provider is configured. Set ANTHROPIC_API_KEY (Anthropic), \
OPENAI_API_KEY (OpenAI), or OPENAI_BASE_URL (an OpenAI-compatible server such as Ollama or vLLM), \
or pass --provider scripted:FILE to play a scripted conversation.";

/// Builds the provider named by `--provider` (or found in the environment).
pub fn choose(
    provider: Option<&str>,
    model: Option<&str>,
    base_url: Option<&str>,
) -> Result<Chosen, String> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let model = model.map(str::to_owned).or_else(|| env("AGENTLOOP_MODEL"));
    let base_url = base_url
        .map(str::to_owned)
        .or_else(|| env("OPENAI_BASE_URL"));
    let name = match provider {
        Some(name) => name.to_owned(),
        None if env("ANTHROPIC_API_KEY").is_some() => "anthropic".to_owned(),
        None if base_url.is_some() => "openai-compatible".to_owned(),
        None if env("OPENAI_API_KEY").is_some() => "openai-chat".to_owned(),
        None => return Err(NO_KEY.to_owned()),
    };
    if let Some(path) = name.strip_prefix("scripted:") {
        let json = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the script {path}: {e}"))?;
        let provider = ScriptedProvider::from_json(&json)
            .map_err(|e| format!("the script {path} is not a JSON array of turns: {e}"))?;
        return Ok(Chosen {
            provider,
            api: ApiKind::AnthropicMessages,
            model: model.unwrap_or_else(|| "scripted".to_owned()),
            context_window: None,
        });
    }
    let key = |var: &str| env(var).ok_or_else(|| format!("{var} is not set. {NO_KEY}"));
    let (config, default_model) = match name.as_str() {
        "anthropic" => (
            ProviderConfig::anthropic(key("ANTHROPIC_API_KEY")?),
            "claude-sonnet-4-5",
        ),
        "openai-chat" => (
            ProviderConfig::openai_chat(key("OPENAI_API_KEY")?),
            "gpt-4.1",
        ),
        "openai-responses" => (
            ProviderConfig::openai_responses(key("OPENAI_API_KEY")?),
            "gpt-4.1",
        ),
        "openai-compatible" => {
            let url = base_url.ok_or_else(|| {
                "openai-compatible needs --base-url or OPENAI_BASE_URL".to_owned()
            })?;
            (
                ProviderConfig::openai_compatible(url, env("OPENAI_API_KEY")),
                "default",
            )
        }
        other => {
            return Err(format!(
                "unknown provider {other}; use anthropic, openai-chat, openai-responses, \
                 openai-compatible or scripted:FILE"
            ));
        }
    };
    let api = config.api;
    let model = model.unwrap_or_else(|| default_model.to_owned());
    let context_window = config
        .model_limits(&model)
        .map(|limits| u32::try_from(limits.context_window).unwrap_or(u32::MAX));
    let provider =
        HttpProvider::new(config).map_err(|e| format!("cannot start the provider: {e}"))?;
    Ok(Chosen {
        provider: Arc::new(provider),
        api,
        model,
        context_window,
    })
}
