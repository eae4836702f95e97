//! One heartbeat per instance for every agent run it executes: each
//! `heartbeat` interval one task renews all their leases
//! ([`agentloop_storage::TaskStore::renew_leases`], one statement per batch
//! of runs) and learns each run's status from the same statement. A run
//! whose lease was lost is halted with [`Halt::Stop`] (left to the instance
//! that holds it); a run no longer `running` in the store (cancelled or
//! force-completed, possibly by another instance, or deleted) with
//! [`Halt::Cancel`]. One task and one
//! statement per batch instead of a task, a transaction and a read per run
//! keep the database's load flat as runs grow.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::Duration;

use agentloop_storage::Store;
use agentloop_storage::model::{AgentRunStatus, LeaseRenewal, now_millis};
use agentloop_types::CancellationToken;

use crate::local_run::{Halt, LocalRun};

/// The runs this instance executes under a lease, by agent run id.
#[derive(Default)]
pub struct Heartbeat {
    runs: Mutex<HashMap<String, Beat>>,
    /// Numbers registrations, so a renewal read before a run was
    /// registered again (a resumed run) never stops the new execution.
    next: AtomicU64,
    started: OnceLock<()>,
}

/// One executing run under the heartbeat.
struct Beat {
    generation: u64,
    run: Arc<LocalRun>,
}

/// Where the heartbeat renews leases, and how.
pub(crate) struct Renewer {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) owner: String,
    pub(crate) interval: Duration,
    pub(crate) ttl_ms: i64,
    pub(crate) shutdown: CancellationToken,
}

/// Keeps a run under the heartbeat until dropped.
pub struct Watched {
    heartbeat: Arc<Heartbeat>,
    run_id: String,
    generation: u64,
}

impl Drop for Watched {
    fn drop(&mut self) {
        let mut runs = self
            .heartbeat
            .runs
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if runs
            .get(&self.run_id)
            .is_some_and(|beat| beat.generation == self.generation)
        {
            runs.remove(&self.run_id);
        }
    }
}

impl Heartbeat {
    /// How many runs the heartbeat keeps.
    pub fn len(&self) -> usize {
        self.runs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether it keeps none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keeps `run_id`'s lease renewed (the lease must be held already)
    /// until the returned guard is dropped; starts the instance's heartbeat
    /// task on first use.
    pub(crate) fn watch(
        self: &Arc<Self>,
        renewer: impl FnOnce() -> Renewer,
        run_id: &str,
        run: Arc<LocalRun>,
    ) -> Watched {
        self.started.get_or_init(|| {
            tokio::spawn(beat(Arc::downgrade(self), renewer()));
        });
        let generation = self.next.fetch_add(1, Ordering::Relaxed);
        self.runs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(run_id.to_owned(), Beat { generation, run });
        Watched {
            heartbeat: self.clone(),
            run_id: run_id.to_owned(),
            generation,
        }
    }

    fn snapshot(&self) -> (Vec<String>, Vec<u64>) {
        let runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        runs.iter()
            .map(|(id, beat)| (id.clone(), beat.generation))
            .unzip()
    }

    /// Acts on one pass's renewals, for the registrations they were read
    /// for.
    fn apply(&self, ids: &[String], generations: &[u64], renewals: &[LeaseRenewal]) {
        let runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        for ((id, generation), renewal) in ids.iter().zip(generations).zip(renewals) {
            let Some(beat) = runs.get(id).filter(|b| b.generation == *generation) else {
                continue;
            };
            match renewal {
                LeaseRenewal::Renewed {
                    agent_run: Some(AgentRunStatus::Running),
                } => {}
                LeaseRenewal::Renewed { .. } => beat.run.halt(Halt::Cancel),
                LeaseRenewal::Lost => beat.run.halt(Halt::Stop),
            }
        }
    }
}

/// The heartbeat task: runs until the instance shuts down or its state is
/// gone.
async fn beat(heartbeat: Weak<Heartbeat>, renewer: Renewer) {
    let mut ticks = tokio::time::interval(renewer.interval);
    // A slow pass delays the next instead of bunching them up.
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        tokio::select! {
            () = renewer.shutdown.cancelled() => return,
            _ = ticks.tick() => {}
        }
        let Some((ids, generations)) = heartbeat.upgrade().map(|h| h.snapshot()) else {
            return;
        };
        if ids.is_empty() {
            continue;
        }
        let expires_at = now_millis() + renewer.ttl_ms;
        match renewer
            .store
            .renew_leases(&renewer.owner, &ids, expires_at)
            .await
        {
            Ok(renewals) => match heartbeat.upgrade() {
                Some(heartbeat) => heartbeat.apply(&ids, &generations, &renewals),
                None => return,
            },
            // The next pass tries again; a lease outlives several passes.
            Err(e) => tracing::warn!(error = %e, runs = ids.len(), "renewing leases failed"),
        }
    }
}
