//! The agents of a run that hands off, as the machine knows them: names,
//! the tools each offers, whom each may hand to and what of the history a
//! target sees. Pure data and pure functions; the run core decides with
//! them (`run_core::handoff`).

use std::sync::Arc;

use agentloop_types::{
    ContentBlock, HANDOFF_TOOL_PREFIX, HandoffError, HandoffHistory, HandoffTarget, Message, Role,
    ToolDefinition, ToolResult, check_agent_name,
};
use serde::{Deserialize, Serialize};

use super::protocol::OfferedTool;

/// One agent a run may hand the conversation to.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSpec {
    /// Its name (also in its handoff tool's name).
    pub name: String,
    /// What it is for, as a model handing to it reads it.
    pub description: String,
    /// The tools it offers (besides its handoff tools).
    pub tools: Vec<OfferedTool>,
    /// The agents it may hand to.
    pub handoffs: Vec<String>,
    /// What of the history before the handoff it sees.
    pub history: HandoffHistory,
}

/// The agents of a run whose agents hand off to each other: the run's own
/// agent (the root, which offers the run's tools) and the others.
#[derive(Debug, Clone, PartialEq)]
pub struct HandoffPlan {
    pub(crate) root: String,
    pub(crate) root_description: String,
    pub(crate) root_handoffs: Vec<String>,
    pub(crate) agents: Vec<AgentSpec>,
    pub(crate) max_handoffs: u32,
}

impl HandoffPlan {
    /// A plan where the root agent `root` may hand to `root_handoffs`, and
    /// each of `agents` to its own; at most `max_handoffs` handoffs a run.
    /// Every name must be valid and unique, and every target declared (the
    /// root may be a target: an agent can hand back).
    pub fn new(
        root: impl Into<String>,
        root_description: impl Into<String>,
        root_handoffs: Vec<String>,
        agents: Vec<AgentSpec>,
        max_handoffs: u32,
    ) -> Result<Self, HandoffError> {
        let plan = Self {
            root: root.into(),
            root_description: root_description.into(),
            root_handoffs,
            agents,
            max_handoffs,
        };
        plan.check()?;
        Ok(plan)
    }

    fn check(&self) -> Result<(), HandoffError> {
        let mut names: Vec<&str> = Vec::with_capacity(self.agents.len() + 1);
        for name in
            std::iter::once(self.root.as_str()).chain(self.agents.iter().map(|a| a.name.as_str()))
        {
            check_agent_name(name)?;
            if names.contains(&name) {
                return Err(HandoffError::Duplicate {
                    name: name.to_owned(),
                });
            }
            names.push(name);
        }
        let declared = std::iter::once((self.root.as_str(), &self.root_handoffs))
            .chain(self.agents.iter().map(|a| (a.name.as_str(), &a.handoffs)));
        for (from, targets) in declared {
            if let Some(to) = targets.iter().find(|t| !names.contains(&t.as_str())) {
                return Err(HandoffError::UnknownTarget {
                    from: from.to_owned(),
                    to: to.clone(),
                });
            }
        }
        Ok(())
    }

    /// The root agent's name.
    pub fn root(&self) -> &str {
        &self.root
    }

    /// Whether `name` is an agent of the plan other than the root.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.agents.iter().any(|a| a.name == name)
    }

    /// The handoff tools `handoffs` offer.
    pub(crate) fn targets(&self, handoffs: &[String]) -> Vec<HandoffTarget> {
        handoffs
            .iter()
            .map(|to| HandoffTarget {
                agent: to.clone(),
                description: self.description(to).to_owned(),
            })
            .collect()
    }

    fn description(&self, name: &str) -> &str {
        if name == self.root {
            return &self.root_description;
        }
        self.agents
            .iter()
            .find(|a| a.name == name)
            .map_or("", |a| a.description.as_str())
    }
}

/// What one agent offers a model call and how its calls are planned.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AgentTools {
    /// The tools its calls may run.
    pub(crate) tools: Vec<OfferedTool>,
    /// Whom it hands to.
    pub(crate) handoffs: Vec<HandoffTarget>,
    /// Everything a model call offers: the tools, the handoff tools, the
    /// output tool when the run asks through one. Built once, shared.
    pub(crate) offered: Arc<[ToolDefinition]>,
    /// What of the history before its handoff it sees.
    pub(crate) history: HandoffHistory,
}

impl AgentTools {
    pub(crate) fn new(
        tools: Vec<OfferedTool>,
        handoffs: Vec<HandoffTarget>,
        output_tool: Option<&ToolDefinition>,
        history: HandoffHistory,
    ) -> Self {
        let offered = tools
            .iter()
            .map(|t| t.definition.clone())
            .chain(handoffs.iter().map(HandoffTarget::definition))
            .chain(output_tool.cloned())
            .collect();
        Self {
            tools,
            handoffs,
            offered,
            history,
        }
    }

    pub(crate) fn find(&self, name: &str) -> Option<&OfferedTool> {
        self.tools.iter().find(|t| t.definition.name == name)
    }

    /// The agent a call of tool `name` hands to, when it is one of this
    /// agent's handoff tools.
    pub(crate) fn handoff(&self, name: &str) -> Option<&str> {
        let agent = name.strip_prefix(HANDOFF_TOOL_PREFIX)?;
        self.handoffs
            .iter()
            .find(|t| t.agent == agent)
            .map(|t| t.agent.as_str())
    }
}

/// A handoff the model took, to be made before the next model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TakenHandoff {
    pub(crate) to: String,
    pub(crate) tool_use_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
}

/// `messages` as `history` lets a target see them: the messages up to
/// and including the one with id `point` are filtered; the rest are kept.
/// When `point` is not among them (compacted away), nothing is filtered.
pub(crate) fn filter_history(
    messages: Vec<Message>,
    point: &str,
    history: HandoffHistory,
) -> Vec<Message> {
    let Some(cut) = messages.iter().position(|m| m.id == point) else {
        return messages;
    };
    if history == HandoffHistory::Full {
        return messages;
    }
    let mut after = messages;
    let before: Vec<Message> = after.drain(..=cut).collect();
    let mut kept: Vec<Message> = match history {
        HandoffHistory::Full => before,
        HandoffHistory::TextOnly => before
            .into_iter()
            .filter_map(|mut m| {
                m.content.retain(|b| {
                    !matches!(
                        b,
                        ContentBlock::ToolUse(_)
                            | ContentBlock::ToolResult(_)
                            | ContentBlock::Thinking { .. }
                            | ContentBlock::RedactedThinking { .. }
                            | ContentBlock::Provider { .. }
                    )
                });
                (!m.content.is_empty()).then_some(m)
            })
            .collect(),
        HandoffHistory::LastUserMessage => before
            .into_iter()
            .rev()
            .find(|m| m.role == Role::User && m.tool_results().next().is_none())
            .into_iter()
            .collect(),
    };
    kept.extend(after);
    kept
}

/// The answer to a handoff call: taken when it is the turn's first
/// (`handed` then names its target), else not taken.
pub(crate) fn handoff_answer(to: &str, handed: &mut Option<String>) -> ToolResult {
    match handed {
        None => {
            *handed = Some(to.to_owned());
            ToolResult::ok(format!("Transferred to `{to}`; it answers from now on."))
        }
        Some(first) => ToolResult::error(format!(
            "Not taken: this turn already hands the conversation to `{first}`."
        )),
    }
}
