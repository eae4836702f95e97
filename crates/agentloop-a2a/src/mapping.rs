//! A run in A2A's words, sans-IO: its result as a task's status and
//! artifacts, its events as progress updates, and a client's reply to an
//! input-required task as decisions.
//!
//! | agentloop | A2A |
//! | --- | --- |
//! | running | `TASK_STATE_WORKING` |
//! | `finished`: complete | `TASK_STATE_COMPLETED`; artifacts `answer` (the last assistant text) and `output` (the structured output or the return tool's value, a data part) |
//! | `finished`: suspended | `TASK_STATE_INPUT_REQUIRED`; the status message says what waits (a text part) and lists it (a data part `{"pending": [...]}`) |
//! | `finished`: cancelled | `TASK_STATE_CANCELED` |
//! | `finished`: error, limits | `TASK_STATE_FAILED`; the status message says why |
//! | an assistant message with text, a tool starting (root run) | a `TASK_STATE_WORKING` status update whose message says so |

use agentloop_types::{
    Decision, EventKind, LoopEvent, LoopResult, LoopStatus, PendingCall, Role as MessageRole, Wait,
};
use serde_json::{Map, Value, json};

use crate::wire::{
    Artifact, Message, Part, StreamResponse, TaskState, TaskStatus, TaskStatusUpdateEvent,
};

/// The artifact holding a completed run's answer.
pub const ANSWER_ARTIFACT: &str = "answer";
/// The artifact holding a completed run's structured output.
pub const OUTPUT_ARTIFACT: &str = "output";

/// Which task (and context) the objects made here belong to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskIds {
    /// The A2A task id (a run's id).
    pub task_id: String,
    /// The A2A context id.
    pub context_id: String,
}

impl TaskIds {
    fn message(&self, suffix: &str, parts: Vec<Part>) -> Message {
        Message::agent(
            format!("{}-{suffix}", self.task_id),
            &self.task_id,
            &self.context_id,
            parts,
        )
    }

    /// A status without a timestamp (the caller, which has a clock, sets it).
    pub fn status(&self, state: TaskState, message: Option<Message>) -> TaskStatus {
        TaskStatus {
            state,
            message,
            timestamp: None,
        }
    }

    /// A status update of this task.
    pub fn update(&self, status: TaskStatus) -> StreamResponse {
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: self.task_id.clone(),
            context_id: self.context_id.clone(),
            status,
            metadata: None,
        })
    }
}

/// The status a run's result leaves its task in.
pub fn status_of(ids: &TaskIds, result: &LoopResult) -> TaskStatus {
    let say = |suffix: &str, text: String| Some(ids.message(suffix, vec![Part::text(text)]));
    match &result.status {
        LoopStatus::Complete { .. } => ids.status(TaskState::Completed, None),
        LoopStatus::Suspended { pending, .. } => {
            let pending: Vec<&PendingCall> = pending.iter().collect();
            ids.status(
                TaskState::InputRequired,
                Some(input_required(ids, &pending)),
            )
        }
        LoopStatus::Cancelled => {
            let why = result.stop.as_ref().map_or_else(
                || "the run was cancelled".to_owned(),
                |s| s.stop_message.clone(),
            );
            ids.status(TaskState::Canceled, say("canceled", why))
        }
        LoopStatus::Error { error } => ids.status(
            TaskState::Failed,
            say("failed", format!("the run failed: {error}")),
        ),
        LoopStatus::MaxIterations => ids.status(
            TaskState::Failed,
            say("failed", "the run reached its turn limit".to_owned()),
        ),
        LoopStatus::LimitExceeded { limit, .. } => ids.status(
            TaskState::Failed,
            say(
                "failed",
                format!("the run reached its {} limit", limit.name()),
            ),
        ),
    }
}

/// A completed run's artifacts: its answer and its structured output,
/// each when it has one (none for a run that did not complete).
pub fn artifacts(result: &LoopResult) -> Vec<Artifact> {
    let LoopStatus::Complete {
        return_value,
        output,
    } = &result.status
    else {
        return Vec::new();
    };
    let mut artifacts = Vec::new();
    if let Some(text) = result.final_text().filter(|t| !t.trim().is_empty()) {
        artifacts.push(Artifact {
            artifact_id: ANSWER_ARTIFACT.to_owned(),
            name: ANSWER_ARTIFACT.to_owned(),
            description: "The agent's final answer.".to_owned(),
            parts: vec![Part::text(text)],
            metadata: None,
        });
    }
    if let Some(value) = output.as_ref().or(return_value.as_ref()) {
        artifacts.push(Artifact {
            artifact_id: OUTPUT_ARTIFACT.to_owned(),
            name: OUTPUT_ARTIFACT.to_owned(),
            description: "The run's structured output.".to_owned(),
            parts: vec![Part::data(value.clone())],
            metadata: None,
        });
    }
    artifacts
}

/// One waiting call as the status message lists it: the shape of the HTTP
/// API's pending calls (`call_id`, `kind`, `tool`, `arguments`, `reason`
/// or `question`).
pub fn pending_json(call: &PendingCall) -> Value {
    let mut value = json!({
        "call_id": call.call.id,
        "tool": call.call.name,
        "arguments": call.call.input,
    });
    match &call.wait {
        Wait::Approval { reason } => {
            value["kind"] = json!("approval");
            value["reason"] = json!(reason);
        }
        Wait::Question { question } => {
            value["kind"] = json!("question");
            value["question"] = json!(question);
        }
    }
    value
}

/// The message of an input-required status: one sentence per waiting call
/// and how to answer, then the calls as data.
pub fn input_required(ids: &TaskIds, pending: &[&PendingCall]) -> Message {
    let mut lines: Vec<String> = pending
        .iter()
        .map(|call| match &call.wait {
            Wait::Approval { reason } => format!(
                "The call {} of tool {} needs approval ({reason}).",
                call.call.id, call.call.name
            ),
            Wait::Question { question } => format!("Question: {question}"),
        })
        .collect();
    lines.push(if pending.len() == 1 {
        match pending.first().map(|c| &c.wait) {
            Some(Wait::Question { .. }) => "Reply with the answer.".to_owned(),
            _ => "Reply \"approve\" or \"reject\" (optionally followed by a reason).".to_owned(),
        }
    } else {
        "Reply with a data part {\"decisions\": [{\"call_id\", \"decision\", ...}]} deciding each call."
            .to_owned()
    });
    let data = json!({ "pending": pending.iter().map(|c| pending_json(c)).collect::<Vec<_>>() });
    // One status message per round of waiting: named by the calls it lists.
    let calls: Vec<&str> = pending.iter().map(|c| c.call.id.as_str()).collect();
    ids.message(
        &format!("input-required-{}", calls.join("-")),
        vec![Part::text(lines.join("\n")), Part::data(data)],
    )
}

/// The progress an event shows, if any: a status update (state working)
/// when the root run's model says something or a tool of it starts.
pub fn progress(ids: &TaskIds, event: &LoopEvent) -> Option<StreamResponse> {
    if !event.path.is_root() {
        return None;
    }
    let (text, data) = match &event.kind {
        EventKind::MessageCreated(created) if created.message.role == MessageRole::Assistant => {
            let text = created.message.text();
            if text.trim().is_empty() {
                return None;
            }
            (text, None)
        }
        EventKind::ToolStart(start) if start.depth <= 1 => (
            format!("running tool {}", start.name),
            Some(
                json!({ "tool": start.name, "call_id": start.tool_use_id, "arguments": start.input }),
            ),
        ),
        _ => return None,
    };
    let mut parts = vec![Part::text(text)];
    parts.extend(data.map(Part::data));
    let message = ids.message(&format!("progress-{}", event.seq), parts);
    Some(ids.update(ids.status(TaskState::Working, Some(message))))
}

/// What a client's reply to an input-required task says.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A data part's object with `decisions` (the HTTP API's decisions
    /// body: `[{"call_id", "decision", ...}]`).
    Decisions(Map<String, Value>),
    /// Plain text, for the one waiting call.
    Text(String),
}

/// Reads a reply: a data part with `decisions` wins over text.
pub fn reply(message: &Message) -> Option<Reply> {
    let decisions = message.parts.iter().find_map(|part| match &part.data {
        Some(Value::Object(object)) if object.contains_key("decisions") => Some(object.clone()),
        _ => None,
    });
    decisions
        .map(Reply::Decisions)
        .or_else(|| message.text().map(Reply::Text))
}

/// The decision a text reply makes on the one call waiting: a question's
/// answer is the text; an approval takes "approve" (or "yes") or "reject"
/// (or "no"), optionally followed by a reason.
pub fn decision_from_text(wait: &Wait, text: &str) -> Result<Decision, String> {
    match wait {
        Wait::Question { .. } => Ok(Decision::Answer {
            text: text.to_owned(),
        }),
        Wait::Approval { .. } => {
            let trimmed = text.trim();
            let word_end = trimmed
                .find(|c: char| !c.is_alphanumeric())
                .unwrap_or(trimmed.len());
            let (word, rest) = trimmed.split_at(word_end);
            let reason = rest.trim_start_matches([':', ',', '.', '-', ' ']).trim();
            match word.to_ascii_lowercase().as_str() {
                "approve" | "approved" | "yes" | "y" | "ok" => {
                    Ok(Decision::Approve { arguments: None })
                }
                "reject" | "rejected" | "no" | "n" | "deny" => Ok(Decision::Reject {
                    reason: if reason.is_empty() {
                        "the user rejected this call".to_owned()
                    } else {
                        reason.to_owned()
                    },
                }),
                _ => Err(format!(
                    "a call waits for approval: reply \"approve\" or \"reject\", not {trimmed:?}"
                )),
            }
        }
    }
}
