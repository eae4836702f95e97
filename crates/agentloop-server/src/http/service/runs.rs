//! Agent runs: starting, deciding, cancelling, and what they show.

use agentloop_agui::FrontendToolSpec;
use agentloop_storage::model::{
    AgentRun, AgentRunDecision, AgentRunStatus, AgentType, EndReason, now_millis,
};
use agentloop_types::{Decision, PendingCall, TokenTotals};
use axum::http::StatusCode;

use crate::drive::{self, start_agent_run};
use crate::http::error::ApiError;
use crate::http::responses::{RunConflict, StartConflict};
use crate::runner::{StartError, StartInput, TaskContext, frontend_tool_specs};
use crate::shapes::{AgentRunShape, to_json};
use crate::state::AppState;
use crate::users::User;
use crate::waiting::{self, DecideError};

/// Starts an agent run of the task.
pub(super) async fn start_run(
    state: &AppState,
    ctx: &TaskContext,
    agent: AgentType,
    input: StartInput<'_>,
) -> Result<AgentRun, ApiError> {
    start_agent_run(state, ctx, agent, input)
        .await
        .map_err(start_error)
}

/// A run that could not start: a 409 naming the task's active run, or the
/// store's error.
pub(crate) fn start_error(err: StartError) -> ApiError {
    match err {
        StartError::Conflict(active) => ApiError {
            status: StatusCode::CONFLICT,
            body: to_json(&StartConflict {
                error: match active.as_deref() {
                    Some(run) if run.status == AgentRunStatus::Waiting => format!(
                        "An agent of this task is waiting for a decision (agent run {}): \
                         decide its pending calls or cancel it first",
                        run.id
                    ),
                    _ => "An agent is already running for this task".to_owned(),
                },
                running_agent: active.as_deref().map(AgentRunShape::of),
            }),
        },
        StartError::Done => ApiError {
            status: StatusCode::CONFLICT,
            body: to_json(&StartConflict {
                error: crate::runner::TASK_DONE.to_owned(),
                running_agent: None,
            }),
        },
        StartError::Storage(e) => e.into(),
    }
}

/// The task's agent runs, oldest first.
pub async fn list_runs(state: &AppState, ctx: &TaskContext) -> Result<Vec<AgentRun>, ApiError> {
    Ok(state.store.list_agent_runs(&ctx.task.id).await?)
}

/// The run as stored now.
pub async fn current_run(state: &AppState, run_id: &str) -> Result<AgentRun, ApiError> {
    Ok(state.store.get_agent_run(run_id).await?)
}

/// What a run shows beyond its record: its token totals (once it has a
/// conversation) and, while it waits, what it waits for.
pub struct RunDetails {
    /// Token totals of its conversation.
    pub tokens: Option<TokenTotals>,
    /// What it waits for, while it waits.
    pub pending: Option<Vec<(PendingCall, Option<AgentRunDecision>)>>,
}

/// The details of `run`.
pub async fn run_details(state: &AppState, run: &AgentRun) -> Result<RunDetails, ApiError> {
    let tokens = match crate::run_log::run_chat(state, run).await? {
        Some(chat_id) => Some(state.store.get_chat(&chat_id).await?.totals),
        None => None,
    };
    let pending = if run.status == AgentRunStatus::Waiting {
        Some(pending(state, run).await?)
    } else {
        None
    };
    Ok(RunDetails { tokens, pending })
}

/// What the run waits for, with the decisions recorded so far (empty
/// unless it is waiting).
pub async fn pending(
    state: &AppState,
    run: &AgentRun,
) -> Result<Vec<(PendingCall, Option<AgentRunDecision>)>, ApiError> {
    Ok(waiting::pending_of(state, run).await?)
}

/// The messages of the run's conversation.
pub async fn run_messages(
    state: &AppState,
    run: &AgentRun,
) -> Result<Vec<agentloop_storage::model::StoredMessage>, ApiError> {
    match crate::run_log::run_chat(state, run).await? {
        Some(chat_id) => Ok(state.store.list_messages(&chat_id).await?),
        None => Ok(Vec::new()),
    }
}

/// Records decisions on the calls the waiting run waits on; once every
/// call is decided the run resumes (`true`).
pub(super) async fn decide(
    state: &AppState,
    ctx: &TaskContext,
    run: &AgentRun,
    decisions: Vec<(String, Decision)>,
) -> Result<bool, ApiError> {
    Ok(drive::decide(state, ctx, run, decisions).await?)
}

/// Cancels the user's run: records it cancelled, halts it where it runs
/// here, closes what it waited on and tells its owner. A run that has
/// already ended is a 409 naming its status.
pub(super) async fn cancel_run(
    state: &AppState,
    user: &User,
    ctx: &TaskContext,
    run: &AgentRun,
) -> Result<AgentRun, ApiError> {
    let reason = EndReason::new("cancel", format!("cancelled by {}", user.name));
    let cancelled = state
        .store
        .finish_agent_run(
            &run.id,
            AgentRunStatus::Cancelled,
            now_millis(),
            Some(&reason),
        )
        .await?;
    if !cancelled {
        let current = state.store.get_agent_run(&run.id).await?;
        return Err(ApiError {
            status: StatusCode::CONFLICT,
            body: to_json(&RunConflict {
                error: format!("the agent run is already {}", current.status.as_str()),
                agent_run: Some(AgentRunShape::of(&current)),
            }),
        });
    }
    if let Some(local) = state.local_run(&run.id) {
        local.halt(crate::state::Halt::Cancel);
    }
    waiting::close_pending(state, ctx, run).await;
    drive::cancel_in_engine(state, &run.id).await;
    state.notify_run_status(&ctx.owner, &ctx.project, run, AgentRunStatus::Cancelled);
    Ok(state.store.get_agent_run(&run.id).await?)
}

/// The task's latest agent run waiting for a decision, if one does.
pub async fn waiting_run(
    state: &AppState,
    ctx: &TaskContext,
) -> Result<Option<AgentRun>, ApiError> {
    Ok(list_runs(state, ctx)
        .await?
        .into_iter()
        .rev()
        .find(|run| run.status == AgentRunStatus::Waiting))
}

/// The task's agent run that is executing (not waiting), if one is.
pub async fn running_run(
    state: &AppState,
    ctx: &TaskContext,
) -> Result<Option<AgentRun>, ApiError> {
    Ok(state
        .store
        .active_agent_run(&ctx.task.id)
        .await?
        .filter(|run| run.status == AgentRunStatus::Running))
}

/// The front-end tools the run was started with.
pub async fn offered_frontend_tools(
    state: &AppState,
    run: &AgentRun,
) -> Result<Vec<FrontendToolSpec>, ApiError> {
    let Some(chat_id) = crate::run_log::run_chat(state, run).await? else {
        return Ok(Vec::new());
    };
    let chat = state.store.get_chat(&chat_id).await?;
    Ok(frontend_tool_specs(&chat.settings))
}

/// The seq of the run's last stored event.
pub async fn last_seq(state: &AppState, run_id: &str) -> Result<Option<u64>, ApiError> {
    const PAGE: u32 = 500;
    let mut after = None;
    loop {
        let events = state.store.list_events(run_id, after, PAGE).await?;
        match events.last() {
            Some(last) => after = Some(last.seq),
            None => return Ok(after),
        }
        if events.len() < PAGE as usize {
            return Ok(after);
        }
    }
}

/// The record of the run the agent run executes (its result once ended).
pub async fn run_record(
    state: &AppState,
    run_id: &str,
) -> Result<agentloop_storage::model::RunRecord, ApiError> {
    Ok(state.store.get_run(run_id).await?)
}

impl From<DecideError> for ApiError {
    fn from(err: DecideError) -> Self {
        match err {
            DecideError::NotWaiting(run) => ApiError {
                status: StatusCode::CONFLICT,
                body: to_json(&RunConflict {
                    error: format!(
                        "the agent run is not waiting for a decision (it is {})",
                        run.status.as_str()
                    ),
                    agent_run: Some(AgentRunShape::of(&run)),
                }),
            },
            DecideError::NotPending(_) | DecideError::Unfit { .. } => {
                ApiError::bad_request(err.to_string())
            }
            DecideError::AlreadyDecided(_) => ApiError::new(StatusCode::CONFLICT, err.to_string()),
            DecideError::Runtime(e) => e.into(),
            DecideError::Storage(e) => e.into(),
        }
    }
}
