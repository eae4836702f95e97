//! How an agent run ends: the one place that decides the status an agent
//! run ends with, why, and the loop result its record and its terminal
//! event carry, so the three always agree.
//!
//! An agent run has one status, its run record's: the store moves the
//! agent run in the same write as the record (see
//! [`AgentRunStatus`]), so nothing here writes a status. A loop that ends
//! on its own asks for a status ([`wanted`]): `complete` gives
//! `completed`, `cancelled` gives `cancelled`, every error, limit or
//! exhausted turn count gives `failed`. The end is decided from it (the
//! runtime asks [`AgentRunEnding`], as the run's `RunEnding`), unless a
//! person ended the agent run first: a cancel (`cancelled`, stopped by
//! `cancel`) or Mark Done (`completed`, stopped by `workflow_complete`).
//! Whatever the store holds then is the end, and the result is made to
//! say it ([`agreeing`]): a force-completed run's result is `complete`
//! with `stopped_by`, a cancelled one's `cancelled` with `stopped_by`.
//! The runtime logs the end and writes the record with the decided
//! reason; the hook then reads back how the agent run ended.

use std::sync::{Arc, Mutex, PoisonError};

use agentloop_runtime::{Decided, RunEnding};
use agentloop_storage::model::{AgentRunStatus, EndReason, RunStatus};
use agentloop_storage::{StorageResult, Store};
use agentloop_types::{LoopError, LoopResult, LoopStatus, PendingCall, RunStop};
use async_trait::async_trait;

/// How an agent run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Settled {
    /// Its final status.
    pub status: AgentRunStatus,
    /// Why it ended, unless its loop completed on its own.
    pub reason: Option<EndReason>,
    /// Whether this run's end ended it (false: a person had ended it).
    pub ended_here: bool,
    /// The loop result, agreeing with `status` and `reason`.
    pub result: LoopResult,
}

/// The agent run's part in its run's one end (see
/// [`agentloop_runtime::ending`]): the end is decided from the agent run
/// as stored (a person's cancel or Mark Done wins); the runtime logs it
/// and writes the record, which moves the agent run with it.
pub struct AgentRunEnding {
    store: Arc<dyn Store>,
    run_id: String,
    settled: Mutex<Option<Settled>>,
    waits: Mutex<Option<Waits>>,
}

/// What the runtime said when its run stopped to wait.
#[derive(Debug, Clone)]
struct Waits {
    pending: Vec<PendingCall>,
    /// The agent run was running before the wait was stored.
    was_running: bool,
}

/// How an agent run took its wait for a person.
#[derive(Debug, Clone, PartialEq)]
pub struct Waited {
    /// What it waits for.
    pub pending: Vec<PendingCall>,
    /// Its status afterwards: `waiting`, or what a person made of it
    /// meanwhile (then its pending calls are to be closed).
    pub status: AgentRunStatus,
    /// Whether this wait moved it from `running` to `waiting`.
    pub switched: bool,
}

impl AgentRunEnding {
    /// The ending of agent run `run_id`.
    pub fn new(store: Arc<dyn Store>, run_id: &str) -> Self {
        Self {
            store,
            run_id: run_id.to_owned(),
            settled: Mutex::new(None),
            waits: Mutex::new(None),
        }
    }

    /// How the run ended, once its end was committed.
    pub fn settled(&self) -> Option<Settled> {
        self.settled
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Whether the runtime said the run waits.
    pub fn told_to_wait(&self) -> bool {
        self.waits
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// How the run took its wait, read once the runtime stored it;
    /// `None` when the runtime did not say the run waits.
    pub async fn waited(&self) -> StorageResult<Option<Waited>> {
        let waits = self
            .waits
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let Some(Waits {
            pending,
            was_running,
        }) = waits
        else {
            return Ok(None);
        };
        let status = self.store.get_agent_run(&self.run_id).await?.status;
        Ok(Some(Waited {
            pending,
            status,
            switched: was_running && status == AgentRunStatus::Waiting,
        }))
    }

    fn keep(&self, settled: Settled) {
        *self.settled.lock().unwrap_or_else(PoisonError::into_inner) = Some(settled);
    }
}

#[async_trait]
impl RunEnding for AgentRunEnding {
    async fn decide(&self, result: LoopResult) -> Result<Decided, String> {
        let settled = decide(&*self.store, &self.run_id, result)
            .await
            .map_err(|e| e.to_string())?;
        let decided = Decided {
            result: settled.result.clone(),
            status: record_status(settled.status),
            reason: settled.reason.clone(),
        };
        self.keep(settled);
        Ok(decided)
    }

    /// Reads back how the agent run ended: with this end, or with a
    /// person's that came after the decision (the store keeps theirs).
    async fn commit(&self, _decided: &Decided) -> Result<(), String> {
        let Some(mut settled) = self.settled() else {
            return Err("the end was committed before it was decided".to_owned());
        };
        if settled.ended_here {
            let stored = self
                .store
                .get_agent_run(&self.run_id)
                .await
                .map_err(|e| e.to_string())?;
            settled.ended_here =
                stored.status == settled.status && stored.end_reason == settled.reason;
            settled.status = stored.status;
            settled.reason = stored.end_reason;
        }
        self.keep(settled);
        Ok(())
    }

    /// Notes the wait before the runtime stores and announces it (its
    /// record's move to `suspended` moves the agent run to `waiting`);
    /// a fresh wait drops the decisions of an earlier one (a model may
    /// reuse call ids).
    async fn waits(&self, pending: &[PendingCall], fresh: bool) -> Result<(), String> {
        if fresh {
            self.store
                .clear_agent_run_decisions(&self.run_id)
                .await
                .map_err(|e| e.to_string())?;
        }
        let status = self
            .store
            .get_agent_run(&self.run_id)
            .await
            .map_err(|e| e.to_string())?
            .status;
        *self.waits.lock().unwrap_or_else(PoisonError::into_inner) = Some(Waits {
            pending: pending.to_vec(),
            was_running: status == AgentRunStatus::Running,
        });
        Ok(())
    }

    /// Whether the agent run goes on: its record's wake moved it back to
    /// `running`, unless a person ended it meanwhile.
    async fn wakes(&self) -> Result<bool, String> {
        let run = self
            .store
            .get_agent_run(&self.run_id)
            .await
            .map_err(|e| e.to_string())?;
        Ok(run.status == AgentRunStatus::Running)
    }
}

/// The end agent run `run_id` takes when its loop ended with `result`,
/// not yet recorded: the end a person recorded, if any (`ended_here`
/// false), else the one the result asks for.
async fn decide(store: &dyn Store, run_id: &str, result: LoopResult) -> StorageResult<Settled> {
    let stored = store.get_agent_run(run_id).await?;
    let (status, reason, ended_here) = if stored.status.is_active() {
        let (status, reason) = wanted(&result.status);
        (status, reason, true)
    } else {
        (stored.status, stored.end_reason, false)
    };
    let result = agreeing(result, status, reason.as_ref());
    Ok(Settled {
        status,
        reason,
        ended_here,
        result,
    })
}

/// The record status matching an agent run status.
pub fn record_status(status: AgentRunStatus) -> RunStatus {
    match status {
        AgentRunStatus::Running => RunStatus::Running,
        AgentRunStatus::Waiting => RunStatus::Suspended,
        AgentRunStatus::Completed => RunStatus::Completed,
        AgentRunStatus::Failed => RunStatus::Failed,
        AgentRunStatus::Cancelled => RunStatus::Cancelled,
    }
}

/// `result` made to say how the agent run ended: a run force-completed
/// (`completed` with a reason) ends `complete` — keeping a return value
/// its loop gave — stopped by that reason; a cancelled run ends
/// `cancelled`, stopped by its reason. Other ends keep the loop's status.
pub fn agreeing(
    mut result: LoopResult,
    status: AgentRunStatus,
    reason: Option<&EndReason>,
) -> LoopResult {
    let stop = |reason: &EndReason| RunStop {
        stopped_by: reason.kind.clone(),
        stop_message: reason.message.clone(),
    };
    match (status, reason) {
        (AgentRunStatus::Completed, Some(reason)) => {
            if !matches!(result.status, LoopStatus::Complete { .. }) {
                result.status = LoopStatus::Complete {
                    return_value: None,
                    output: None,
                };
            }
            result.stop = Some(stop(reason));
        }
        (AgentRunStatus::Cancelled, reason) => {
            result.status = LoopStatus::Cancelled;
            result.stop = reason.map(stop);
        }
        (
            AgentRunStatus::Completed
            | AgentRunStatus::Failed
            | AgentRunStatus::Running
            | AgentRunStatus::Waiting,
            _,
        ) => {}
    }
    result
}

/// The agent run status a loop result asks for, and why when it did not
/// complete.
pub fn wanted(status: &LoopStatus) -> (AgentRunStatus, Option<EndReason>) {
    let failed =
        |kind: &str, message: String| (AgentRunStatus::Failed, Some(EndReason::new(kind, message)));
    match status {
        LoopStatus::Complete { .. } => (AgentRunStatus::Completed, None),
        LoopStatus::Cancelled => (
            AgentRunStatus::Cancelled,
            Some(EndReason::new("cancel", "the run was cancelled")),
        ),
        LoopStatus::Error { error } => {
            let kind = match error {
                LoopError::Provider { .. } => "provider",
                LoopError::Assembly { .. } | LoopError::IncompleteStream => "model_stream",
                LoopError::InvalidHistory { .. } => "history",
                LoopError::UnsupportedState { .. } | LoopError::InvalidState { .. } => "state",
                LoopError::OutputInvalid { .. } => "output_invalid",
                LoopError::Refused { .. } => "refused",
                LoopError::OutputSchemaUnsupported { .. } => "output_schema_unsupported",
                LoopError::HandoffsUnsupported { .. } => "handoffs_unsupported",
                LoopError::Blocked { .. } => "blocked",
                LoopError::Host { .. } => "executor",
            };
            failed(kind, error.to_string())
        }
        LoopStatus::MaxIterations => failed(
            "max_iterations",
            "the agent used every model turn it was allowed without finishing".to_owned(),
        ),
        LoopStatus::LimitExceeded {
            budget: Some(budget),
            ..
        } => failed(
            "limit_exceeded",
            format!("the budget {budget} is spent: the run's next model call was not made"),
        ),
        LoopStatus::LimitExceeded { limit, .. } => failed(
            "limit_exceeded",
            format!("the run reached its usage limit ({})", limit.name()),
        ),
        // A suspended run waits instead of ending (see `crate::waiting`);
        // one that reaches here could not wait.
        LoopStatus::Suspended { pending, .. } => failed(
            "suspended",
            format!(
                "the agent stopped to wait for a person on {} call(s)",
                pending.len()
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(status: LoopStatus) -> LoopResult {
        LoopResult {
            status,
            messages: Default::default(),
            tokens: Default::default(),
            stop: None,
        }
    }

    #[test]
    fn a_force_completed_run_ends_complete_saying_who_stopped_it() {
        let shaped = agreeing(
            result(LoopStatus::Cancelled),
            AgentRunStatus::Completed,
            Some(&EndReason::workflow_complete()),
        );
        assert!(matches!(shaped.status, LoopStatus::Complete { .. }));
        let stop = shaped.stop.unwrap();
        assert_eq!(stop.stopped_by, "workflow_complete");
        assert_eq!(stop.stop_message, EndReason::workflow_complete().message);
    }

    #[test]
    fn a_loop_that_completed_on_its_own_says_no_stop() {
        let shaped = agreeing(
            result(LoopStatus::Complete {
                return_value: Some(serde_json::json!(1)),
                output: None,
            }),
            AgentRunStatus::Completed,
            None,
        );
        assert_eq!(shaped.stop, None);
        assert!(matches!(
            shaped.status,
            LoopStatus::Complete {
                return_value: Some(_),
                ..
            }
        ));
    }

    #[test]
    fn a_cancelled_run_ends_cancelled_by_its_reason_even_if_its_loop_completed() {
        let reason = EndReason::new("cancel", "cancelled by ada");
        let shaped = agreeing(
            result(LoopStatus::Complete {
                return_value: None,
                output: None,
            }),
            AgentRunStatus::Cancelled,
            Some(&reason),
        );
        assert_eq!(shaped.status, LoopStatus::Cancelled);
        assert_eq!(shaped.stop.map(|s| s.stopped_by).as_deref(), Some("cancel"));
    }
}
