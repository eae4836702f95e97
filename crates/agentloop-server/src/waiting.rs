//! Agent runs waiting for a person: what they wait for, the decisions
//! people send (recorded one by one, so a restart keeps them), resuming a
//! run once every pending call is decided, and closing the pending calls of
//! a run cancelled while it waits.
//!
//! A run whose loop suspends is stored `suspended` by the runtime (not
//! claimable), which moves its agent run to `waiting` in the same write
//! (see [`AgentRunEnding`]), before its wait is announced; its lease is
//! released and nothing executes it. The last decision wakes it: the
//! runtime moves its record back to `running` (claimable), the agent run
//! with it, and it executes again: the runtime resumes the same record in
//! place with the recorded decisions, and its events continue the run's
//! log.

use std::sync::Arc;

use agentloop_runtime::{ChatRuntime, HostedRun, RuntimeError, RuntimeResult};
use agentloop_storage::StorageResult;
use agentloop_storage::model::{AgentRun, AgentRunDecision, AgentRunStatus, now_millis};
use agentloop_types::{Decision, PendingCall, RunPhase};
use serde_json::json;

use crate::ending::{AgentRunEnding, Waited};
use crate::hosting;
use crate::run_log::run_chat;
use crate::run_tools::tools;
use crate::runner::TaskContext;
use crate::shapes::pending_json;
use crate::state::AppState;

/// Why decisions for a waiting run were refused.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    /// The run waits for nothing (it is the run as read).
    #[error("the agent run is not waiting for a decision (it is {})", .0.status.as_str())]
    NotWaiting(Box<AgentRun>),
    /// The run does not wait on this call.
    #[error("the agent run does not wait on call {0}")]
    NotPending(String),
    /// The decision does not fit the call (e.g. an answer to an approval).
    #[error("call {call_id}: {reason}")]
    Unfit {
        /// The call.
        call_id: String,
        /// What does not fit.
        reason: String,
    },
    /// The call was decided before.
    #[error("call {0} is already decided")]
    AlreadyDecided(String),
    /// Reading what the run waits for failed.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The store failed.
    #[error(transparent)]
    Storage(#[from] agentloop_storage::StorageError),
}

/// What the chat's suspended run waits for (empty when it waits for
/// nothing).
pub async fn pending_calls(
    state: &AppState,
    chat_id: &str,
) -> Result<Vec<PendingCall>, RuntimeError> {
    ChatRuntime::new(state.store.clone(), state.config.provider.clone())
        .pending(chat_id)
        .await
}

/// What an agent run waits for, with the decisions already recorded;
/// empty unless it is waiting.
pub async fn pending_of(
    state: &AppState,
    run: &AgentRun,
) -> Result<Vec<(PendingCall, Option<AgentRunDecision>)>, RuntimeError> {
    if run.status != AgentRunStatus::Waiting {
        return Ok(Vec::new());
    }
    let Some(chat_id) = run_chat(state, run).await? else {
        return Ok(Vec::new());
    };
    let pending = pending_calls(state, &chat_id).await?;
    let mut decisions = state.store.list_agent_run_decisions(&run.id).await?;
    Ok(pending
        .into_iter()
        .map(|item| {
            let decided = decisions
                .iter()
                .position(|d| d.call_id == item.call.id)
                .map(|i| decisions.swap_remove(i));
            (item, decided)
        })
        .collect())
}

/// The name of the wait agent run `run_id` is in, for a durable engine
/// that parks the run until it is woken by that name: its record's pending
/// tool step (the id of the message its results go into), its turn and
/// how many calls it made, which differ from one wait of the run to the
/// next. `None` when the record is at no tool step.
pub async fn wait_key(state: &AppState, run_id: &str) -> StorageResult<Option<String>> {
    let record = state.store.get_run(run_id).await?;
    Ok(record.state.and_then(|run| match run.phase {
        RunPhase::RunTools {
            result_message_id, ..
        } => Some(format!(
            "{result_message_id}.{}.{}",
            run.iteration, run.tool_calls
        )),
        RunPhase::CallModel | RunPhase::Finished => None,
    }))
}

/// Resumes a waiting run whose pending calls are all decided: it is
/// moved back to `running` with its record, to be executed again as the same agent run
/// ([`crate::drive::decide`] executes it). `false` when it was no longer
/// waiting (a concurrent decision resumed it, or it was cancelled).
pub async fn resume(state: &AppState, ctx: &TaskContext, run: &AgentRun) -> RuntimeResult<bool> {
    let Some(chat_id) = run_chat(state, run).await? else {
        return Ok(false);
    };
    let hosted = HostedRun {
        run_id: run.id.clone(),
        chat_id,
        decisions: Default::default(),
        ending: Some(Arc::new(AgentRunEnding::new(state.store.clone(), &run.id))),
        written: None,
    };
    // The runtime makes the record claimable, which moves the agent run
    // back to running in the same write.
    if !hosting::runtime(state, Vec::new(), None)
        .wake_hosted(&hosted)
        .await?
    {
        return Ok(false);
    }
    state.notify_run_status(&ctx.owner, &ctx.project, run, AgentRunStatus::Running);
    Ok(true)
}

/// Records `decisions` for a waiting run (each call once; a call decided
/// before is refused) and resumes it when every pending call is decided.
/// Returns whether it resumed.
pub async fn decide(
    state: &AppState,
    ctx: &TaskContext,
    run: &AgentRun,
    decisions: Vec<(String, Decision)>,
) -> Result<bool, DecideError> {
    let not_waiting = |run: &AgentRun| DecideError::NotWaiting(Box::new(run.clone()));
    if run.status != AgentRunStatus::Waiting {
        return Err(not_waiting(run));
    }
    let pending = pending_of(state, run).await?;
    if pending.is_empty() {
        return Err(not_waiting(run));
    }
    for (call_id, decision) in &decisions {
        let Some((item, decided)) = pending.iter().find(|(p, _)| &p.call.id == call_id) else {
            return Err(DecideError::NotPending(call_id.clone()));
        };
        agentloop_types::approval::check_fit(item, decision).map_err(|reason| {
            DecideError::Unfit {
                call_id: call_id.clone(),
                reason: reason.to_string(),
            }
        })?;
        if decided.is_some() {
            return Err(DecideError::AlreadyDecided(call_id.clone()));
        }
    }
    let now = now_millis();
    for (call_id, decision) in decisions {
        let recorded = AgentRunDecision {
            call_id: call_id.clone(),
            decision,
            decided_at: now,
        };
        if !state
            .store
            .add_agent_run_decision(&run.id, &recorded)
            .await?
        {
            return Err(DecideError::AlreadyDecided(call_id));
        }
    }
    let decided = state.store.list_agent_run_decisions(&run.id).await?;
    let complete = pending
        .iter()
        .all(|(item, _)| decided.iter().any(|d| d.call_id == item.call.id));
    if !complete {
        return Ok(false);
    }
    Ok(resume(state, ctx, run).await?)
}

/// Closes the pending calls of a run that ended (cancelled, or its task
/// marked done) while its chat waits for a person: each is answered as
/// cancelled, the chat's run is stored `cancelled`, and the events go to
/// the agent run's log, ending with a terminal event that says how the
/// run ended (`cancelled`, or `complete` stopped by `workflow_complete`),
/// as its record does. Nothing happens when the chat waits for nothing
/// (or another closer got there first).
pub async fn close_pending(state: &AppState, ctx: &TaskContext, run: &AgentRun) {
    if let Err(e) = try_close_pending(state, ctx, run).await {
        tracing::warn!(agent_run_id = %run.id, error = %e,
                       "the pending calls of a stopped agent run could not be closed");
    }
}

async fn try_close_pending(
    state: &AppState,
    ctx: &TaskContext,
    run: &AgentRun,
) -> Result<(), RuntimeError> {
    let Some(chat_id) = run_chat(state, run).await? else {
        return Ok(());
    };
    if pending_calls(state, &chat_id).await?.is_empty() {
        return Ok(());
    }
    let tools = tools(
        state,
        ctx,
        run.agent_type,
        Arc::new(std::sync::atomic::AtomicBool::new(false)),
    )?;
    let hosted = HostedRun {
        run_id: run.id.clone(),
        chat_id,
        decisions: Default::default(),
        ending: Some(Arc::new(AgentRunEnding::new(state.store.clone(), &run.id))),
        written: None,
    };
    // The run ended before its calls were closed: the terminal event says
    // how (cancelled, or completed by Mark Done), as the record does.
    let closing = hosting::runtime(state, tools, None)
        .cancel_waiting(hosted)
        .await;
    match closing {
        Ok(closed) => closed.outcome().await.map(drop),
        Err(RuntimeError::NotSuspended { .. } | RuntimeError::RunInProgress { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Tells the owner that a run waits for a person, once the runtime
/// stored its wait (the agent run moved to `waiting` with its record:
/// see [`AgentRunEnding`]); a run a person ended meanwhile gets its
/// pending calls closed instead.
pub async fn announce_wait(state: &AppState, ctx: &TaskContext, run: &AgentRun, waited: &Waited) {
    if waited.switched {
        tracing::info!(agent_run_id = %run.id, pending = waited.pending.len(),
                       "agent run waits for a person");
        state.notify_run_status(&ctx.owner, &ctx.project, run, waited.status);
        let decided = match state.store.list_agent_run_decisions(&run.id).await {
            Ok(decided) => decided,
            Err(e) => {
                tracing::warn!(agent_run_id = %run.id, error = %e,
                               "the decisions of a waiting run could not be read");
                Vec::new()
            }
        };
        state.notify_project(
            &ctx.owner,
            &ctx.project.id,
            json!({
                "type": "agent-run-waiting",
                "taskId": run.task_id,
                "agentRunId": run.id,
                "agentType": run.agent_type,
                "pending": waited.pending.iter().map(|item| {
                    pending_json(item, decided.iter().find(|d| d.call_id == item.call.id))
                }).collect::<Vec<_>>(),
            }),
        );
    } else if !waited.status.is_active() {
        close_pending(state, ctx, run).await;
    }
}
