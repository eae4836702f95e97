//! A project's agents (its `agents` setting): specialists with their own
//! instructions and model, and whom each agent of the project — the
//! server's own `planification`, `implementation` and `review` among them —
//! may hand the conversation to.
//!
//! ```json
//! {"implementation": {"handoffs": ["security"]},
//!  "security": {"description": "Reviews code for vulnerabilities.",
//!               "instructions": "You are a security specialist.",
//!               "model": "claude-opus-4-1",
//!               "handoffs": ["implementation"],
//!               "history": "full"}}
//! ```
//!
//! A run of the server's agent `implementation` then offers
//! `transfer_to_security`; taking it, the same run goes on with the
//! specialist (the run's tools, the specialist's instructions and model),
//! and `handoff` and `streaming_start.agent` events say who speaks. The
//! server's own agents set only `handoffs`: their instructions are the
//! server's. A cycle ends at the run's handoff limit.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use agentloop_engine::{AgentProfile, Handoffs};
use agentloop_storage::model::{AgentType, Project};
use agentloop_types::{HandoffError, HandoffHistory, Tool, check_agent_name};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One agent of a project.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectAgent {
    /// What it is for, as a model handing to it reads it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Its system prompt (a specialist's only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Its model (a specialist's only; default: the run's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The agents it may hand the conversation to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub handoffs: Vec<String>,
    /// What of the history before a handoff to it it sees.
    #[serde(default)]
    pub history: HandoffHistory,
}

/// Why a project's `agents` are refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentsError {
    /// Not an object of agents, or an agent with unknown or mistyped
    /// fields.
    #[error("agents: {0}")]
    Shape(String),
    /// A bad agent name.
    #[error("agents: {0}")]
    Name(#[from] HandoffError),
    /// A handoff to an agent neither declared nor the server's.
    #[error(
        "agents: `{from}` hands off to `{to}`, which is neither declared nor one of the server's agents (planification, implementation, review)"
    )]
    UnknownTarget {
        /// The agent handing off.
        from: String,
        /// The unknown target.
        to: String,
    },
    /// Instructions or a model given to one of the server's own agents.
    #[error(
        "agents: `{name}` is one of the server's agents: only its handoffs, description and history may be set"
    )]
    ServerAgent {
        /// The agent.
        name: String,
    },
}

/// Reads and checks a request's `agents` value.
pub fn parse(value: &Value) -> Result<BTreeMap<String, ProjectAgent>, AgentsError> {
    let agents: BTreeMap<String, ProjectAgent> =
        serde_json::from_value(value.clone()).map_err(|e| AgentsError::Shape(e.to_string()))?;
    for (name, agent) in &agents {
        check_agent_name(name)?;
        let server_agent = AgentType::parse(name).is_some();
        if server_agent && (agent.instructions.is_some() || agent.model.is_some()) {
            return Err(AgentsError::ServerAgent { name: name.clone() });
        }
        for to in &agent.handoffs {
            if !agents.contains_key(to) && AgentType::parse(to).is_none() {
                return Err(AgentsError::UnknownTarget {
                    from: name.clone(),
                    to: to.clone(),
                });
            }
        }
    }
    Ok(agents)
}

/// The project's agents as stored (none when unset or unreadable: what is
/// stored was checked when it was set).
fn stored(project: &Project) -> BTreeMap<String, ProjectAgent> {
    project
        .settings
        .get("agents")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

/// The agents a run of `agent` hands off between in `project`, each
/// offering `tools` (the run's); `None` when it hands to none.
pub fn handoffs(
    project: &Project,
    agent: AgentType,
    tools: &[Arc<dyn Tool>],
) -> Result<Option<Handoffs>, HandoffError> {
    let agents = stored(project);
    let root = agent.as_str();
    let Some(targets) = agents
        .get(root)
        .map(|a| a.handoffs.clone())
        .filter(|t| !t.is_empty())
    else {
        return Ok(None);
    };
    // Every agent reachable from the root, each once; the server's other
    // agents are not this run's, so handoffs to them are left out.
    let reachable = |to: &String| to == root || AgentType::parse(to).is_none();
    let mut reached: BTreeSet<&str> = BTreeSet::new();
    let mut queue: Vec<&String> = targets.iter().filter(|t| reachable(t)).collect();
    while let Some(next) = queue.pop() {
        if next == root || !reached.insert(next) {
            continue;
        }
        if let Some(agent) = agents.get(next) {
            queue.extend(agent.handoffs.iter().filter(|t| reachable(t)));
        }
    }
    let profiles = reached
        .iter()
        .filter_map(|name| {
            let section = agents.get(*name)?;
            let mut profile =
                AgentProfile::new(*name, section.description.clone()).history(section.history);
            profile.instructions.clone_from(&section.instructions);
            profile.model.clone_from(&section.model);
            profile.handoffs = section
                .handoffs
                .iter()
                .filter(|t| reachable(t))
                .cloned()
                .collect();
            profile.tools = tools.to_vec();
            Some(profile)
        })
        .collect();
    let targets: Vec<String> = targets.into_iter().filter(|t| reachable(t)).collect();
    if targets.is_empty() {
        return Ok(None);
    }
    let description = agents
        .get(root)
        .map(|a| a.description.clone())
        .unwrap_or_default();
    Ok(Some(
        Handoffs::new(root, targets, profiles)?.with_root_description(description),
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn mistakes_are_refused_with_what_is_wrong() {
        let ok = json!({
            "implementation": {"handoffs": ["security"]},
            "security": {"instructions": "Check.", "handoffs": ["implementation", "review"]}
        });
        assert_eq!(parse(&ok).unwrap().len(), 2);
        assert_eq!(
            parse(&json!({"implementation": {"handoffs": ["ghost"]}})),
            Err(AgentsError::UnknownTarget {
                from: "implementation".into(),
                to: "ghost".into()
            })
        );
        assert!(matches!(
            parse(&json!({"bad name": {}})),
            Err(AgentsError::Name(HandoffError::BadName { .. }))
        ));
        assert_eq!(
            parse(&json!({"review": {"instructions": "Mine."}})),
            Err(AgentsError::ServerAgent {
                name: "review".into()
            })
        );
        assert!(matches!(
            parse(&json!({"a": {"colour": 1}})),
            Err(AgentsError::Shape(_))
        ));
        assert!(matches!(parse(&json!([1])), Err(AgentsError::Shape(_))));
    }
}
