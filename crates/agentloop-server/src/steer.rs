//! Messages sent to an agent run while it goes on ("steering"): kept in
//! the inbox of the run's chat from their arrival, taken by the run at its
//! next step boundary (see [`agentloop_types::Inbox`]); the run's
//! interrupt signal when the message asks for it; and, once a run's
//! execution ends with messages it never took, their delivery to what
//! runs next.

use agentloop_storage::model::{AgentRun, AgentRunStatus, Project, now_millis};
use agentloop_storage::{StorageError, StorageResult};
use agentloop_types::{Message, Role, SteerStrategy};

use crate::drive::start_agent_run;
use crate::runner::{StartError, StartInput, load_task_context};
use crate::state::AppState;

/// The project's strategy for a message that names none (its
/// `steer_strategy` setting; `enqueue` when unset or unknown).
pub fn project_strategy(project: &Project) -> SteerStrategy {
    project
        .settings
        .get("steer_strategy")
        .and_then(|v| v.as_str())
        .and_then(SteerStrategy::parse)
        .unwrap_or_default()
}

/// Whether `message` can be sent to a run: a person's message (role
/// user, no tool calls or results).
pub fn is_persons(message: &Message) -> bool {
    message.role == Role::User
        && message.tool_uses().next().is_none()
        && message.tool_results().next().is_none()
}

/// Keeps `message` in the inbox of `run`'s chat; stored before this
/// returns. A message id the inbox holds already is not kept twice.
pub async fn enqueue(state: &AppState, run: &AgentRun, message: &Message) -> StorageResult<()> {
    let chat_id = crate::run_log::run_chat(state, run)
        .await?
        .ok_or_else(|| StorageError::not_found("conversation of agent run", &run.id))?;
    match state
        .store
        .enqueue_message(&chat_id, message, now_millis())
        .await
    {
        Ok(()) | Err(StorageError::AlreadyExists { .. }) => Ok(()),
        Err(error) => Err(error),
    }
}

/// Interrupts the step `run` has in flight when it executes here; a run
/// executing nowhere (waiting for a person) or elsewhere takes its
/// messages at its next step boundary. Says whether it was interrupted.
pub fn interrupt(state: &AppState, run: &AgentRun) -> bool {
    match state.local_run(&run.id) {
        Some(local) => {
            local.interrupt().interrupt();
            true
        }
        None => false,
    }
}

/// After `run_id`'s execution here: messages its chat's inbox still holds
/// (sent as its last turn ran, or before a cancel) go to what runs next —
/// the task's active run, when the chain started one, which takes them at
/// its next step boundary; else a new run of the same agent, whose request
/// they are. Nothing moves while the run still goes on or waits for a
/// person, nor once it was cancelled or its task is marked done.
pub async fn deliver_left(state: &AppState, run_id: &str) {
    if let Err(error) = Box::pin(try_deliver_left(state, run_id)).await {
        tracing::warn!(agent_run_id = %run_id, %error,
                       "messages left in the run's inbox could not be delivered");
    }
}

async fn try_deliver_left(state: &AppState, run_id: &str) -> StorageResult<()> {
    let run = state.store.get_agent_run(run_id).await?;
    // A run going on or waiting takes them itself; a cancelled one's
    // messages end with it (a person stopped the work they were about).
    if matches!(
        run.status,
        AgentRunStatus::Running | AgentRunStatus::Waiting | AgentRunStatus::Cancelled
    ) {
        return Ok(());
    }
    let Some(chat_id) = crate::run_log::run_chat(state, &run).await? else {
        return Ok(());
    };
    let left = state.store.queued_messages(&chat_id).await?;
    if left.is_empty() {
        return Ok(());
    }
    let ctx = load_task_context(&*state.store, &run.task_id).await?;
    if ctx.task.workflow_complete {
        return Ok(());
    }
    let ids: Vec<String> = left.iter().map(|m| m.id.clone()).collect();
    if let Some(active) = state.store.active_agent_run(&run.task_id).await? {
        for message in &left {
            enqueue(state, &active, message).await?;
        }
    } else {
        let request = left
            .iter()
            .map(Message::text)
            .collect::<Vec<_>>()
            .join("\n\n");
        let input = StartInput {
            frontend_tools: &[],
            request: Some(&request),
        };
        match start_agent_run(state, &ctx, run.agent_type, input).await {
            Ok(_) => {}
            // Started meanwhile: the messages go to that run.
            Err(StartError::Conflict(Some(active))) => {
                for message in &left {
                    enqueue(state, &active, message).await?;
                }
            }
            Err(StartError::Conflict(None) | StartError::Done) => return Ok(()),
            Err(StartError::Storage(error)) => return Err(error),
        }
    }
    state
        .store
        .mark_delivered(&chat_id, &ids, now_millis())
        .await?;
    Ok(())
}
