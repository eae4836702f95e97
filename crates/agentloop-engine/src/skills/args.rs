//! The arguments of a skill call and their validation.

use agentloop_types::{Message, Role};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Why a skill call cannot start a child cycle.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillError {
    /// The model's arguments do not fit [`SkillCallArgs`].
    #[error("invalid arguments for skill {skill}: {reason}")]
    InvalidArgs {
        /// The skill called.
        skill: String,
        /// What is wrong.
        reason: String,
    },
    /// Nothing is left of the skill's prompt once HTML is removed.
    #[error("skill {skill} has an empty prompt once sanitised to markdown")]
    EmptyPrompt {
        /// The skill called.
        skill: String,
    },
}

/// Who wrote a message of a skill call's `history`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HistoryRole {
    /// A person.
    User,
    /// The model.
    Assistant,
    /// Instructions.
    System,
}

/// One message of a skill call's `history`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillHistoryMessage {
    /// Author.
    pub role: HistoryRole,
    /// Text.
    pub content: String,
}

/// What the model passes when it calls a skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillCallArgs {
    /// What the skill should do; the child cycle's user message.
    pub task: String,
    /// Messages placed before the task in the child history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<SkillHistoryMessage>>,
}

impl SkillCallArgs {
    /// Validates the arguments of a call of `skill`.
    pub fn parse(skill: &str, input: &Value) -> Result<Self, SkillError> {
        let invalid = |reason: String| SkillError::InvalidArgs {
            skill: skill.to_owned(),
            reason,
        };
        if !input.is_object() {
            return Err(invalid("expected a JSON object".to_owned()));
        }
        let args: Self =
            serde_json::from_value(input.clone()).map_err(|e| invalid(e.to_string()))?;
        if args.task.trim().is_empty() {
            return Err(invalid("`task` must not be empty".to_owned()));
        }
        Ok(args)
    }

    /// The history and task as child messages, ids prefixed by `prefix`.
    pub fn messages(&self, prefix: &str) -> Vec<Message> {
        let history = self.history.iter().flatten().enumerate().map(|(i, m)| {
            let role = match m.role {
                HistoryRole::User => Role::User,
                HistoryRole::Assistant => Role::Assistant,
                HistoryRole::System => Role::System,
            };
            Message::new(
                format!("{prefix}-history-{}", i + 1),
                role,
                vec![agentloop_types::ContentBlock::text(m.content.clone())],
            )
        });
        history
            .chain(std::iter::once(Message::user_text(
                format!("{prefix}-task"),
                self.task.clone(),
            )))
            .collect()
    }

    /// JSON schema of the arguments, as offered to the model.
    pub fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "task": {"type": "string", "description": "What the skill should do."},
                "history": {
                    "type": "array",
                    "description": "Messages the skill should see before the task.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "role": {"type": "string", "enum": ["user", "assistant", "system"]},
                            "content": {"type": "string"}
                        },
                        "required": ["role", "content"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["task"],
            "additionalProperties": false
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_and_invalid_args() {
        let ok = SkillCallArgs::parse(
            "s",
            &json!({"task": "t", "history": [{"role": "assistant", "content": "c"}]}),
        );
        assert!(ok.is_ok());
        for bad in [
            json!("task"),
            json!({}),
            json!({"task": 3}),
            json!({"task": "  "}),
            json!({"task": "t", "history": "x"}),
            json!({"task": "t", "history": [{"role": "robot", "content": "c"}]}),
            json!({"task": "t", "history": [{"role": "user"}]}),
            json!({"task": "t", "extra": 1}),
        ] {
            assert!(
                matches!(
                    SkillCallArgs::parse("s", &bad),
                    Err(SkillError::InvalidArgs { .. })
                ),
                "{bad} must be rejected"
            );
        }
    }
}
