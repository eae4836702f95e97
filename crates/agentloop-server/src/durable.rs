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

use agentloop_storage::model::AgentRunStatus;

use crate::hosting::Pace;
use crate::state::AppState;

/// Where a run stands after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// One step was executed and stored; the run goes on.
    Stepped,
    /// The run ended (its terminal event, record and agent run written).
    Ended,
    /// The run waits for a person.
    Waiting,
}

/// Executes agent run `run_id` here, from where its record stands, and
/// says where it stands after. An error means the attempt did not settle
/// the run (another instance still holds its lease, this instance is
/// shutting down, the store failed): the engine tries again.
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
    let run = state
        .store
        .get_agent_run(run_id)
        .await
        .map_err(|e| e.to_string())?;
    match run.status {
        AgentRunStatus::Running => Err(format!(
            "agent run {run_id} did not settle here (another instance holds it, or it stopped)"
        )),
        AgentRunStatus::Waiting => Ok(Attempt::Waiting),
        AgentRunStatus::Completed | AgentRunStatus::Failed | AgentRunStatus::Cancelled => {
            Ok(Attempt::Ended)
        }
    }
}
