//! The A2A task an agent run is, as its records and events say: the task
//! a request answers, and the updates that end a stream.

use agentloop_a2a::mapping::{self, TaskIds};
use agentloop_a2a::rpc::{ErrorCode, RpcError};
use agentloop_a2a::wire::{
    self, Artifact, Message, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState,
};
use agentloop_storage::model::{AgentRun, AgentRunStatus, now_millis};
use agentloop_types::{LoopResult, PendingCall};

use crate::ids::rfc3339;
use crate::runner::TaskContext;
use crate::state::AppState;

pub(super) fn now() -> Option<String> {
    Some(rfc3339(now_millis()))
}

/// The status update with its timestamp set.
pub(super) fn stamp(update: StreamResponse) -> StreamResponse {
    match update {
        StreamResponse::StatusUpdate(mut update) => {
            update.status.timestamp = now();
            StreamResponse::StatusUpdate(update)
        }
        other => other,
    }
}

/// What a stream sends when the run's root `finished` event comes: its
/// artifacts, then its status.
pub(super) fn final_updates(ids: &TaskIds, result: &LoopResult) -> Vec<StreamResponse> {
    let task = task_from_result(ids, result);
    artifact_updates(ids, task.artifacts)
        .chain(std::iter::once(ids.update(task.status)))
        .collect()
}

/// What a stream sends when the run's log ended without a root `finished`
/// event it saw (a run cancelled while it waited, or a server stopping):
/// the task as its record says.
pub(super) async fn ended_updates(
    state: &AppState,
    ids: &TaskIds,
) -> Result<Vec<StreamResponse>, RpcError> {
    let run = state
        .store
        .get_agent_run(&ids.task_id)
        .await
        .map_err(internal)?;
    let task = task_of(state, &run, ids).await?;
    Ok(artifact_updates(ids, task.artifacts)
        .chain(std::iter::once(ids.update(task.status)))
        .collect())
}

fn artifact_updates(
    ids: &TaskIds,
    artifacts: Vec<Artifact>,
) -> impl Iterator<Item = StreamResponse> + '_ {
    artifacts.into_iter().map(|artifact| {
        StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: ids.task_id.clone(),
            context_id: ids.context_id.clone(),
            artifact,
            append: false,
            last_chunk: true,
            metadata: None,
        })
    })
}

pub(super) fn ids_of(run: &AgentRun, ctx: &TaskContext) -> TaskIds {
    TaskIds {
        task_id: run.id.clone(),
        context_id: ctx.task.id.clone(),
    }
}

pub(super) fn internal(err: impl std::fmt::Display) -> RpcError {
    RpcError::new(ErrorCode::InternalError, err.to_string())
}

/// A task just started or resumed.
pub(super) fn working_task(ids: &TaskIds) -> Task {
    let mut status = ids.status(TaskState::Working, None);
    status.timestamp = now();
    Task {
        id: ids.task_id.clone(),
        context_id: ids.context_id.clone(),
        status,
        artifacts: Vec::new(),
        history: Vec::new(),
        metadata: None,
    }
}

/// The task a run's result leaves.
pub(super) fn task_from_result(ids: &TaskIds, result: &LoopResult) -> Task {
    let mut status = mapping::status_of(ids, result);
    status.timestamp = now();
    Task {
        id: ids.task_id.clone(),
        context_id: ids.context_id.clone(),
        status,
        artifacts: mapping::artifacts(result),
        history: Vec::new(),
        metadata: None,
    }
}

/// The task as the run's records say now.
pub(super) async fn task_of(
    state: &AppState,
    run: &AgentRun,
    ids: &TaskIds,
) -> Result<Task, RpcError> {
    let mut task = working_task(ids);
    match run.status {
        AgentRunStatus::Running => {}
        AgentRunStatus::Waiting => {
            let pending = super::service::pending(state, run)
                .await
                .map_err(|e| internal(e.message()))?;
            let undecided: Vec<&PendingCall> = pending
                .iter()
                .filter(|(_, decided)| decided.is_none())
                .map(|(call, _)| call)
                .collect();
            task.status.state = TaskState::InputRequired;
            task.status.message = Some(mapping::input_required(ids, &undecided));
        }
        AgentRunStatus::Completed | AgentRunStatus::Failed | AgentRunStatus::Cancelled => {
            let record = super::service::run_record(state, &run.id)
                .await
                .map_err(|e| internal(e.message()))?;
            let result = record
                .result
                .and_then(|value| serde_json::from_value::<LoopResult>(value).ok());
            if let Some(result) = result.as_ref() {
                task = task_from_result(ids, result);
            }
            let (state_now, fallback) = match run.status {
                AgentRunStatus::Completed => (TaskState::Completed, None),
                AgentRunStatus::Failed => (TaskState::Failed, Some("the run failed")),
                _ => (TaskState::Canceled, Some("the run was cancelled")),
            };
            // The record decides how the run ended (a person may have
            // cancelled it after its loop's last event).
            if task.status.state != state_now {
                task.status.state = state_now;
                task.artifacts.retain(|_| state_now == TaskState::Completed);
                let why = run
                    .end_reason
                    .as_ref()
                    .map(|r| r.message.clone())
                    .or(fallback.map(str::to_owned));
                task.status.message = why.map(|why| {
                    Message::agent(
                        format!("{}-{}", ids.task_id, "ended"),
                        &ids.task_id,
                        &ids.context_id,
                        vec![wire::Part::text(why)],
                    )
                });
            }
        }
    }
    Ok(task)
}
