//! Executing an agent run for an outside durable engine (see
//! [`crate::dispatch`]), one step at a time: each attempt executes the
//! run here from where its record stands, exactly as the lease scheduler
//! executes it ([`crate::drive::drive_paced`]), but stops after one step (a
//! model turn or a tool step) once that step's state is stored
//! ([`Pace::OneStep`]). The engine journals each attempt's answer and
//! asks for the next step; it retries an attempt that settled nothing, on
//! this instance or another, and that attempt goes on from the last
//! stored state (calls that had started and have no result are answered
//! as interrupted, as in any recovery).
//!
//! A run that waits for a person is answered with the name of its wait
//! ([`crate::waiting::wait_key`]); the engine parks it until the last
//! decision wakes it by that name ([`crate::dispatch::RunDispatch::wake`]).
//! A run the engine itself cancelled is ended by [`stop_attempt`].

use agentloop_storage::model::{AgentRunStatus, EndReason, RunStatus, now_millis};

use crate::hosting::Pace;
use crate::runner::load_task_context;
use crate::state::{AppState, Halt};

/// Where a run stands after an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// One step was executed and stored; the run goes on.
    Stepped,
    /// The run ended (its terminal event, record and agent run written).
    Ended,
    /// The run waits for a person, on the wait of this name.
    Waiting(String),
}

/// Executes agent run `run_id` here, from where its record stands, and
/// says where it stands after. An error means the attempt did not settle
/// the run (another instance still holds its lease, this instance is
/// shutting down, the store failed, its end is not logged yet): the
/// engine tries again.
pub async fn execute_attempt(state: &AppState, run_id: &str) -> Result<Attempt, String> {
    if state.shutdown.is_cancelled() {
        return Err("this instance is shutting down".to_owned());
    }
    // A task of its own: the engine may drop its call (its connection to
    // this worker broke, Restate restarted), and a step dropped midway
    // would leave the run registered here; the task takes the step to its
    // checkpoint and lets go of the run, and the engine's retry finds it
    // free.
    let step = tokio::spawn({
        let state = state.clone();
        let run_id = run_id.to_owned();
        async move { crate::drive::drive_paced(&state, &run_id, Pace::OneStep).await }
    });
    if step
        .await
        .map_err(|e| format!("the step of agent run {run_id} failed: {e}"))?
    {
        return Ok(Attempt::Stepped);
    }
    let store = &*state.store;
    let run = store
        .get_agent_run(run_id)
        .await
        .map_err(|e| e.to_string())?;
    match run.status {
        AgentRunStatus::Running => Err(format!(
            "agent run {run_id} did not settle here (another instance holds it, or it stopped)"
        )),
        AgentRunStatus::Waiting => crate::waiting::wait_key(state, run_id)
            .await
            .map_err(|e| e.to_string())?
            .map(Attempt::Waiting)
            .ok_or_else(|| format!("agent run {run_id} waits, but its record names no tool step")),
        AgentRunStatus::Completed | AgentRunStatus::Failed | AgentRunStatus::Cancelled => {
            // Ended by a person while another instance executed it: that
            // instance (or, once its lease expires, the next attempt)
            // logs the end.
            let record = store.get_run(run_id).await.map_err(|e| e.to_string())?;
            if matches!(record.status, RunStatus::Running | RunStatus::Pending) {
                return Err(format!("the end of agent run {run_id} is not logged yet"));
            }
            Ok(Attempt::Ended)
        }
    }
}

/// Ends agent run `run_id`, whose execution the engine cancelled: a run
/// still active is cancelled as a person's cancel would (the engine's own
/// UI or CLI cancelled it), then its end is logged here unless the
/// instance executing it logs it. `Ok` once the end is logged; an error
/// is tried again.
pub async fn stop_attempt(state: &AppState, run_id: &str) -> Result<(), String> {
    let store = &*state.store;
    let run = store
        .get_agent_run(run_id)
        .await
        .map_err(|e| e.to_string())?;
    if run.status.is_active() {
        let reason = EndReason::new("cancel", "cancelled in the durable engine");
        let cancelled = store
            .finish_agent_run(
                run_id,
                AgentRunStatus::Cancelled,
                now_millis(),
                Some(&reason),
            )
            .await
            .map_err(|e| e.to_string())?;
        if cancelled {
            if let Some(local) = state.local_run(run_id) {
                local.halt(Halt::Cancel);
            }
            let ctx = load_task_context(store, &run.task_id)
                .await
                .map_err(|e| e.to_string())?;
            crate::waiting::close_pending(state, &ctx, &run).await;
            state.notify_run_status(&ctx.owner, &ctx.project, &run, AgentRunStatus::Cancelled);
        }
    }
    match execute_attempt(state, run_id).await? {
        Attempt::Ended => Ok(()),
        other => Err(format!(
            "agent run {run_id} was cancelled but is still {other:?}"
        )),
    }
}
