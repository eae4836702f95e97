//! Remote A2A agents as tools of `run`: `--a2a NAME=URL` and the
//! configuration's `[a2a_agents.NAME]` tables (`url`, `token_env`,
//! `tenant`, `description`). Each becomes the tool `a2a_NAME`.

use std::collections::BTreeMap;
use std::sync::Arc;

use agentloop_a2a::client::{A2aAgentTool, CallTracker, RemoteAgent};
use agentloop_types::Tool;
use serde::{Deserialize, Serialize};

use crate::out::Failure;

/// One `[a2a_agents.NAME]` table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct A2aAgentEntry {
    /// The agent's base URL (its card at `/.well-known/agent-card.json`)
    /// or its card's URL.
    pub url: String,
    /// The environment variable holding the bearer token (tokens stay out
    /// of the file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_env: Option<String>,
    /// The tenant requests name (for an agentloop server: a project id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// What the agent is for, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// The remote agents of the file and of the `--a2a` flags (a flag wins
/// over a table of the same name).
pub fn remote_agents(
    configured: &BTreeMap<String, A2aAgentEntry>,
    flags: &[String],
) -> Result<Vec<RemoteAgent>, Failure> {
    let mut agents: BTreeMap<String, RemoteAgent> = BTreeMap::new();
    for (name, entry) in configured {
        check_name(name, "the configuration's a2a_agents")?;
        let token = match &entry.token_env {
            None => None,
            Some(var) => Some(std::env::var(var).map_err(|_| {
                Failure::usage(format!(
                    "a2a_agents.{name}: the environment variable {var} (token_env) is not set"
                ))
            })?),
        };
        agents.insert(
            name.clone(),
            RemoteAgent {
                name: name.clone(),
                url: entry.url.clone(),
                token,
                tenant: entry.tenant.clone(),
                description: entry.description.clone(),
            },
        );
    }
    for flag in flags {
        let (name, url) = flag
            .split_once('=')
            .filter(|(_, url)| url.starts_with("http://") || url.starts_with("https://"))
            .ok_or_else(|| {
                Failure::usage(format!("--a2a {flag:?}: expected NAME=URL (http or https)"))
            })?;
        check_name(name, "--a2a")?;
        agents.insert(
            name.to_owned(),
            RemoteAgent {
                name: name.to_owned(),
                url: url.to_owned(),
                token: None,
                tenant: None,
                description: None,
            },
        );
    }
    Ok(agents.into_values().collect())
}

fn check_name(name: &str, origin: &str) -> Result<(), Failure> {
    let fits = !name.is_empty()
        && name.len() <= 58
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if fits {
        Ok(())
    } else {
        Err(Failure::usage(format!(
            "{origin}: agent name {name:?} must be 1 to 58 letters, digits, _ or -"
        )))
    }
}

/// Reads each agent's card and makes its tool; an agent that cannot be
/// reached fails the command. Each tool's calls under way come with it,
/// to be settled before the command exits.
pub async fn tools(
    agents: Vec<RemoteAgent>,
) -> Result<(Vec<Arc<dyn Tool>>, Vec<CallTracker>), Failure> {
    let mut tools: Vec<Arc<dyn Tool>> = Vec::with_capacity(agents.len());
    let mut calls = Vec::with_capacity(agents.len());
    for agent in agents {
        let name = agent.name.clone();
        let tool = A2aAgentTool::connect(agent)
            .await
            .map_err(|e| Failure::Runtime(format!("A2A agent {name}: {e}")))?;
        calls.push(tool.calls());
        tools.push(Arc::new(tool));
    }
    Ok((tools, calls))
}

/// Lets cancelled calls cancel their remote tasks (a few seconds at most).
pub async fn settle(calls: &[CallTracker]) {
    for call in calls {
        call.settle(std::time::Duration::from_secs(5)).await;
    }
}
