//! Finding one's way: `agentloop info` (version and paths), `agentloop
//! completions SHELL` and `agentloop models` (the provider's model list,
//! read by [`crate::model_list`]).

use std::process::ExitCode;

use clap::Args;
use clap_complete::Shell;

use crate::out::{Failure, Outcome, Stdout};
use crate::{config, db, model_list, providers};

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
    out.line(format!("provider: {}", provider_line()?))?;
    out.line(format!("local:    {}", crate::local_model::describe()))?;
    out.line(format!(
        "agents:   {}",
        crate::project_instructions::describe(None)?
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// Which provider `run` would use, or why none: the key file refused for
/// its mode says so with the fix, as `run` does.
fn provider_line() -> Result<String, Failure> {
    if let Err(refused) = crate::keys::load() {
        return Ok(format!("none usable: {refused}"));
    }
    if let Some(name) = config::load()?.provider {
        return Ok(format!("{name} (from the configuration file)"));
    }
    let found: Vec<String> = providers::SETTINGS
        .iter()
        .filter_map(|name| providers::setting_source(name).map(|from| format!("{name} ({from})")))
        .collect();
    Ok(if found.is_empty() {
        "none configured (run plays the demo; --local runs the local model with no key)".to_owned()
    } else {
        format!("from {}", found.join(", "))
    })
}

/// `agentloop completions SHELL`.
/// `cli` is the whole command line, which the script completes.
pub fn completions(args: CompletionsArgs, mut cli: clap::Command) -> Outcome {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cli, "agentloop", &mut script);
    std::io::Write::write_all(&mut Stdout::new(), &script).map_err(Failure::from_io)?;
    Ok(ExitCode::SUCCESS)
}

/// `agentloop models`.
pub async fn models(args: ModelsArgs) -> Outcome {
    let mut provider = args.provider;
    let mut base_url = args.base_url;
    config::load()?.fill(&mut provider, &mut None, &mut base_url, &mut Vec::new());
    let (config, _) = providers::resolve(
        provider.as_deref(),
        base_url.as_deref(),
        providers::Purpose::ListModels,
    )?;
    let ids = model_list::fetch(&config).await?;
    let mut out = Stdout::new();
    for id in ids {
        out.line(crate::out::sanitize(&id))?;
    }
    Ok(ExitCode::SUCCESS)
}
