//! Forking an agent run at one of its kept steps: a new agent run of the
//! same task and agent, with its own id, chat, conversation and log, whose
//! history is the original's up to that step (see
//! [`agentloop_runtime::fork`]); the original is only read. The fork is
//! written in one start (the agent run, its conversation, its chat with
//! the step's first message and its record holding the step's state,
//! under this instance's lease), then the step's other messages and the
//! original's log up to the step; then it executes as a run taken over
//! does, from its record's state.
//!
//! A task has one active agent run: a fork of a run whose task has one
//! going or waiting is refused, as a start is, and so is one of a task
//! marked done.

use agentloop_runtime::{ForkPlan, RuntimeError};
use agentloop_storage::model::{
    AgentRun, AgentRunStart, AgentRunStatus, AgentType, Chat, Conversation, RunStatus, now_millis,
};
use agentloop_storage::{RuntimeStore, StorageError};

use crate::runner::{StartError, TaskContext};
use crate::state::AppState;

/// Why a fork was not made.
#[derive(Debug, thiserror::Error)]
pub enum ForkError {
    /// The seq is not one of the run's steps, or a prompt was given at a
    /// step that runs tools next.
    #[error(transparent)]
    Step(RuntimeError),
    /// The task has an active agent run, or is marked done.
    #[error(transparent)]
    Start(#[from] StartError),
    /// The run's records could not be read or written.
    #[error(transparent)]
    Runtime(RuntimeError),
    /// The project's folder could not be put back as it was at the step.
    #[error(transparent)]
    Files(#[from] crate::run_files::RunFilesError),
}

impl From<StorageError> for ForkError {
    fn from(error: StorageError) -> Self {
        Self::Runtime(error.into())
    }
}

impl From<RuntimeError> for ForkError {
    fn from(error: RuntimeError) -> Self {
        match error {
            RuntimeError::NotAStep { .. } | RuntimeError::ForkPrompt { .. } => Self::Step(error),
            other => Self::Runtime(other),
        }
    }
}

/// Forks agent run `original` of the task of `ctx` at its step `at`,
/// with `prompt` added when given, and starts executing the fork; with
/// `restore_files`, the project's folder is first put back as it was at
/// the step.
pub async fn fork_agent_run(
    state: &AppState,
    ctx: &TaskContext,
    original: &AgentRun,
    at: u64,
    prompt: Option<&str>,
    restore_files: bool,
) -> Result<AgentRun, ForkError> {
    if ctx.task.workflow_complete {
        return Err(StartError::Done.into());
    }
    let store: &dyn RuntimeStore = &*state.store;
    let plan = ForkPlan::read(store, &original.id, at, prompt).await?;
    if restore_files {
        // Not under a run of the task. (One started between this check and
        // the fork's start refuses the fork, the folder restored.)
        if let Some(active) = state.store.active_agent_run(&ctx.task.id).await? {
            return Err(StartError::Conflict(Some(Box::new(active))).into());
        }
        crate::run_files::restore(state, ctx, &original.id, at).await?;
    }
    let source = store.get_run(&original.id).await?;
    let corrupt = |message: &str| {
        ForkError::Runtime(RuntimeError::CorruptRun {
            run_id: original.id.clone(),
            message: message.to_owned(),
        })
    };
    let Some(chat_id) = source.chat_id.as_deref() else {
        return Err(corrupt("its record names no chat"));
    };
    let Some(first_message) = plan.state.messages.first().cloned() else {
        return Err(corrupt("the step holds no message"));
    };
    let original_chat = store.get_chat(chat_id).await?;
    let now = now_millis();
    let run_id = crate::ids::new_id();
    let chat = Chat {
        id: crate::ids::new_id(),
        title: format!("{} (fork of {} at {at})", original_chat.title, original.id),
        totals: plan.state.totals,
        minion: None,
        created_at: now,
        updated_at: now,
        ..original_chat
    };
    let conversation = Conversation {
        id: crate::ids::new_id(),
        task_id: ctx.task.id.clone(),
        chat_id: Some(chat.id.clone()),
        session_id: None,
        created_at: now,
    };
    let agent_run = AgentRun {
        id: run_id.clone(),
        task_id: ctx.task.id.clone(),
        agent_type: original.agent_type,
        status: AgentRunStatus::Running,
        conversation_id: Some(conversation.id.clone()),
        created_at: now,
        completed_at: None,
        end_reason: None,
    };
    // Under this instance's lease (when it executes runs itself), so no
    // other instance takes the fork up before it is whole.
    let leased = state.config.dispatch.is_none();
    let hosted =
        crate::hosting::runtime(state, Vec::new(), None).hosted_record(&run_id, &chat.id, leased);
    let mut record = plan.record(&run_id, &chat.id, now)?;
    record.status = RunStatus::Running;
    record.result = None;
    record.lease_owner = hosted.lease_owner;
    record.lease_expires_at = hosted.lease_expires_at;
    // A person forks: as their start, the fork begins a new chain of the
    // task and has the request's audit entry written with it.
    let audit = crate::audit::StartEntry::pending(&ctx.project.id, &run_id, now);
    let start = AgentRunStart {
        begins_chain: agent_run.agent_type != AgentType::Planification,
        audit: audit.as_ref().map(|pending| pending.entry.clone()),
        agent_run,
        chat,
        first_message,
        conversation,
        record,
        schedule_id: None,
    };
    match state.store.start_agent_run(&start).await {
        Ok(()) => {
            if let Some(pending) = audit {
                pending.written();
            }
        }
        Err(StorageError::ActiveAgentRunExists { .. }) => {
            let active = state.store.active_agent_run(&ctx.task.id).await?;
            return Err(StartError::Conflict(active.map(Box::new)).into());
        }
        Err(e) => return Err(e.into()),
    }
    plan.save_messages(store, &start.chat.id, 1).await?;
    plan.copy_log(store, &run_id).await?;
    let agent_run = start.agent_run;
    state.notify_run_status(&ctx.owner, &ctx.project, &agent_run, agent_run.status);
    crate::drive::execute(state, &run_id).await;
    Ok(agent_run)
}
