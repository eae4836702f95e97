//! Turns the owner notifications of this instance into webhook
//! deliveries: a run's status `waiting` is `run.waiting`; `completed`,
//! `failed` and `cancelled` are `run.ended`, followed by `chain.completed`
//! (`status` `completed`, `reason` `workflow_complete`) when the run
//! completed and its task's workflow is complete. A chain a bound ended
//! is `chain.completed` too, with `status` `stopped`, the bound as
//! `reason` (`max_runs`, `max_tokens`, `max_cost`), a `message`, and the
//! chain's `runs`, `tokens` and `cost_usd`. Each
//! delivery runs as a task of its own, so a slow receiver holds up
//! nothing.

use serde_json::{Value, json};

use super::deliver::{Job, deliver};
use agentloop_storage::model::Project;

use super::registry::Registration;
use crate::ids::rfc3339;
use crate::state::AppState;

/// Starts the dispatcher; it stops when the instance shuts down.
pub fn spawn_dispatcher(state: AppState) {
    let mut notices = state.notices.dispatch();
    tokio::spawn(async move {
        loop {
            let notice = tokio::select! {
                () = state.shutdown.cancelled() => return,
                notice = notices.recv() => notice,
            };
            match notice {
                Some(message) => on_notice(&state, &message).await,
                None => return,
            }
        }
    });
}

async fn on_notice(state: &AppState, message: &Value) {
    match message.get("type").and_then(Value::as_str) {
        Some("agent-run-status") => on_run_status(state, message).await,
        Some("chain-ended") => on_chain_ended(state, message).await,
        _ => {}
    }
}

/// A bound ended a task's chain: `chain.completed` with `status`
/// `stopped`, the bound as `reason`, and what the chain spent.
async fn on_chain_ended(state: &AppState, message: &Value) {
    let Some(task_id) = message.get("taskId").and_then(Value::as_str) else {
        return;
    };
    let Some((project, registration)) = registered(state, task_id).await else {
        return;
    };
    const EVENT: &str = "chain.completed";
    if !registration.hears(EVENT) {
        return;
    }
    let body = json!({
        "event": EVENT,
        "at": rfc3339(agentloop_storage::model::now_millis()),
        "project_id": project.id,
        "task_id": task_id,
        "agent_run_id": message.get("agentRunId"),
        "status": "stopped",
        "reason": message.get("reason"),
        "message": message.get("message"),
        "runs": message.get("runs"),
        "tokens": message.get("tokens"),
        "cost_usd": message.get("cost"),
    });
    send(state, &project.id, &registration, EVENT, &body);
}

/// The project of a task with its webhook registration, if it has one.
async fn registered(state: &AppState, task_id: &str) -> Option<(Project, Registration)> {
    let task = state.store.get_task(task_id).await.ok()?;
    let project = state.store.get_project(&task.project_id).await.ok()?;
    let registration = Registration::of(&project.settings)?;
    Some((project, registration))
}

/// Delivers `body` as `event` to every URL of the registration.
fn send(
    state: &AppState,
    project_id: &str,
    registration: &Registration,
    event: &str,
    body: &Value,
) {
    for url in &registration.urls {
        let job = Job {
            project: project_id.to_owned(),
            url: url.clone(),
            event: event.to_owned(),
            body: body.to_string().into_bytes(),
            secret: registration.secret.clone(),
        };
        let settings = state.config.webhooks.clone();
        let store = state.store.clone();
        tokio::spawn(async move {
            deliver(&settings, &store, job).await;
        });
    }
}

async fn on_run_status(state: &AppState, message: &Value) {
    let (Some(task_id), Some(status)) = (
        message.get("taskId").and_then(Value::as_str),
        message.get("status").and_then(Value::as_str),
    ) else {
        return;
    };
    let event = match status {
        "waiting" => "run.waiting",
        "completed" | "failed" | "cancelled" => "run.ended",
        _ => return,
    };
    let Ok(task) = state.store.get_task(task_id).await else {
        return;
    };
    let Ok(project) = state.store.get_project(&task.project_id).await else {
        return;
    };
    let Some(registration) = Registration::of(&project.settings) else {
        return;
    };
    let mut events = vec![event];
    if status == "completed" && task.workflow_complete {
        events.push("chain.completed");
    }
    for event in events {
        if !registration.hears(event) {
            continue;
        }
        let mut body = json!({
            "event": event,
            "at": rfc3339(agentloop_storage::model::now_millis()),
            "project_id": project.id,
            "task_id": task.id,
            "agent_run_id": message.get("agentRunId"),
            "agent_type": message.get("agentType"),
            "status": status,
        });
        if event == "chain.completed" {
            body["reason"] = json!("workflow_complete");
        }
        send(state, &project.id, &registration, event, &body);
    }
}
