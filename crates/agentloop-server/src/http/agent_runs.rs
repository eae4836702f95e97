//! Agent runs: start one (seed 004's POST), list, read, cancel; what a
//! waiting run waits for and the decisions that resume it.

use agentloop_storage::StorageError;
use agentloop_storage::model::{AgentRun, AgentRunStatus, AgentType, EndReason, now_millis};
use agentloop_types::Decision;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Map, Value, json};

use super::error::ApiError;
use super::extract::{ApiJson, AuthUser, check_id};
use super::tasks::owned_task;
use crate::drive::{decide, start_agent_run};
use crate::runner::{RunInput, StartError, TaskContext};
use crate::shapes::{agent_run_json, pending_json};
use crate::state::AppState;
use crate::users::User;
use crate::waiting::{self, DecideError};

/// The agent run routes (their event streams aside, in [`super::events`]).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/tasks/{task_id}/agent-runs", get(list).post(create))
        .route("/api/agent-runs/{run_id}", get(get_one))
        .route("/api/agent-runs/{run_id}/messages", get(messages))
        .route("/api/agent-runs/{run_id}/cancel", post(cancel))
        .route("/api/agent-runs/{run_id}/pending", get(pending))
        .route("/api/agent-runs/{run_id}/decisions", post(decisions))
}

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
    let run = start_agent_run(&state, &ctx, agent, RunInput::default())
        .await
        .map_err(start_error)?;
    Ok((StatusCode::CREATED, Json(agent_run_json(&run))))
}

/// A run that could not start: a 409 naming the task's active run, or the
/// store's error.
pub(super) fn start_error(err: StartError) -> ApiError {
    match err {
        StartError::Conflict(active) => ApiError {
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
        },
        StartError::Done => ApiError {
            status: StatusCode::CONFLICT,
            body: json!({ "error": crate::runner::TASK_DONE, "runningAgent": null }),
        },
        StartError::Storage(e) => e.into(),
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
/// see [`pending_json`]) when it is waiting.
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
            .map(|(item, decided)| pending_json(item, decided.as_ref()))
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
    let decisions = parse_decisions(&body)?;
    let resumed = decide(&state, &ctx, &run, decisions).await?;
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
    let run = cancel_run(&state, &user, &ctx, &run).await?;
    Ok(Json(agent_run_json(&run)))
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
            body: json!({
                "error": format!("the agent run is already {}", current.status.as_str()),
                "agentRun": agent_run_json(&current),
            }),
        });
    }
    if let Some(local) = state.local_run(&run.id) {
        local.halt(crate::state::Halt::Cancel);
    }
    waiting::close_pending(state, ctx, run).await;
    crate::drive::cancel_in_engine(state, &run.id).await;
    state.notify_run_status(&ctx.owner, &ctx.project, run, AgentRunStatus::Cancelled);
    Ok(state.store.get_agent_run(&run.id).await?)
}

impl From<DecideError> for ApiError {
    fn from(err: DecideError) -> Self {
        match err {
            DecideError::NotWaiting(run) => ApiError {
                status: StatusCode::CONFLICT,
                body: json!({
                    "error": format!("the agent run is not waiting for a decision (it is {})",
                                     run.status.as_str()),
                    "agentRun": agent_run_json(&run),
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

/// The reason a model reads when a person rejects a call without saying
/// why.
const DEFAULT_REJECTION: &str = "the user rejected this call";

/// Parses `{"decisions": [{"call_id", "decision", ...}, ...]}`: at least
/// one decision, each call once, no unknown fields.
pub(super) fn parse_decisions(
    body: &Map<String, Value>,
) -> Result<Vec<(String, Decision)>, ApiError> {
    if let Some(key) = body.keys().find(|k| k.as_str() != "decisions") {
        return Err(ApiError::bad_request(format!("unknown field {key:?}")));
    }
    let items = match body.get("decisions") {
        Some(Value::Array(items)) if !items.is_empty() => items,
        Some(Value::Array(_)) => {
            return Err(ApiError::bad_request("decisions must not be empty"));
        }
        _ => return Err(ApiError::bad_request("decisions must be an array")),
    };
    let mut parsed: Vec<(String, Decision)> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let (call_id, decision) =
            parse_one(item).map_err(|m| ApiError::bad_request(format!("decisions[{i}]: {m}")))?;
        if parsed.iter().any(|(id, _)| *id == call_id) {
            return Err(ApiError::bad_request(format!(
                "decisions[{i}]: call {call_id} is decided twice"
            )));
        }
        parsed.push((call_id, decision));
    }
    Ok(parsed)
}

fn parse_one(item: &Value) -> Result<(String, Decision), String> {
    let Value::Object(item) = item else {
        return Err("a decision must be an object".to_owned());
    };
    let call_id = match item.get("call_id") {
        Some(Value::String(id)) if !id.is_empty() => id.clone(),
        _ => return Err("call_id must be a non-empty string".to_owned()),
    };
    let kind = item
        .get("decision")
        .and_then(Value::as_str)
        .ok_or("decision must be one of approve, approve_always, reject, answer")?;
    let allowed: &[&str] = match kind {
        "approve" => &["arguments"],
        "approve_always" => &[],
        "reject" => &["reason"],
        "answer" => &["text"],
        other => {
            return Err(format!(
                "unknown decision {other:?} (approve, approve_always, reject or answer)"
            ));
        }
    };
    if let Some(key) = item
        .keys()
        .find(|k| !matches!(k.as_str(), "call_id" | "decision") && !allowed.contains(&k.as_str()))
    {
        return Err(format!("{key} does not go with decision {kind}"));
    }
    let decision = match kind {
        "approve" => Decision::Approve {
            arguments: match item.get("arguments") {
                None | Some(Value::Null) => None,
                Some(args @ Value::Object(_)) => Some(args.clone()),
                Some(_) => return Err("arguments must be a JSON object".to_owned()),
            },
        },
        "approve_always" => Decision::ApproveAlways,
        "reject" => Decision::Reject {
            reason: match item.get("reason") {
                None | Some(Value::Null) => DEFAULT_REJECTION.to_owned(),
                Some(Value::String(reason)) if !reason.trim().is_empty() => reason.clone(),
                Some(Value::String(_)) => DEFAULT_REJECTION.to_owned(),
                Some(_) => return Err("reason must be a string".to_owned()),
            },
        },
        _ => Decision::Answer {
            text: match item.get("text") {
                // An empty answer tells the model nothing; a person who
                // means "no answer" rejects the question instead.
                Some(Value::String(text)) if !text.trim().is_empty() => text.clone(),
                Some(Value::String(_)) => {
                    return Err("text must not be empty (reject the question to leave \
                                it unanswered)"
                        .to_owned());
                }
                _ => return Err("text must be a string".to_owned()),
            },
        },
    };
    Ok((call_id, decision))
}
