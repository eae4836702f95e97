//! Agents declared in `config.toml` (`[agents.NAME]`) and the one `run` and
//! `chat` start with (`--agent NAME`, else the file's `agent`): each has
//! its own instructions, model and tools, and names the agents it may hand
//! the conversation to.
//!
//! ```toml
//! agent = "triage"                  # the agent `run` and `chat` start with
//!
//! [agents.triage]
//! instructions = "Hand the customer to the specialist who can answer."
//! handoffs = ["billing", "tech"]
//! max_handoffs = 4                  # of one run, when this agent starts it (default 8)
//!
//! [agents.billing]
//! description = "Invoices, payments and refunds."   # what a handing model reads
//! instructions = "You answer billing questions."
//! model = "claude-haiku-4-5"        # default: the run's model
//! tools = ["fs"]                    # default: none
//! handoffs = ["triage"]
//! history = "last_user_message"     # full (default), text_only or last_user_message
//! ```
//!
//! The starting agent is the run's own: its instructions are the system
//! prompt unless `--system` is given, its model the model unless `--model`
//! is given, and it offers its tools besides those of `--tools`. Every
//! agent speaks through the run's provider.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use agentloop_engine::{AgentProfile, Handoffs};
use agentloop_types::check_agent_name;

use crate::config::AgentSection;
use crate::out::Failure;
use crate::tools::{self, MinionModel};

/// The starting agent, resolved: what the run takes from it, and the
/// agents it hands off between.
#[derive(Debug, Clone)]
pub struct Starting {
    /// Its name.
    pub name: String,
    /// Its instructions (the system prompt unless `--system` is given).
    pub instructions: Option<String>,
    /// Its model (unless `--model` is given).
    pub model: Option<String>,
    /// Its own tools, offered besides `--tools`.
    pub tools: Vec<String>,
    /// The agents reachable from it by handoffs; `None` when it hands to
    /// none.
    handoffs: Option<HandoffPlan>,
}

/// The agents a run hands off between, before their tools are built.
#[derive(Debug, Clone)]
struct HandoffPlan {
    targets: Vec<String>,
    max_handoffs: Option<u32>,
    others: Vec<(String, AgentSection)>,
}

/// Picks the starting agent: `flag` (`--agent`), else the file's `agent`;
/// `None` when neither names one. Every declared agent is checked, so a
/// mistake in the file is found whichever agent starts.
pub fn starting(
    flag: Option<&str>,
    default: Option<&str>,
    agents: &BTreeMap<String, AgentSection>,
) -> Result<Option<Starting>, Failure> {
    check(agents)?;
    let (name, origin) = match (flag, default) {
        (Some(name), _) => (name, "--agent"),
        (None, Some(name)) => (name, "the configuration's agent"),
        (None, None) => return Ok(None),
    };
    let Some(section) = agents.get(name) else {
        let declared: Vec<&str> = agents.keys().map(String::as_str).collect();
        return Err(Failure::usage(if declared.is_empty() {
            format!(
                "{origin} names `{name}`, but the configuration declares no agents \
                 (add an [agents.{name}] table)"
            )
        } else {
            format!(
                "{origin} names `{name}`, which the configuration does not declare \
                 (declared: {})",
                declared.join(", ")
            )
        }));
    };
    // Every agent reachable from the start, each once.
    let mut reached: BTreeSet<&str> = BTreeSet::new();
    let mut queue: Vec<&str> = section.handoffs.iter().map(String::as_str).collect();
    while let Some(next) = queue.pop() {
        if next == name || !reached.insert(next) {
            continue;
        }
        if let Some(agent) = agents.get(next) {
            queue.extend(agent.handoffs.iter().map(String::as_str));
        }
    }
    let handoffs = (!section.handoffs.is_empty()).then(|| HandoffPlan {
        targets: section.handoffs.clone(),
        max_handoffs: section.max_handoffs,
        others: reached
            .iter()
            .filter_map(|n| agents.get(*n).map(|a| ((*n).to_owned(), a.clone())))
            .collect(),
    });
    Ok(Some(Starting {
        name: name.to_owned(),
        instructions: section.instructions.clone(),
        model: section.model.clone(),
        tools: section.tools.clone(),
        handoffs,
    }))
}

/// Names, tool names and handoff targets of every declared agent.
fn check(agents: &BTreeMap<String, AgentSection>) -> Result<(), Failure> {
    for (name, agent) in agents {
        check_agent_name(name).map_err(|e| Failure::usage(format!("[agents.{name}]: {e}")))?;
        tools::check_names(&agent.tools, &format!("[agents.{name}] tools"))?;
        for target in &agent.handoffs {
            if !agents.contains_key(target) {
                return Err(Failure::usage(format!(
                    "[agents.{name}] hands off to `{target}`, which the configuration does \
                     not declare (declared: {})",
                    agents.keys().cloned().collect::<Vec<_>>().join(", ")
                )));
            }
        }
    }
    Ok(())
}

impl Starting {
    /// The agents it hands off between, each with its tools working in
    /// `root`; `None` when it hands to none.
    pub fn handoffs(
        &self,
        root: Option<&Path>,
        minion: &MinionModel,
        memory: &std::sync::Arc<dyn agentloop_types::VfsFor>,
    ) -> Result<Option<Handoffs>, Failure> {
        let Some(plan) = &self.handoffs else {
            return Ok(None);
        };
        let mut profiles = Vec::with_capacity(plan.others.len());
        for (name, section) in &plan.others {
            let mut profile = AgentProfile::new(name.clone(), section.description.clone())
                .history(section.history);
            profile.instructions.clone_from(&section.instructions);
            profile.model.clone_from(&section.model);
            profile.handoffs.clone_from(&section.handoffs);
            profile.tools = tools::build(&section.tools, root, Some(minion), memory)?;
            profiles.push(profile);
        }
        let handoffs = Handoffs::new(self.name.clone(), plan.targets.clone(), profiles)
            .map_err(|e| Failure::usage(format!("the configuration's agents: {e}")))?;
        Ok(Some(match plan.max_handoffs {
            Some(max) => handoffs.with_max_handoffs(max),
            None => handoffs,
        }))
    }

    /// Fills what the flags left unset: the system prompt from its
    /// instructions, the model from its model unless `model_flag` (the
    /// flag `--model` was given); and adds its tools to the flags', each
    /// once.
    pub fn fill(
        &self,
        system: &mut Option<String>,
        model: &mut Option<String>,
        model_flag: bool,
        tools: &mut Vec<String>,
    ) {
        if system.is_none() {
            system.clone_from(&self.instructions);
        }
        if !model_flag && self.model.is_some() {
            model.clone_from(&self.model);
        }
        for tool in &self.tools {
            if !tools.iter().any(|t| t == tool) {
                tools.push(tool.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde::Deserialize;

    fn agents(text: &str) -> BTreeMap<String, AgentSection> {
        #[derive(Deserialize)]
        struct File {
            agents: BTreeMap<String, AgentSection>,
        }
        toml::from_str::<File>(text).unwrap().agents
    }

    const FILE: &str = r#"
[agents.triage]
instructions = "Route."
handoffs = ["billing"]
max_handoffs = 3
[agents.billing]
description = "Invoices."
model = "small"
handoffs = ["triage"]
history = "last_user_message"
[agents.unused]
"#;

    #[test]
    fn the_flag_wins_and_only_reachable_agents_join() {
        let agents = agents(FILE);
        let start = starting(Some("triage"), Some("billing"), &agents)
            .unwrap()
            .unwrap();
        assert_eq!(start.name, "triage");
        assert_eq!(start.instructions.as_deref(), Some("Route."));
        let plan = start.handoffs.unwrap();
        assert_eq!(plan.targets, ["billing"]);
        assert_eq!(plan.max_handoffs, Some(3));
        let names: Vec<&str> = plan.others.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["billing"]);
        assert!(starting(None, None, &agents).unwrap().is_none());
    }

    #[test]
    fn mistakes_are_usage_errors_naming_what_is_wrong() {
        let agents_ok = agents(FILE);
        let unknown = starting(Some("nobody"), None, &agents_ok).unwrap_err();
        assert!(
            unknown
                .to_string()
                .contains("declared: billing, triage, unused")
        );
        let dangling = agents("[agents.a]\nhandoffs = [\"b\"]\n");
        let error = starting(None, None, &dangling).unwrap_err().to_string();
        assert!(error.contains("hands off to `b`"), "{error}");
        let bad_name = agents("[agents.\"a b\"]\n");
        let error = starting(None, None, &bad_name).unwrap_err().to_string();
        assert!(error.contains("agent name `a b`"), "{error}");
        let bad_tool = agents("[agents.a]\ntools = [\"nope\"]\n");
        assert!(starting(None, None, &bad_tool).is_err());
        let error = toml::from_str::<AgentSection>("history = \"some\"\n")
            .unwrap_err()
            .to_string();
        assert!(error.contains("last_user_message"), "{error}");
    }
}
