//! JSON shapes of the records, shared by API answers and owner
//! notifications: an agent run, a pending call and a decision.

use agentloop_storage::model::{AgentRun, AgentRunDecision, AgentRunStatus};
use agentloop_types::{Decision, PendingCall, Wait};
use serde_json::{Value, json};

use crate::ids::rfc3339;

/// An agent run as the API shows it: seed 004's shape, plus why it ended
/// when its loop did not end it: `error` (`{kind, message}`) for a failed
/// run, `stopped_by` with `stop_message` for one a person stopped: `cancel`
/// (it is `cancelled`) or `workflow_complete` (Mark Done: it is
/// `completed`).
pub fn agent_run_json(run: &AgentRun) -> Value {
    let reason = run.end_reason.as_ref();
    let failed = (run.status == AgentRunStatus::Failed)
        .then_some(reason)
        .flatten();
    // Cancelled by a person, or force-completed by Mark Done.
    let stopped = matches!(
        run.status,
        AgentRunStatus::Cancelled | AgentRunStatus::Completed
    )
    .then_some(reason)
    .flatten();
    json!({
        "id": run.id,
        "task_id": run.task_id,
        "agent_type": run.agent_type,
        "status": run.status,
        "conversation_id": run.conversation_id,
        "created_at": rfc3339(run.created_at),
        "completed_at": run.completed_at.map(rfc3339),
        "error": failed,
        "stopped_by": stopped.map(|r| &r.kind),
        "stop_message": stopped.map(|r| &r.message),
    })
}

/// A pending call as the API shows it: `call_id`, `tool`, `arguments`,
/// `kind` (`approval` or `question`), `reason` or `question`, `path` (the
/// tool-call ids leading to the nested run that made it; empty for the
/// run itself) and `decision` (the one recorded, or null).
pub fn pending_json(item: &PendingCall, decided: Option<&AgentRunDecision>) -> Value {
    let mut value = json!({
        "call_id": item.call.id,
        "tool": item.call.name,
        "arguments": item.call.input,
        "path": item.path.0,
        "decision": decided.map(|d| decision_json(&d.decision)),
    });
    match &item.wait {
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

/// A decision as the API shows it (the shape it is sent in, without
/// `call_id`).
pub fn decision_json(decision: &Decision) -> Value {
    match decision {
        Decision::Approve { arguments: None } => json!({ "decision": "approve" }),
        Decision::Approve {
            arguments: Some(arguments),
        } => json!({ "decision": "approve", "arguments": arguments }),
        Decision::ApproveAlways => json!({ "decision": "approve_always" }),
        Decision::Reject { reason } => json!({ "decision": "reject", "reason": reason }),
        Decision::Answer { text } => json!({ "decision": "answer", "text": text }),
    }
}
