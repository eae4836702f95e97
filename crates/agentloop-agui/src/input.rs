//! What an AG-UI client sends to start or resume a run (`RunAgentInput`),
//! and its resume entries as agentloop decisions.

use agentloop_types::Decision;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::frontend::FrontendToolSpec;

/// A request to run an agent. Unknown fields are ignored, as the protocol
/// asks of a consumer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunAgentInput {
    /// The conversation; not empty.
    #[serde(deserialize_with = "non_empty")]
    pub thread_id: String,
    /// The client's id of this run, echoed in `RUN_STARTED` and
    /// `RUN_FINISHED`; not empty.
    #[serde(deserialize_with = "non_empty")]
    pub run_id: String,
    /// The conversation so far, as the client holds it.
    #[serde(default)]
    pub messages: Vec<Map<String, Value>>,
    /// Values the application passes through to the agent.
    #[serde(default, deserialize_with = "object")]
    pub forwarded_props: Option<Map<String, Value>>,
    /// Answers to the interrupts that ended the previous run.
    #[serde(default)]
    pub resume: Vec<ResumeEntry>,
    /// Tools the client runs itself ([`crate::FrontendTool`]).
    #[serde(default)]
    pub tools: Vec<FrontendToolSpec>,
    /// The application's state; the run's `STATE_SNAPSHOT` starts from it.
    #[serde(default)]
    pub state: Option<Value>,
}

impl RunAgentInput {
    /// The results of front-end tool calls the client ran: one decision
    /// per `tool` message, by the call's id, in message order. The
    /// message's text becomes the call's result; a message with an
    /// `error` tells the model the tool failed.
    pub fn tool_answers(&self) -> Vec<(String, Decision)> {
        self.messages
            .iter()
            .filter(|message| message.get("role").and_then(Value::as_str) == Some("tool"))
            .filter_map(|message| {
                let call_id = message.get("toolCallId")?.as_str()?.to_owned();
                let content = message_text(message.get("content"));
                let text = match message.get("error").and_then(Value::as_str) {
                    Some(error) => format!("The tool failed: {error}\n{content}")
                        .trim_end()
                        .to_owned(),
                    None => content,
                };
                Some((call_id, Decision::Answer { text }))
            })
            .collect()
    }

    /// The text of the thread's last `user` message, if it has any text:
    /// the request a run started from this input works on.
    pub fn last_user_text(&self) -> Option<String> {
        self.messages
            .iter()
            .rev()
            .find(|message| message.get("role").and_then(Value::as_str) == Some("user"))
            .map(|message| message_text(message.get("content")))
            .filter(|text| !text.trim().is_empty())
    }
}

/// A message's content as text: a string as it is, the text parts of a
/// list of parts joined by new lines.
fn message_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// An answer to one interrupt.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeEntry {
    /// The interrupt answered: the waiting call's id.
    pub interrupt_id: String,
    /// Answered or abandoned.
    pub status: ResumeStatus,
    /// The answer: `{"approved": bool, "arguments"?: {...}, "reason"?:
    /// string}` for an approval, `{"answer": string}` for a question.
    #[serde(default, deserialize_with = "object")]
    pub payload: Option<Map<String, Value>>,
}

/// A present field that must be an object (`null` too is refused, as the
/// protocol asks of optional fields).
fn object<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Map<String, Value>>, D::Error> {
    Map::deserialize(deserializer).map(Some)
}

fn non_empty<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let id = String::deserialize(deserializer)?;
    if id.is_empty() {
        return Err(serde::de::Error::custom("an id must not be empty"));
    }
    Ok(id)
}

/// Whether an interrupt was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResumeStatus {
    /// Answered; the payload holds the answer.
    Resolved,
    /// Abandoned: the call is rejected.
    Cancelled,
}

/// Why a resume entry is no decision.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "resume entry for {interrupt_id}: a resolved entry's payload must be {{\"approved\": true|false, \
     \"arguments\"?: {{...}}, \"reason\"?: \"...\"}} or {{\"answer\": \"...\"}}"
)]
pub struct ResumeError {
    /// The entry's interrupt.
    pub interrupt_id: String,
}

impl ResumeEntry {
    /// The decision this entry stands for.
    pub fn decision(&self) -> Result<Decision, ResumeError> {
        let unfit = || ResumeError {
            interrupt_id: self.interrupt_id.clone(),
        };
        if self.status == ResumeStatus::Cancelled {
            return Ok(Decision::Reject {
                reason: "the person abandoned the request".to_owned(),
            });
        }
        let payload = self.payload.as_ref().ok_or_else(unfit)?;
        if let Some(answer) = payload.get("answer") {
            let text = answer.as_str().ok_or_else(unfit)?;
            return Ok(Decision::Answer {
                text: text.to_owned(),
            });
        }
        let approved = payload
            .get("approved")
            .and_then(Value::as_bool)
            .ok_or_else(unfit)?;
        let arguments = match payload.get("arguments") {
            None => None,
            Some(arguments @ Value::Object(_)) => Some(arguments.clone()),
            Some(_) => return Err(unfit()),
        };
        let reason = match payload.get("reason") {
            None => "rejected by the person",
            Some(Value::String(reason)) => reason,
            Some(_) => return Err(unfit()),
        };
        Ok(if approved {
            Decision::Approve { arguments }
        } else {
            Decision::Reject {
                reason: reason.to_owned(),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(value: Value) -> ResumeEntry {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn resume_entries_become_decisions() {
        let approve = entry(json!({"interruptId": "c1", "status": "resolved",
                                    "payload": {"approved": true}}));
        assert_eq!(
            approve.decision(),
            Ok(Decision::Approve { arguments: None })
        );
        let reject = entry(json!({"interruptId": "c1", "status": "resolved",
                                   "payload": {"approved": false, "reason": "no"}}));
        assert_eq!(
            reject.decision(),
            Ok(Decision::Reject {
                reason: "no".into()
            })
        );
        let answer = entry(json!({"interruptId": "c2", "status": "resolved",
                                   "payload": {"answer": "blue"}}));
        assert_eq!(
            answer.decision(),
            Ok(Decision::Answer {
                text: "blue".into()
            })
        );
        let abandoned = entry(json!({"interruptId": "c3", "status": "cancelled"}));
        assert!(matches!(abandoned.decision(), Ok(Decision::Reject { .. })));
        for payload in [
            json!({}),
            json!({"approved": "yes"}),
            json!({"answer": 3}),
            json!({"approved": true, "arguments": 5}),
            json!({"approved": false, "reason": []}),
        ] {
            let bad = entry(json!({"interruptId": "c4", "status": "resolved", "payload": payload}));
            assert_eq!(
                bad.decision(),
                Err(ResumeError {
                    interrupt_id: "c4".into()
                })
            );
        }
    }

    #[test]
    fn an_input_needs_its_ids_and_ignores_unknown_fields() {
        let input: RunAgentInput = serde_json::from_value(json!({
            "threadId": "t", "runId": "r", "messages": [], "tools": [], "context": [],
            "state": {}, "somethingNew": 1
        }))
        .unwrap();
        assert!(input.resume.is_empty());
        assert_eq!(input.state, Some(json!({})));
        for bad in [
            json!({"runId": "r"}),
            json!({"threadId": "", "runId": "r"}),
            json!({"threadId": "t", "runId": "r", "messages": [null]}),
            json!({"threadId": "t", "runId": "r", "forwardedProps": 5}),
            json!({"threadId": "t", "runId": "r", "tools": [{"name": "x"}]}),
        ] {
            assert!(serde_json::from_value::<RunAgentInput>(bad).is_err());
        }
    }

    #[test]
    fn the_last_user_message_with_text_is_the_request() {
        let input = |messages: Value| -> RunAgentInput {
            serde_json::from_value(json!({"threadId": "t", "runId": "r", "messages": messages}))
                .unwrap()
        };
        let asked = input(json!([
            {"id": "m1", "role": "user", "content": "first"},
            {"id": "m2", "role": "assistant", "content": "ok"},
            {"id": "m3", "role": "user", "content": [{"type": "text", "text": "Add a README"}]}
        ]));
        assert_eq!(asked.last_user_text().as_deref(), Some("Add a README"));
        assert_eq!(input(json!([])).last_user_text(), None);
        let blank = input(json!([{"id": "m1", "role": "user", "content": "  "}]));
        assert_eq!(blank.last_user_text(), None);
    }

    #[test]
    fn tool_messages_answer_front_end_calls() {
        let input: RunAgentInput = serde_json::from_value(json!({
            "threadId": "t", "runId": "r",
            "messages": [
                {"id": "m1", "role": "user", "content": "chart it"},
                {"id": "m2", "role": "tool", "toolCallId": "c1", "content": "shown"},
                {"id": "m3", "role": "tool", "toolCallId": "c2",
                 "content": [{"type": "text", "text": "a"}, {"type": "binary", "mimeType": "x"},
                             {"type": "text", "text": "b"}]},
                {"id": "m4", "role": "tool", "toolCallId": "c3", "content": "", "error": "no canvas"},
                {"id": "m5", "role": "tool", "content": "no call id"}
            ],
            "tools": [{"name": "show_chart", "description": "Shows a chart",
                       "parameters": {"type": "object"}}]
        }))
        .unwrap();
        let answer = |text: &str| Decision::Answer { text: text.into() };
        assert_eq!(
            input.tool_answers(),
            vec![
                ("c1".to_owned(), answer("shown")),
                ("c2".to_owned(), answer("a\nb")),
                ("c3".to_owned(), answer("The tool failed: no canvas")),
            ]
        );
        assert_eq!(input.tools[0].name, "show_chart");
    }
}
