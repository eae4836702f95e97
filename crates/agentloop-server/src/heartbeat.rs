//! The pace of the runtime's [`Heartbeat`](agentloop_runtime::Heartbeat)
//! on this instance: each `heartbeat` interval one task asks it to renew
//! the leases of every agent run executing here (the runtime writes them,
//! one statement per batch of runs), and each run hears what its renewal
//! found. A run whose lease was lost is halted with [`Halt::Stop`] (left to
//! the instance that holds it). Then the agent runs of the renewed leases
//! are read in one statement per batch (the product store's, not the run
//! store's): one no longer `running` (cancelled or force-completed,
//! possibly by another instance, or deleted) is halted with
//! [`Halt::Cancel`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::Duration;

use agentloop_runtime::{LeaseWatcher, Watched};
use agentloop_storage::Store;
use agentloop_storage::model::{AgentRunStatus, LeaseRenewal, now_millis};
use agentloop_types::CancellationToken;

use crate::local_run::{Halt, LocalRun};

/// The runs this instance executes under a lease, and the task that keeps
/// their leases.
#[derive(Default)]
pub struct Heartbeat {
    runtime: OnceLock<Arc<agentloop_runtime::Heartbeat>>,
}

/// How the heartbeat task is paced, when it stops, and where it reads
/// which runs a person ended.
pub(crate) struct Pace {
    pub(crate) interval: Duration,
    pub(crate) shutdown: CancellationToken,
    pub(crate) store: Arc<dyn Store>,
    /// The runs executing here, by agent run id.
    pub(crate) local: Weak<Mutex<HashMap<String, Arc<LocalRun>>>>,
}

impl LeaseWatcher for LocalRun {
    fn renewed(&self, renewal: &LeaseRenewal) {
        match renewal {
            LeaseRenewal::Renewed => {}
            LeaseRenewal::Lost => self.halt(Halt::Stop),
        }
    }
}

impl Heartbeat {
    /// How many runs the heartbeat keeps.
    pub fn len(&self) -> usize {
        self.runtime.get().map_or(0, |h| h.len())
    }

    /// Whether it keeps none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keeps `run_id`'s lease (held already) renewed until the returned
    /// guard is dropped; the runtime's heartbeat and the task pacing it
    /// start on first use.
    pub(crate) fn watch(
        &self,
        start: impl FnOnce() -> (agentloop_runtime::Heartbeat, Pace),
        run_id: &str,
        run: Arc<LocalRun>,
    ) -> Watched {
        let heartbeat = self.runtime.get_or_init(|| {
            let (heartbeat, pace) = start();
            let heartbeat = Arc::new(heartbeat);
            tokio::spawn(beat(Arc::downgrade(&heartbeat), pace));
            heartbeat
        });
        heartbeat.watch(run_id, run)
    }
}

/// The heartbeat task: runs until the instance shuts down or its state is
/// gone.
async fn beat(heartbeat: Weak<agentloop_runtime::Heartbeat>, pace: Pace) {
    let mut ticks = tokio::time::interval(pace.interval);
    // A slow pass delays the next instead of bunching them up.
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        tokio::select! {
            () = pace.shutdown.cancelled() => return,
            _ = ticks.tick() => {}
        }
        let Some(heartbeat) = heartbeat.upgrade() else {
            return;
        };
        // The next pass tries again; a lease outlives several passes.
        match heartbeat.beat(now_millis()).await {
            Ok(renewed) => halt_ended(&pace, &renewed).await,
            Err(e) => {
                tracing::warn!(error = %e, runs = heartbeat.len(), "renewing leases failed");
            }
        }
    }
}

/// Cancels the runs executing here whose agent run is no longer `running`
/// in the store (of `renewed`, the runs whose leases this pass renewed).
async fn halt_ended(pace: &Pace, renewed: &[String]) {
    if renewed.is_empty() {
        return;
    }
    let statuses = match pace.store.agent_run_statuses(renewed).await {
        Ok(statuses) => statuses,
        Err(e) => {
            tracing::warn!(error = %e, "reading the agent runs executing here failed");
            return;
        }
    };
    let Some(local) = pace.local.upgrade() else {
        return;
    };
    let local = local.lock().unwrap_or_else(PoisonError::into_inner);
    for (id, status) in renewed.iter().zip(statuses) {
        if status != Some(AgentRunStatus::Running)
            && let Some(run) = local.get(id)
        {
            run.halt(Halt::Cancel);
        }
    }
}
