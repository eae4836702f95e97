//! Choosing a strategy by name from configuration.
//!
//! Precedence, first non-blank wins: the per-request override, the
//! `AGENTLOOP_AGENT_LOOP_STRATEGY` environment variable, the
//! `agent.loop.strategy` setting, then [`DEFAULT_STRATEGY`] (`native`).
//! Applications that want seed 001's agent mode by default set the setting
//! (or pass [`AGENT_MODE_STRATEGY`], `react`).

use std::collections::HashMap;

use crate::machine::strategies::names;

/// The settings key naming the strategy.
pub const STRATEGY_CONFIG_KEY: &str = "agent.loop.strategy";
/// The environment variable naming the strategy.
pub const STRATEGY_ENV_VAR: &str = "AGENTLOOP_AGENT_LOOP_STRATEGY";
/// The library's default strategy.
pub const DEFAULT_STRATEGY: &str = names::NATIVE;
/// The strategy of seed 001's agent mode.
pub const AGENT_MODE_STRATEGY: &str = names::REACT;

/// The strategy name from an override, an environment value and settings.
pub fn resolve_strategy_name(
    request_override: Option<&str>,
    env_value: Option<&str>,
    settings: &HashMap<String, String>,
) -> String {
    [
        request_override,
        env_value,
        settings.get(STRATEGY_CONFIG_KEY).map(String::as_str),
    ]
    .into_iter()
    .flatten()
    .map(str::trim)
    .find(|name| !name.is_empty())
    .unwrap_or(DEFAULT_STRATEGY)
    .to_owned()
}

/// [`resolve_strategy_name`] with the environment value read from
/// [`STRATEGY_ENV_VAR`].
pub fn resolve_strategy_name_from_env(
    request_override: Option<&str>,
    settings: &HashMap<String, String>,
) -> String {
    let env = std::env::var(STRATEGY_ENV_VAR).ok();
    resolve_strategy_name(request_override, env.as_deref(), settings)
}
