//! Finding one's way: `agentloop info` (version and paths), `agentloop
//! completions SHELL` and `agentloop models` (the provider's model list,
//! from `GET {base}/models`: OpenAI-compatible and Anthropic answer
//! `{"data": [{"id"}]}`, Gemini `{"models": [{"name": "models/..."}]}`).

use std::process::ExitCode;
use std::time::Duration;

use agentloop_providers::{Auth, ensure_crypto_provider};
use clap::{Args, CommandFactory};
use clap_complete::Shell;
use serde_json::Value;

use crate::out::{Failure, Outcome, Stdout};
use crate::{config, db, providers};

/// Arguments of `agentloop completions`.
#[derive(Args)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Arguments of `agentloop models`.
#[derive(Args)]
pub struct ModelsArgs {
    /// anthropic, openai-chat, openai-responses, openai-compatible or gemini
    /// (default: the configuration file, else from the keys in the
    /// environment).
    #[arg(long)]
    pub provider: Option<String>,
    /// The provider's base URL (default: the provider's `*_BASE_URL`, the
    /// configuration file, else its public address).
    #[arg(long)]
    pub base_url: Option<String>,
}

/// `agentloop info`.
pub fn info() -> Outcome {
    let mut out = Stdout::new();
    let config = config::path()?;
    let exists = |present: bool| if present { "" } else { " (not there yet)" };
    out.line(format!("agentloop {}", env!("CARGO_PKG_VERSION")))?;
    out.line(format!(
        "config:   {}{}",
        config.display(),
        exists(config.exists())
    ))?;
    let keys = crate::keys::path()?;
    out.line(format!(
        "keys:     {}{}",
        keys.display(),
        exists(keys.exists())
    ))?;
    let data = db::data_dir_path()?;
    out.line(format!(
        "data:     {}{}",
        data.display(),
        exists(data.exists())
    ))?;
    let database = db::default_db()?;
    out.line(format!(
        "database: {database}{}",
        exists(std::path::Path::new(&database).exists())
    ))?;
    let keys: Vec<&str> = [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
    ]
    .into_iter()
    .filter(|name| std::env::var(name).is_ok_and(|v| !v.trim().is_empty()))
    .collect();
    let configured = config::load()?.provider;
    out.line(format!(
        "provider: {}",
        match (configured, keys.is_empty()) {
            (Some(name), _) => format!("{name} (from the configuration file)"),
            (None, true) => "none configured (run plays the demo)".to_owned(),
            (None, false) => format!("from {}", keys.join(", ")),
        }
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// `agentloop completions SHELL`.
pub fn completions(args: CompletionsArgs) -> Outcome {
    let mut script = Vec::new();
    clap_complete::generate(
        args.shell,
        &mut crate::args::Cli::command(),
        "agentloop",
        &mut script,
    );
    std::io::Write::write_all(&mut Stdout::new(), &script).map_err(Failure::from_io)?;
    Ok(ExitCode::SUCCESS)
}

/// `agentloop models`.
pub async fn models(args: ModelsArgs) -> Outcome {
    let mut provider = args.provider;
    let mut base_url = args.base_url;
    config::load()?.fill(&mut provider, &mut None, &mut base_url, &mut Vec::new());
    let (config, _) = providers::resolve(provider.as_deref(), base_url.as_deref())?;
    ensure_crypto_provider();
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| format!("cannot start an HTTP client: {e}"))?;
    let url = format!("{}/models", config.base_url.trim_end_matches('/'));
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
    let response = request
        .send()
        .await
        .map_err(|e| format!("cannot reach {url}: {e}"))?;
    let status = response.status();
    let body = response
        .text()
        .await
        .map_err(|e| format!("cannot read the answer of {url}: {e}"))?;
    if !status.is_success() {
        let first: String = body.chars().take(200).collect();
        return Err(Failure::Runtime(format!(
            "{url} answered {status}: {}",
            crate::out::sanitize(first.trim())
        )));
    }
    let ids =
        model_ids(&body).ok_or_else(|| format!("{url} did not answer with a list of models"))?;
    let mut out = Stdout::new();
    for id in ids {
        out.line(crate::out::sanitize(&id))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The model ids of a `/models` answer.
fn model_ids(body: &str) -> Option<Vec<String>> {
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
