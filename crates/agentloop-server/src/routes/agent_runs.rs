//! Agent runs: start one (seed 004's POST), list, read, cancel; what a
//! waiting run waits for and the decisions that resume it.

use agentloop_storage::StorageError;
use agentloop_storage::model::{AgentRun, AgentRunStatus, AgentType, EndReason, now_millis};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde_json::{Value, json};

use super::tasks::owned_task;
use super::{ApiJson, AuthUser, agent_run_json, check_id};
use crate::error::ApiError;
use crate::runner::{StartError, TaskContext, start_agent_run};
use crate::state::AppState;
use crate::users::User;
use crate::waiting;

const INVALID_TYPE: &str =
    "Invalid agent type. Must be one of: planification, implementation, review";

/// The user's agent run with its task, or 404.
pub async fn owned_run(
    state: &AppState,
    user: &User,
    run_id: &str,
) -> Result<(AgentRun, TaskContext), ApiError> {
    check_id(run_id, "agent run")?;
    let run = match state.store.get_agent_run(run_id).await {
        Ok(run) => run,
        Err(StorageError::NotFound { .. }) => {
            return Err(ApiError::not_found("Agent run not found"));
        }
        Err(e) => return Err(e.into()),
    };
    match owned_task(state, user, &run.task_id).await {
        Ok(ctx) => Ok((run, ctx)),
        Err(e) if e.status == StatusCode::NOT_FOUND => {
            Err(ApiError::not_found("Agent run not found"))
        }
        Err(e) => Err(e),
    }
}

pub(super) async fn create(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(task_id): Path<String>,
    ApiJson(body): ApiJson,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    check_id(&task_id, "task")?;
    let agent = body
        .get("agentType")
        .and_then(Value::as_str)
        .and_then(AgentType::parse)
        .ok_or_else(|| ApiError::bad_request(INVALID_TYPE))?;
    let ctx = owned_task(&state, &user, &task_id).await?;
    match start_agent_run(&state, &ctx, agent).await {
        Ok(run) => Ok((StatusCode::CREATED, Json(agent_run_json(&run)))),
        Err(StartError::Conflict(active)) => Err(ApiError {
            status: StatusCode::CONFLICT,
            body: json!({
                "error": match active.as_deref() {
                    Some(run) if run.status == AgentRunStatus::Waiting => format!(
                        "An agent of this task is waiting for a decision (agent run {}): \
                         decide its pending calls or cancel it first",
                        run.id
                    ),
                    _ => "An agent is already running for this task".to_owned(),
                },
                "runningAgent": active.as_deref().map(agent_run_json),
            }),
        }),
        Err(StartError::Storage(e)) => Err(e.into()),
    }
}

pub(super) async fn list(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(task_id): Path<String>,
) -> Result<Json<Vec<Value>>, ApiError> {
    let ctx = owned_task(&state, &user, &task_id).await?;
    let runs = state.store.list_agent_runs(&ctx.task.id).await?;
    let mut listed = Vec::with_capacity(runs.len());
    for run in &runs {
        listed.push(agent_run_view(&state, run).await?);
    }
    Ok(Json(listed))
}

/// An agent run as the API shows it, with `pending` (what it waits for,
/// see [`waiting::pending_json`]) when it is waiting.
pub async fn agent_run_view(state: &AppState, run: &AgentRun) -> Result<Value, ApiError> {
    let mut value = agent_run_json(run);
    value["tokens"] = match run_chat(state, run).await? {
        Some(chat_id) => json!(state.store.get_chat(&chat_id).await?.totals),
        None => Value::Null,
    };
    if run.status == AgentRunStatus::Waiting {
        value["pending"] = pending_list(state, run).await?;
    }
    Ok(value)
}

/// The chat an agent run's conversation is held in, once it has one.
async fn run_chat(state: &AppState, run: &AgentRun) -> Result<Option<String>, ApiError> {
    let Some(conversation_id) = &run.conversation_id else {
        return Ok(None);
    };
    Ok(state.store.get_conversation(conversation_id).await?.chat_id)
}

async fn pending_list(state: &AppState, run: &AgentRun) -> Result<Value, ApiError> {
    let pending = waiting::pending_of(state, run).await?;
    Ok(Value::Array(
        pending
            .iter()
            .map(|(item, decided)| waiting::pending_json(item, decided.as_ref()))
            .collect(),
    ))
}

/// `GET /api/agent-runs/{id}/pending`: what the run waits for (empty
/// unless it is waiting).
pub(super) async fn pending(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(run_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let (run, _) = owned_run(&state, &user, &run_id).await?;
    Ok(Json(json!({
        "agent_run": agent_run_json(&run),
        "pending": pending_list(&state, &run).await?,
    })))
}

/// `POST /api/agent-runs/{id}/decisions`: records decisions on the calls
/// a waiting run waits on; once every call is decided the run resumes.
pub(super) async fn decisions(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(run_id): Path<String>,
    ApiJson(body): ApiJson,
) -> Result<Json<Value>, ApiError> {
    let (run, ctx) = owned_run(&state, &user, &run_id).await?;
    let decisions = waiting::parse_decisions(&body)?;
    let resumed = waiting::decide(&state, &ctx, &run, decisions).await?;
    let run = state.store.get_agent_run(&run.id).await?;
    Ok(Json(json!({
        "agent_run": agent_run_json(&run),
        "pending": pending_list(&state, &run).await?,
        "resumed": resumed,
    })))
}

pub(super) async fn get_one(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(run_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let (run, _) = owned_run(&state, &user, &run_id).await?;
    Ok(Json(agent_run_view(&state, &run).await?))
}

pub(super) async fn messages(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(run_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let (run, _) = owned_run(&state, &user, &run_id).await?;
    let Some(chat_id) = run_chat(&state, &run).await? else {
        return Ok(Json(json!([])));
    };
    let messages = state.store.list_messages(&chat_id).await?;
    Ok(Json(serde_json::to_value(messages).map_err(|e| {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
    })?))
}

pub(super) async fn cancel(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(run_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let (run, ctx) = owned_run(&state, &user, &run_id).await?;
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
            body: json!({
                "error": format!("the agent run is already {}", current.status.as_str()),
                "agentRun": agent_run_json(&current),
            }),
        });
    }
    if let Some(local) = state.local_run(&run.id) {
        local.cancel.cancel();
    }
    waiting::close_pending(&state, &ctx, &run).await;
    state.notify_run_status(&ctx.owner, &run, AgentRunStatus::Cancelled);
    let run = state.store.get_agent_run(&run.id).await?;
    Ok(Json(agent_run_json(&run)))
}
