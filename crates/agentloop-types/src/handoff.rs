//! Handoffs: an agent passes the conversation to another agent, which
//! answers in its place with its own instructions, tools and model.
//!
//! A run's agent declares the agents it may hand off to; the model sees one
//! tool per target ([`handoff_tool_name`]). Calling one ends the current
//! agent's turn (the turn's other calls still run and are answered) and the
//! same run goes on with the target, over the history so far — filtered as
//! the target asks ([`HandoffHistory`]). Targets may declare handoffs of
//! their own, so handoffs chain; [`MAX_HANDOFFS`] bounds how many one run
//! takes (a cycle between two agents ends there, with the run's status
//! `limit_exceeded` and limit `handoffs`).
//!
//! A handoff is a decision of the engine's machine: it is recorded as a
//! `handoff` event and in the run's state, so a run resumed from any stored
//! state goes on with the agent that was speaking, never repeats a handoff
//! and never loses one.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::tool::ToolDefinition;

/// How many handoffs one run takes by default before it ends
/// `limit_exceeded`.
pub const MAX_HANDOFFS: u32 = 8;

/// The prefix of every handoff tool's name.
pub const HANDOFF_TOOL_PREFIX: &str = "transfer_to_";

/// The name of the tool that hands off to `agent`.
pub fn handoff_tool_name(agent: &str) -> String {
    format!("{HANDOFF_TOOL_PREFIX}{agent}")
}

/// What of the history a target sees when the conversation is handed to
/// it. Only the messages before the handoff are filtered; everything after
/// it is sent whole. The stored history always keeps every message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum HandoffHistory {
    /// Everything, the handing agent's tool calls included.
    #[default]
    Full,
    /// The conversation's text: tool calls, their results and thinking
    /// before the handoff are left out.
    TextOnly,
    /// Only the last user message before the handoff.
    LastUserMessage,
}

/// Why a set of agents cannot hand off to each other.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandoffError {
    /// A name that is empty, too long, or not made of ASCII letters,
    /// digits, `_` and `-` (it becomes part of a tool name).
    #[error("agent name `{name}` must be 1 to 48 ASCII letters, digits, `_` or `-`")]
    BadName {
        /// The name.
        name: String,
    },
    /// Two agents with one name.
    #[error("agent `{name}` is declared twice")]
    Duplicate {
        /// The name.
        name: String,
    },
    /// A handoff to an agent that is not declared.
    #[error("agent `{from}` hands off to `{to}`, which is not declared")]
    UnknownTarget {
        /// The agent declaring it.
        from: String,
        /// The missing target.
        to: String,
    },
}

/// Checks an agent's name.
pub fn check_agent_name(name: &str) -> Result<(), HandoffError> {
    let fits = !name.is_empty()
        && name.len() <= 48
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if fits {
        Ok(())
    } else {
        Err(HandoffError::BadName {
            name: name.to_owned(),
        })
    }
}

/// A handoff as the model sees it: the tool that takes it.
#[derive(Debug, Clone, PartialEq)]
pub struct HandoffTarget {
    /// The agent handed to.
    pub agent: String,
    /// What it is for, as the handing model reads it.
    pub description: String,
}

impl HandoffTarget {
    /// The tool the model calls to hand off: `transfer_to_{agent}`, with
    /// an optional `reason` argument.
    pub fn definition(&self) -> ToolDefinition {
        let mut description = format!(
            "Hand the conversation to the `{}` agent, which answers from then on.",
            self.agent
        );
        if !self.description.is_empty() {
            description.push(' ');
            description.push_str(&self.description);
        }
        ToolDefinition {
            name: handoff_tool_name(&self.agent),
            description,
            input_schema: Arc::new(json!({
                "type": "object",
                "properties": {
                    "reason": {
                        "type": "string",
                        "description": "Why the conversation is handed over."
                    }
                }
            })),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn names_become_tool_names() {
        assert!(check_agent_name("billing-2_x").is_ok());
        for bad in ["", "a b", "é", &"x".repeat(49)] {
            assert_eq!(
                check_agent_name(bad),
                Err(HandoffError::BadName { name: bad.into() })
            );
        }
        let target = HandoffTarget {
            agent: "billing".into(),
            description: "Invoices.".into(),
        };
        let definition = target.definition();
        assert_eq!(definition.name, "transfer_to_billing");
        assert!(definition.description.ends_with("Invoices."));
    }
}
