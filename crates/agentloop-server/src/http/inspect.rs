//! The run inspector's routes: `GET /api/agent-runs/{runId}/inspection`
//! (the run step by step, see [`crate::inspect`]), `GET
//! /api/agent-runs/{runId}/steps/{seq}/eval-case` (a step as an
//! `agentloop eval` dataset) and `GET
//! /api/agent-runs/{runId}/queued-messages` (messages sent to the run it
//! has not taken yet). Another user's run is a 404.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use agentloop_runtime::{ChatSettings, ProjectSettings, build_loop_options};
use agentloop_storage::model::{AgentRun, Chat};
use agentloop_storage::{RunStep, StorageError};
use agentloop_types::{Message, RequestOptions, ToolDefinition};
use axum::Json;
use axum::extract::{Path, State};
use schemars::JsonSchema;
use serde::Serialize;

use super::error::ApiError;
use super::extract::{AuthUser, check_id};
use super::service;
use crate::inspect::eval_case::{EvalDataset, case_at};
use crate::inspect::{RunInspection, Stored, inspect};
use crate::runner::TaskContext;
use crate::state::AppState;

/// `GET /api/agent-runs/{runId}/inspection`.
pub(super) async fn inspection(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(run_id): Path<String>,
) -> Result<Json<RunInspection>, ApiError> {
    check_id(&run_id, "agent run")?;
    let (run, ctx) = service::owned_run(&state, &user, &run_id).await?;
    let steps = state.store.list_steps(&run.id).await?;
    let chat = run_chat(&state, &run).await?;
    let history = history(&state, &run, chat.as_ref(), &steps).await?;
    let options = request_options(&state, &ctx, chat.as_ref())?;
    let tools = offered_tools(&state, &ctx, &run, chat.as_ref(), &options);
    let stored = Stored {
        steps: &steps,
        history: &history,
        totals: chat.as_ref().map(|c| c.totals).unwrap_or_default(),
        ended_at: run.completed_at,
    };
    Ok(Json(inspect(
        &run.id,
        &stored,
        &options.request_options,
        &tools,
    )))
}

/// `GET /api/agent-runs/{runId}/steps/{seq}/eval-case`.
pub(super) async fn eval_case(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path((run_id, seq)): Path<(String, String)>,
) -> Result<Json<EvalDataset>, ApiError> {
    check_id(&run_id, "agent run")?;
    let seq: u64 = seq
        .parse()
        .map_err(|_| ApiError::bad_request("The step's seq is not a whole number"))?;
    let (run, ctx) = service::owned_run(&state, &user, &run_id).await?;
    let step = match state.store.get_step(&run.id, seq).await {
        Ok(step) => step,
        Err(StorageError::NotFound { .. }) => {
            return Err(ApiError::not_found(format!(
                "The run keeps no step at seq {seq}"
            )));
        }
        Err(e) => return Err(e.into()),
    };
    let chat = run_chat(&state, &run).await?;
    let history = history(&state, &run, chat.as_ref(), std::slice::from_ref(&step)).await?;
    let count = usize::try_from(step.message_count).unwrap_or(usize::MAX);
    let messages = history.get(..count.min(history.len())).unwrap_or_default();
    let options = request_options(&state, &ctx, chat.as_ref())?;
    let dataset = case_at(
        &run.id,
        seq,
        messages,
        options.request_options.system_prompt.as_deref(),
    )
    .map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok(Json(dataset))
}

/// `GET /api/agent-runs/{runId}/queued-messages`: the messages sent to the
/// run that it has not taken yet, oldest first.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct QueuedMessages {
    /// The messages, as sent.
    pub messages: Vec<Message>,
}

pub(super) async fn queued_messages(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(run_id): Path<String>,
) -> Result<Json<QueuedMessages>, ApiError> {
    check_id(&run_id, "agent run")?;
    let (run, _) = service::owned_run(&state, &user, &run_id).await?;
    let messages = match crate::run_log::run_chat(&state, &run).await? {
        Some(chat_id) => state.store.queued_messages(&chat_id).await?,
        None => Vec::new(),
    };
    Ok(Json(QueuedMessages { messages }))
}

/// The run's chat, if it has one yet.
async fn run_chat(state: &AppState, run: &AgentRun) -> Result<Option<Chat>, ApiError> {
    match crate::run_log::run_chat(state, run).await? {
        Some(chat_id) => Ok(Some(state.store.get_chat(&chat_id).await?)),
        None => Ok(None),
    }
}

/// The run's whole history: its record's latest state's when that holds
/// every step's messages (an ended run's record may keep none), else its
/// chat's.
async fn history(
    state: &AppState,
    run: &AgentRun,
    chat: Option<&Chat>,
    steps: &[RunStep],
) -> Result<Vec<Message>, ApiError> {
    let needed = steps.iter().map(|s| s.message_count).max().unwrap_or(0);
    let recorded = match state.store.get_run(&run.id).await {
        Ok(record) => record.state.map(|latest| latest.messages.to_vec()),
        Err(StorageError::NotFound { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    if let Some(messages) = &recorded
        && !messages.is_empty()
        && messages.len() as u64 >= needed
    {
        return Ok(recorded.unwrap_or_default());
    }
    let chat_messages: Vec<Message> = match chat {
        Some(chat) => state
            .store
            .list_messages(&chat.id)
            .await?
            .into_iter()
            .map(|m| m.message)
            .collect(),
        None => Vec::new(),
    };
    let recorded = recorded.unwrap_or_default();
    Ok(if chat_messages.len() >= recorded.len() {
        chat_messages
    } else {
        recorded
    })
}

/// The request options of the run's model calls and the tools it is
/// restricted to, as its project's and chat's settings say now.
struct RunOptions {
    request_options: RequestOptions,
    enabled_tools: Vec<String>,
}

fn request_options(
    state: &AppState,
    ctx: &TaskContext,
    chat: Option<&Chat>,
) -> Result<RunOptions, ApiError> {
    let project = ProjectSettings::from_value(&ctx.project.id, &ctx.project.settings)?;
    let chat_settings = match chat {
        Some(chat) => ChatSettings::from_value(&chat.id, &chat.settings)?,
        None => ChatSettings::default(),
    };
    let options = build_loop_options(
        &ctx.project.id,
        chat.map(|c| c.id.as_str()),
        &project,
        &chat_settings,
    );
    let mut request_options = options.request;
    if request_options.model.is_empty() {
        request_options.model = state.config.model.clone();
    }
    Ok(RunOptions {
        request_options,
        enabled_tools: options.enabled_tools,
    })
}

/// The definitions of the tools the run's model calls are offered; none
/// of the server's when they cannot be built now (the project's folder is
/// gone), which leaves the rest of the inspection readable.
fn offered_tools(
    state: &AppState,
    ctx: &TaskContext,
    run: &AgentRun,
    chat: Option<&Chat>,
    options: &RunOptions,
) -> Vec<ToolDefinition> {
    let mut tools =
        crate::run_tools::tools(state, ctx, run.agent_type, Arc::new(AtomicBool::new(false)))
            .unwrap_or_default();
    if let Some(chat) = chat {
        let frontend = crate::run_tools::frontend_tools(&chat.settings, &tools);
        tools.extend(frontend);
    }
    tools
        .iter()
        .map(|tool| tool.definition())
        .filter(|tool| {
            options.enabled_tools.is_empty() || options.enabled_tools.contains(&tool.name)
        })
        .collect()
}
