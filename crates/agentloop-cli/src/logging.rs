//! Where the server's log lines go: `tracing` events to stderr, as text or
//! JSON lines, filtered by `RUST_LOG` when it is set, else by the level
//! given.

use std::io::IsTerminal;

use clap::ValueEnum;
use tracing_subscriber::EnvFilter;

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One readable line per event.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Installs the process's subscriber. `level` is a filter directive
/// (`info`, `agentloop_server=debug,warn`, ...).
pub fn init(format: LogFormat, level: &str) -> Result<(), String> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.trim().is_empty() => EnvFilter::try_new(directives)
            .map_err(|e| format!("RUST_LOG is not a valid filter: {e}"))?,
        _ => EnvFilter::try_new(level)
            .map_err(|e| format!("--log-level {level:?} is not a valid filter: {e}"))?,
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let installed = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none())
            .try_init(),
        LogFormat::Json => builder.json().with_ansi(false).try_init(),
    };
    installed.map_err(|e| format!("cannot install the log subscriber: {e}"))
}
