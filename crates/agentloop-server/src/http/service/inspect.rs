//! The run inspector's use cases: a run's kept steps, the run step by
//! step (see [`crate::inspect`]), a step as an `agentloop eval` dataset,
//! and the messages sent to a run it has not taken yet.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use agentloop_runtime::{ChatSettings, ProjectSettings, build_loop_options};
use agentloop_storage::model::{AgentRun, Chat, User};
use agentloop_storage::{ProjectRole, RunStep, StorageError};
use agentloop_tools::checkpoint::TakenReader;
use agentloop_types::{Message, RequestOptions, SteerStrategy, ToolDefinition};
use schemars::JsonSchema;
use serde::Serialize;

use super::owned::owned_run;
use crate::http::error::ApiError;
use crate::inspect::eval_case::{EvalDataset, case_at};
use crate::inspect::logged::LogReader;
use crate::inspect::redact::redact_text;
use crate::inspect::{FolderChanges, RunInspection, Stored, inspect};
use crate::runner::TaskContext;
use crate::state::AppState;

/// The steps agent run `run_id` keeps, oldest first, for a user who may
/// read it.
pub async fn run_steps(
    state: &AppState,
    user: &User,
    run_id: &str,
) -> Result<Vec<RunStep>, ApiError> {
    let (run, _) = owned_run(state, user, run_id, ProjectRole::Viewer).await?;
    Ok(state.store.list_steps(&run.id).await?)
}

/// Agent run `run_id` step by step, for a user who may read it.
pub async fn inspect_run(
    state: &AppState,
    user: &User,
    run_id: &str,
) -> Result<RunInspection, ApiError> {
    let (run, ctx) = owned_run(state, user, run_id, ProjectRole::Viewer).await?;
    let steps = state.store.list_steps(&run.id).await?;
    let chat = run_chat(state, &run).await?;
    let history = history(state, &run, chat.as_ref(), &steps).await?;
    let options = request_options(state, &ctx, chat.as_ref())?;
    let tools = offered_tools(state, &ctx, &run, chat.as_ref(), &options);
    // The log is read once, for the requests and durations it records
    // and the file checkpoints it names.
    let mut requests = LogReader::default();
    let mut checkpoints = TakenReader::default();
    crate::run_files::read_log(state, &run.id, |page| {
        requests.read(page);
        checkpoints.read(page);
    })
    .await?;
    let logged = requests.finish();
    let stored = Stored {
        steps: &steps,
        history: &history,
        totals: chat.as_ref().map(|c| c.totals).unwrap_or_default(),
        ended_at: run.completed_at,
        logged: &logged,
    };
    let mut inspection = inspect(&run.id, &stored, &options.request_options, &tools);
    let seqs: Vec<u64> = steps.iter().map(|s| s.seq).collect();
    let changed = crate::run_files::step_changes(state, &ctx, checkpoints.finish(), &seqs).await?;
    for step_changes in changed {
        let Some(step) = inspection
            .steps
            .iter_mut()
            .find(|s| s.seq == step_changes.seq)
        else {
            continue;
        };
        step.folder_changes = Some(FolderChanges {
            until: step_changes.until,
            changes: step_changes
                .changes
                .into_iter()
                .map(|mut change| {
                    change.diff = change.diff.as_deref().map(redact_text);
                    change.summary = change.summary.as_deref().map(redact_text);
                    change
                })
                .collect(),
        });
    }
    Ok(inspection)
}

/// The step of agent run `run_id` at `seq` (as the path has it) as an
/// `agentloop eval` dataset of one case, for a user who may read the run
/// (whose access is checked before the seq is read).
pub async fn eval_case(
    state: &AppState,
    user: &User,
    run_id: &str,
    seq: &str,
) -> Result<EvalDataset, ApiError> {
    let (run, ctx) = owned_run(state, user, run_id, ProjectRole::Viewer).await?;
    let seq: u64 = seq
        .parse()
        .map_err(|_| ApiError::bad_request("The step's seq is not a whole number"))?;
    let step = match state.store.get_step(&run.id, seq).await {
        Ok(step) => step,
        Err(StorageError::NotFound { .. }) => {
            return Err(ApiError::not_found(format!(
                "The run keeps no step at seq {seq}"
            )));
        }
        Err(e) => return Err(e.into()),
    };
    let chat = run_chat(state, &run).await?;
    let history = history(state, &run, chat.as_ref(), std::slice::from_ref(&step)).await?;
    let count = usize::try_from(step.message_count).unwrap_or(usize::MAX);
    let messages = history.get(..count.min(history.len())).unwrap_or_default();
    let options = request_options(state, &ctx, chat.as_ref())?;
    case_at(
        &run.id,
        seq,
        messages,
        options.request_options.system_prompt.as_deref(),
    )
    .map_err(|e| ApiError::bad_request(e.to_string()))
}

/// `GET /api/agent-runs/{runId}/queued-messages`: the messages sent to the
/// run that it has not taken yet, oldest first.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct QueuedMessages {
    /// The messages, oldest first.
    pub messages: Vec<Queued>,
}

/// A message sent to a run that it has not taken yet.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Queued {
    /// The message, as sent.
    pub message: Message,
    /// How it was sent: `enqueue` (for the run's next step) or
    /// `interrupt` (the step then in flight was asked to stop for it).
    pub strategy: SteerStrategy,
    /// When it arrived (Unix ms).
    pub queued_at: i64,
}

/// The messages sent to agent run `run_id` that it has not taken yet, for
/// a user who may read the run.
pub async fn queued_messages(
    state: &AppState,
    user: &User,
    run_id: &str,
) -> Result<QueuedMessages, ApiError> {
    let (run, _) = owned_run(state, user, run_id, ProjectRole::Viewer).await?;
    let queued = match crate::run_log::run_chat(state, &run).await? {
        Some(chat_id) => state.store.queued_messages(&chat_id).await?,
        None => Vec::new(),
    };
    let messages = queued
        .into_iter()
        .map(|q| Queued {
            message: q.message,
            strategy: q.strategy,
            queued_at: q.queued_at,
        })
        .collect();
    Ok(QueuedMessages { messages })
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
