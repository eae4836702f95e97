//! What an AI SDK chat client sends (`ChatRequest`, the body its chat
//! transport posts), and the person's answers it carries as agentloop
//! decisions.

use agentloop_types::{Decision, Wait};
use serde::Deserialize;
use serde_json::{Map, Value};

/// The body the `ai` package's HTTP chat transport posts: the chat's id,
/// its messages, what triggered the request, and the fields the
/// application adds (`agentType` here). Unknown fields are ignored.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatRequest {
    /// The client's id of the chat.
    #[serde(default)]
    pub id: Option<String>,
    /// The conversation as the client holds it, oldest first.
    pub messages: Vec<UiMessage>,
    /// What the client asked for.
    #[serde(default)]
    pub trigger: Option<Trigger>,
    /// The id of the message to regenerate, for `regenerate-message`.
    #[serde(default)]
    pub message_id: Option<String>,
    /// The agent a new run starts (the application's own field).
    #[serde(default)]
    pub agent_type: Option<String>,
}

/// What made the client send the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trigger {
    /// A new message, or answers to the last one's tool calls.
    SubmitMessage,
    /// The last answer again.
    RegenerateMessage,
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions.
    System,
    /// The person.
    User,
    /// The agent.
    Assistant,
}

/// One message of the conversation (a `UIMessage`): its parts are kept as
/// JSON, read where they matter (text, tool parts).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct UiMessage {
    /// The message's id.
    pub id: String,
    /// Who wrote it.
    pub role: Role,
    /// Its parts.
    #[serde(default)]
    pub parts: Vec<Map<String, Value>>,
}

impl UiMessage {
    /// The text of its `text` parts, joined by new lines.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// What the person answered in the message's tool parts: approval
    /// responses, and outputs the client gave calls (a question's answer).
    pub fn tool_responses(&self) -> Vec<ToolResponse> {
        self.parts
            .iter()
            .filter_map(ToolResponse::of_part)
            .collect()
    }
}

impl ChatRequest {
    /// The text of the person's last message, if it has any: the request
    /// a run started from this chat works on.
    pub fn user_text(&self) -> Option<String> {
        self.messages
            .iter()
            .rev()
            .find(|message| message.role == Role::User)
            .map(UiMessage::text)
            .filter(|text| !text.trim().is_empty())
    }

    /// The answers in the last message when it is the agent's: the
    /// client sends the assistant message back with the person's
    /// responses in its tool parts.
    pub fn tool_responses(&self) -> Vec<ToolResponse> {
        self.messages
            .last()
            .filter(|message| message.role == Role::Assistant)
            .map(UiMessage::tool_responses)
            .unwrap_or_default()
    }
}

/// The person's answer to one call, from a tool part of the message.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResponse {
    /// The call's id.
    pub tool_call_id: String,
    /// The answer.
    pub answer: Answer,
}

/// What a tool part says of its call.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// `approval-responded`: the person approved or refused the call.
    Approval {
        /// Whether it may run.
        approved: bool,
        /// Why (for a refusal, the model reads it).
        reason: Option<String>,
    },
    /// `output-available`: the client gave the call's result.
    Output(Value),
    /// `output-error`: the client says the call failed.
    OutputError(String),
}

/// An answer that does not fit the call it answers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// An approval response for a call that asks a question.
    #[error("call {0} asks a question: answer it with the tool's output, not an approval")]
    ApprovalOfQuestion(String),
    /// An output for a call that waits for approval.
    #[error("call {0} waits for approval: answer it with an approval response, not an output")]
    OutputOfApproval(String),
}

impl ToolResponse {
    /// The answer a tool part (`tool-<name>` or `dynamic-tool`) holds, if
    /// it holds one.
    fn of_part(part: &Map<String, Value>) -> Option<Self> {
        let kind = part.get("type")?.as_str()?;
        if kind != "dynamic-tool" && !kind.starts_with("tool-") {
            return None;
        }
        let tool_call_id = part.get("toolCallId")?.as_str()?.to_owned();
        let answer = match part.get("state")?.as_str()? {
            "approval-responded" => {
                let approval = part.get("approval")?;
                Answer::Approval {
                    approved: approval.get("approved")?.as_bool()?,
                    reason: approval
                        .get("reason")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                }
            }
            "output-available" => Answer::Output(part.get("output").cloned().unwrap_or_default()),
            "output-error" => Answer::OutputError(
                part.get("errorText")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            ),
            _ => return None,
        };
        Some(Self {
            tool_call_id,
            answer,
        })
    }

    /// The decision the answer is for a call that waits as `wait` does:
    /// an approval response decides an approval, an output answers a
    /// question (its text as it is, other JSON as JSON text).
    pub fn decision(&self, wait: &Wait) -> Result<Decision, AnswerError> {
        let id = || self.tool_call_id.clone();
        match (&self.answer, wait) {
            (Answer::Approval { approved: true, .. }, Wait::Approval { .. }) => {
                Ok(Decision::Approve { arguments: None })
            }
            (Answer::Approval { reason, .. }, Wait::Approval { .. }) => Ok(Decision::Reject {
                reason: reason
                    .clone()
                    .filter(|reason| !reason.trim().is_empty())
                    .unwrap_or_else(|| "The user refused this call.".to_owned()),
            }),
            (Answer::Approval { .. }, Wait::Question { .. }) => {
                Err(AnswerError::ApprovalOfQuestion(id()))
            }
            (Answer::Output(output), Wait::Question { .. }) => Ok(Decision::Answer {
                text: match output {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                },
            }),
            (Answer::OutputError(error), Wait::Question { .. }) => Ok(Decision::Answer {
                text: format!("The tool failed: {error}"),
            }),
            (Answer::Output(_) | Answer::OutputError(_), Wait::Approval { .. }) => {
                Err(AnswerError::OutputOfApproval(id()))
            }
        }
    }

    /// Whether the answer refuses the call.
    pub fn refuses(&self) -> bool {
        matches!(
            self.answer,
            Answer::Approval {
                approved: false,
                ..
            }
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn request(body: Value) -> ChatRequest {
        serde_json::from_value(body).unwrap()
    }

    #[test]
    fn the_last_user_message_is_the_request() {
        let chat = request(json!({
            "id": "c", "trigger": "submit-message",
            "messages": [{ "id": "m1", "role": "user", "parts": [
                { "type": "text", "text": "Plan" }, { "type": "file", "url": "x" },
                { "type": "text", "text": "it." }
            ] }]
        }));
        assert_eq!(chat.user_text().as_deref(), Some("Plan\nit."));
        assert!(chat.tool_responses().is_empty());
    }

    #[test]
    fn the_answers_of_the_last_assistant_message_are_read() {
        let chat = request(json!({
            "messages": [
                { "id": "m1", "role": "user", "parts": [{ "type": "text", "text": "go" }] },
                { "id": "r", "role": "assistant", "parts": [
                    { "type": "step-start" },
                    { "type": "dynamic-tool", "toolName": "fs", "toolCallId": "a",
                      "state": "approval-responded", "input": {},
                      "approval": { "id": "a", "approved": false, "reason": "not there" } },
                    { "type": "tool-ask", "toolCallId": "b", "state": "output-available",
                      "input": {}, "output": { "city": "Oslo" } },
                    { "type": "dynamic-tool", "toolName": "fs", "toolCallId": "c",
                      "state": "input-available", "input": {} }
                ] }
            ]
        }));
        assert_eq!(chat.user_text().as_deref(), Some("go"));
        let responses = chat.tool_responses();
        assert_eq!(responses.len(), 2);
        let approval = Wait::Approval {
            reason: String::new(),
        };
        let question = Wait::Question {
            question: String::new(),
        };
        assert!(responses[0].refuses());
        assert_eq!(
            responses[0].decision(&approval).unwrap(),
            Decision::Reject {
                reason: "not there".to_owned()
            }
        );
        assert_eq!(
            responses[0].decision(&question),
            Err(AnswerError::ApprovalOfQuestion("a".to_owned()))
        );
        assert_eq!(
            responses[1].decision(&question).unwrap(),
            Decision::Answer {
                text: r#"{"city":"Oslo"}"#.to_owned()
            }
        );
        assert!(responses[1].decision(&approval).is_err());
    }
}
