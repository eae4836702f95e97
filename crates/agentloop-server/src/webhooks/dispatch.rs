//! Turns the owner notifications of this instance into webhook
//! deliveries: a run's status `waiting` is `run.waiting`; `completed`,
//! `failed` and `cancelled` are `run.ended`, followed by `chain.completed`
//! when the run completed and its task's workflow is complete. Each
//! delivery runs as a task of its own, so a slow receiver holds up
//! nothing.

use serde_json::{Value, json};

use super::deliver::{Job, deliver};
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
    if message.get("type").and_then(Value::as_str) != Some("agent-run-status") {
        return;
    }
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
        let body = json!({
            "event": event,
            "at": rfc3339(agentloop_storage::model::now_millis()),
            "project_id": project.id,
            "task_id": task.id,
            "agent_run_id": message.get("agentRunId"),
            "agent_type": message.get("agentType"),
            "status": status,
        });
        for url in &registration.urls {
            let job = Job {
                project: project.id.clone(),
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
}
