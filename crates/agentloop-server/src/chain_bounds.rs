//! The bounds of a task's chain of agent runs. A chain is the runs of a
//! task from the one a person started (the API, the page, A2A, AG-UI,
//! MCP) through every implementation and review run chaining started
//! after it. Before each next link the chain is measured, and it ends at
//! the first bound reached:
//!
//! - `max_runs`: its runs, at most the server's
//!   [`chain_max_runs`](crate::ServerConfig::chain_max_runs) or the
//!   project's `chain_limits.max_runs`;
//! - `max_tokens`: the tokens its runs spent, at most the project's
//!   `chain_limits.max_tokens`;
//! - `max_cost`: what its runs cost in US dollars, at most the project's
//!   `chain_limits.max_cost_usd`.
//!
//! The end is stored on the task ([`ChainEnd`]) until a person starts an
//! agent of the task again, which begins a new chain. A budget is measured
//! between runs: the run that crosses it ends as it would, and the chain
//! stops after it.

use agentloop_storage::StorageResult;
use agentloop_storage::model::{AgentRun, AgentType, ChainEnd, Project, Task, now_millis};
use serde_json::Value;

use crate::config::ServerConfig;
use crate::state::AppState;

/// The project setting holding a project's own bounds.
pub const SETTING: &str = "chain_limits";

/// The bounds a task's chain ends at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChainLimits {
    /// Most agent runs in one chain (at least 1).
    pub max_runs: u64,
    /// Most tokens its runs may spend; `None`: no bound.
    pub max_tokens: Option<u64>,
    /// Most US dollars its runs may cost; `None`: no bound.
    pub max_cost: Option<f64>,
}

/// What a chain has spent so far.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ChainSpend {
    /// Its agent runs.
    pub runs: u64,
    /// Tokens its runs spent (input, cache and output).
    pub tokens: u64,
    /// What its runs cost, in US dollars.
    pub cost: f64,
}

/// The bounds of `project`'s chains on this server: the project's
/// `chain_limits` over the server's `chain_max_runs`.
pub fn limits(config: &ServerConfig, project: &Project) -> ChainLimits {
    let own = project.settings.get(SETTING);
    let field = |name: &str| own.and_then(|o| o.get(name));
    ChainLimits {
        max_runs: field("max_runs")
            .and_then(Value::as_u64)
            .filter(|n| *n > 0)
            .unwrap_or(u64::from(config.chain_max_runs.max(1))),
        max_tokens: field("max_tokens").and_then(Value::as_u64),
        max_cost: field("max_cost_usd")
            .and_then(Value::as_f64)
            .filter(|c| c.is_finite() && *c >= 0.0),
    }
}

/// Whether `run` belongs to the task's current chain.
fn in_chain(task: &Task, run: &AgentRun) -> bool {
    run.agent_type != AgentType::Planification
        && task.chain.started_at.is_none_or(|at| run.created_at >= at)
}

/// What the task's current chain has spent: its runs and their chats'
/// token totals.
pub async fn spend(state: &AppState, task: &Task) -> StorageResult<ChainSpend> {
    let mut spent = ChainSpend::default();
    for run in state.store.list_agent_runs(&task.id).await? {
        if !in_chain(task, &run) {
            continue;
        }
        spent.runs += 1;
        if let Some(chat_id) = crate::run_log::run_chat(state, &run).await? {
            let totals = state.store.get_chat(&chat_id).await?.totals;
            spent.tokens = spent.tokens.saturating_add(totals.total_tokens());
            spent.cost += totals.cost;
        }
    }
    Ok(spent)
}

/// `usd` in millionths of a dollar (0 for a negative or unknown amount).
fn micro_usd(usd: f64) -> u64 {
    let micros = (usd * 1_000_000.0).round();
    if micros.is_finite() && micros > 0.0 {
        // Saturates at u64::MAX.
        micros as u64
    } else {
        0
    }
}

/// The end of a chain that `spent` this much under `limits`, after the run
/// `last`, if a bound is reached.
pub fn reached(limits: &ChainLimits, spent: &ChainSpend, last: &str) -> Option<ChainEnd> {
    let (reason, message) = if spent.runs >= limits.max_runs {
        (
            "max_runs",
            format!(
                "the chain reached its bound of {} agent runs",
                limits.max_runs
            ),
        )
    } else if let Some(max) = limits.max_tokens.filter(|max| spent.tokens >= *max) {
        (
            "max_tokens",
            format!(
                "the chain spent {} tokens, its budget is {max}",
                spent.tokens
            ),
        )
    } else if let Some(max) = limits.max_cost.filter(|max| spent.cost >= *max) {
        (
            "max_cost",
            format!("the chain cost ${:.4}, its budget is ${max:.4}", spent.cost),
        )
    } else {
        return None;
    };
    Some(ChainEnd {
        reason: reason.to_owned(),
        message: format!("{message}; start an agent to begin a new chain"),
        agent_run_id: last.to_owned(),
        runs: spent.runs,
        tokens: spent.tokens,
        cost_micro_usd: micro_usd(spent.cost),
        at: now_millis(),
    })
}

/// Ends the task's chain after the run `last` if one of its bounds is
/// reached: the end is stored on the task and told to the owner (the page,
/// the `chain.completed` webhook). Returns whether it ended.
pub async fn end_if_reached(
    state: &AppState,
    owner: &str,
    task: &Task,
    last: &str,
) -> StorageResult<bool> {
    let project = state.store.get_project(&task.project_id).await?;
    let limits = limits(&state.config, &project);
    let spent = spend(state, task).await?;
    let Some(end) = reached(&limits, &spent, last) else {
        return Ok(false);
    };
    state.store.end_task_chain(&task.id, &end).await?;
    state.notify_chain_ended(owner, &project, &task.id, &end);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits_of(max_runs: u64, max_tokens: Option<u64>, max_cost: Option<f64>) -> ChainLimits {
        ChainLimits {
            max_runs,
            max_tokens,
            max_cost,
        }
    }

    #[test]
    fn the_first_bound_reached_ends_the_chain() {
        let spent = ChainSpend {
            runs: 3,
            tokens: 900,
            cost: 0.5,
        };
        assert_eq!(reached(&limits_of(4, None, None), &spent, "r"), None);
        assert_eq!(
            reached(&limits_of(3, Some(10), None), &spent, "r").map(|e| e.reason),
            Some("max_runs".to_owned())
        );
        let end = reached(&limits_of(9, Some(900), Some(0.1)), &spent, "r3");
        let end = end.as_ref();
        assert_eq!(end.map(|e| e.reason.as_str()), Some("max_tokens"));
        assert_eq!(end.map(|e| e.agent_run_id.as_str()), Some("r3"));
        assert_eq!(
            reached(&limits_of(9, Some(901), Some(0.5)), &spent, "r").map(|e| e.reason),
            Some("max_cost".to_owned())
        );
    }

    #[test]
    fn a_project_bound_overrides_the_server_default() {
        let mut config =
            ServerConfig::new(agentloop_engine::scripted::ScriptedProvider::new([]), "m");
        config.chain_max_runs = 20;
        let mut project = Project {
            id: "p".into(),
            name: "p".into(),
            settings: serde_json::json!({}),
            approval_mode: None,
            created_at: 0,
            updated_at: 0,
        };
        assert_eq!(limits(&config, &project), limits_of(20, None, None));
        project.settings = serde_json::json!({ SETTING: {
            "max_runs": 4, "max_tokens": 1000, "max_cost_usd": 0.25 } });
        assert_eq!(
            limits(&config, &project),
            limits_of(4, Some(1000), Some(0.25))
        );
    }
}
