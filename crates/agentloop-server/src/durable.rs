//! Executing an agent run for an outside durable engine (see
//! [`crate::dispatch`]): one attempt is one execution of the run here,
//! from where its record stands, exactly as the lease scheduler executes
//! it ([`crate::drive::drive_run`]). The engine retries an attempt that did
//! not settle the run, on this instance or another.

use agentloop_storage::model::AgentRunStatus;

use crate::state::AppState;

/// Where a run stands after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
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
    crate::drive::drive_run(state.clone(), run_id.to_owned()).await;
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
