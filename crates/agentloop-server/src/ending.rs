//! How an agent run ends: the one place that decides the status an agent
//! run ends with, why, and the loop result its record and its terminal
//! event carry, so the three always agree.
//!
//! A loop that ends on its own asks for a status ([`wanted`]): `complete`
//! gives `completed`, `cancelled` gives `cancelled`, every error, limit or
//! exhausted turn count gives `failed`. The end is decided from it (the
//! runtime asks [`AgentRunEnding`], as the run's `RunEnding`), the
//! terminal event logged, then the agent run is finished with it in one
//! conditional update (its commit), unless a person ended it first: a cancel
//! (`cancelled`, stopped by `cancel`) or Mark Done (`completed`, stopped
//! by `workflow_complete`). Whatever the store holds then is the end, and
//! the result is made to say it ([`agreeing`]): a force-completed run's
//! result is `complete` with `stopped_by`, a cancelled one's `cancelled`
//! with `stopped_by`.

use std::sync::{Arc, Mutex, PoisonError};

use agentloop_runtime::{Decided, RunEnding};
use agentloop_storage::model::{AgentRunStatus, EndReason, RunStatus, now_millis};
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
    /// Whether this call ended it (false: it had ended already).
    pub ended_here: bool,
    /// The loop result, agreeing with `status` and `reason`.
    pub result: LoopResult,
}

/// The agent run's part in its run's one end (see
/// [`agentloop_runtime::ending`]): the end is decided from the agent run
/// as stored (a person's cancel or Mark Done wins), the runtime logs it,
/// then the agent run is finished with it.
pub struct AgentRunEnding {
    store: Arc<dyn Store>,
    run_id: String,
    settled: Mutex<Option<Settled>>,
    waited: Mutex<Option<Waited>>,
}

/// How an agent run took its wait for a person.
#[derive(Debug, Clone, PartialEq)]
pub struct Waited {
    /// What it waits for.
    pub pending: Vec<PendingCall>,
    /// Its status afterwards: `waiting`, or what a person made of it
    /// meanwhile (then its pending calls are to be closed).
    pub status: AgentRunStatus,
    /// Whether this wait switched it to `waiting`.
    pub switched: bool,
}

impl AgentRunEnding {
    /// The ending of agent run `run_id`.
    pub fn new(store: Arc<dyn Store>, run_id: &str) -> Self {
        Self {
            store,
            run_id: run_id.to_owned(),
            settled: Mutex::new(None),
            waited: Mutex::new(None),
        }
    }

    /// How the run ended, once its end was committed.
    pub fn settled(&self) -> Option<Settled> {
        self.settled
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How the run took its wait, once the runtime said it waits.
    pub fn waited(&self) -> Option<Waited> {
        self.waited
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
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
        };
        self.keep(settled);
        Ok(decided)
    }

    async fn commit(&self, _decided: &Decided) -> Result<(), String> {
        let Some(settled) = self.settled() else {
            return Err("the end was committed before it was decided".to_owned());
        };
        let settled = commit(&*self.store, &self.run_id, settled)
            .await
            .map_err(|e| e.to_string())?;
        self.keep(settled);
        Ok(())
    }

    /// Switches the agent run `running` → `waiting` before the runtime
    /// stores and announces the wait (see
    /// [`agentloop_runtime::ending`]): a decision sent as soon as the wait
    /// is announced finds the run waiting.
    async fn waits(&self, pending: &[PendingCall], fresh: bool) -> Result<(), String> {
        let waited = start_waiting(&*self.store, &self.run_id, pending, fresh)
            .await
            .map_err(|e| e.to_string())?;
        *self.waited.lock().unwrap_or_else(PoisonError::into_inner) = Some(waited);
        Ok(())
    }

    /// Switches the agent run `waiting` → `running`; `false` when it no
    /// longer waited (a concurrent decision woke it, or it was ended).
    async fn wakes(&self) -> Result<bool, String> {
        self.store
            .switch_agent_run(
                &self.run_id,
                AgentRunStatus::Waiting,
                AgentRunStatus::Running,
            )
            .await
            .map_err(|e| e.to_string())
    }
}

/// Switches agent run `run_id` to `waiting` on `pending`; `fresh`: its
/// loop has just suspended, and decisions of an earlier wait (a model may
/// reuse call ids) are dropped first.
async fn start_waiting(
    store: &dyn Store,
    run_id: &str,
    pending: &[PendingCall],
    fresh: bool,
) -> StorageResult<Waited> {
    if fresh {
        store.clear_agent_run_decisions(run_id).await?;
    }
    let switched = store
        .switch_agent_run(run_id, AgentRunStatus::Running, AgentRunStatus::Waiting)
        .await?;
    let status = if switched {
        AgentRunStatus::Waiting
    } else {
        store.get_agent_run(run_id).await?.status
    };
    Ok(Waited {
        pending: pending.to_vec(),
        status,
        switched,
    })
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

/// Finishes agent run `run_id` with the end [`decide`] gave, unless a
/// person ended it between the decision and now: then their end stays in
/// the agent run (the log says the loop's).
async fn commit(store: &dyn Store, run_id: &str, mut settled: Settled) -> StorageResult<Settled> {
    if settled.ended_here {
        let (status, reason, ended_here) =
            finish(store, run_id, settled.status, settled.reason.clone()).await?;
        settled.status = status;
        settled.reason = reason;
        settled.ended_here = ended_here;
    }
    Ok(settled)
}

/// Finishes agent run `run_id` as `status` for `reason` unless it ended
/// already; returns its final status and reason, and whether this call
/// ended it.
pub async fn finish(
    store: &dyn Store,
    run_id: &str,
    status: AgentRunStatus,
    reason: Option<EndReason>,
) -> StorageResult<(AgentRunStatus, Option<EndReason>, bool)> {
    if store
        .finish_agent_run(run_id, status, now_millis(), reason.as_ref())
        .await?
    {
        return Ok((status, reason, true));
    }
    let stored = store.get_agent_run(run_id).await?;
    Ok((stored.status, stored.end_reason, false))
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
        LoopStatus::LimitExceeded { limit } => failed(
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
