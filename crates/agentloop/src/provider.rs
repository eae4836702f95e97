//! Providers from the usual environment variables, in one call.

use agentloop_providers::{HttpProvider, ProviderConfig};
use agentloop_types::{ApiKind, ProviderError};

fn from_env(api: ApiKind) -> Result<HttpProvider, ProviderError> {
    HttpProvider::new(ProviderConfig::from_env(api, |name| {
        std::env::var(name).ok()
    })?)
}

/// Anthropic Messages with `ANTHROPIC_API_KEY` (and `ANTHROPIC_BASE_URL`
/// when set). Fails when neither is set.
pub fn anthropic_from_env() -> Result<HttpProvider, ProviderError> {
    from_env(ApiKind::AnthropicMessages)
}

/// An OpenAI-compatible Chat Completions server at `OPENAI_BASE_URL` (with
/// `OPENAI_API_KEY` if set), else OpenAI itself with `OPENAI_API_KEY`.
/// Fails when neither is set.
pub fn openai_from_env() -> Result<HttpProvider, ProviderError> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    match var("OPENAI_BASE_URL") {
        Some(base_url) => HttpProvider::new(ProviderConfig::openai_compatible(
            base_url,
            var("OPENAI_API_KEY"),
        )),
        None => from_env(ApiKind::OpenaiChat),
    }
}
