//! Messages sent to an agent run while it goes on ("steering"): kept in
//! the inbox of the run's chat from their arrival, taken by the run at its
//! next step boundary (see [`agentloop_types::Inbox`]), and the run's
//! interrupt signal when the message asks for it. Messages a run never
//! took go on to what runs next once its execution ends (`drive`).

use agentloop_storage::model::{AgentRun, Project, now_millis};
use agentloop_storage::{StorageError, StorageResult};
use agentloop_types::{Message, Role, SteerStrategy};

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

/// Keeps `message`, sent with `strategy`, in the inbox of `run`'s chat;
/// stored before this returns. A message id the inbox holds already is
/// not kept twice.
pub async fn enqueue(
    state: &AppState,
    run: &AgentRun,
    message: &Message,
    strategy: SteerStrategy,
) -> StorageResult<()> {
    let chat_id = crate::run_log::run_chat(state, run)
        .await?
        .ok_or_else(|| StorageError::not_found("conversation of agent run", &run.id))?;
    match state
        .store
        .enqueue_message(&chat_id, message, strategy, now_millis())
        .await
    {
        Ok(()) | Err(StorageError::AlreadyExists { .. }) => Ok(()),
        Err(error) => Err(error),
    }
}

/// Whether `run` executes here, where a step it has in flight can be
/// interrupted.
pub fn executes_here(state: &AppState, run: &AgentRun) -> bool {
    state.local_run(&run.id).is_some()
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
