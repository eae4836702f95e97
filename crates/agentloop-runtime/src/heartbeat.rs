//! [`Heartbeat`]: the runtime keeps the leases of the hosted runs it
//! executes, many at a time: one [`beat`](Heartbeat::beat) renews every
//! watched run's lease ([`agentloop_storage::RunStore::renew_leases`], one
//! statement per batch of runs) and tells each run's watcher what the
//! renewal found — renewed or lost — and its host which runs it still
//! holds, to check against what it keeps of its own. One pass and one
//! statement per batch
//! instead of a task, a transaction and a read per run keep the
//! database's load flat as runs grow.
//!
//! The heartbeat does no timing of its own: its host calls `beat` at the
//! pace it chooses, with the time it reads.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use agentloop_storage::RuntimeStore;
use agentloop_storage::model::LeaseRenewal;

use crate::error::RuntimeResult;

/// What watches one run's lease: told what each renewal found.
pub trait LeaseWatcher: Send + Sync {
    /// The lease was renewed or lost.
    fn renewed(&self, renewal: &LeaseRenewal);
}

/// The hosted runs whose leases this runtime keeps, by run id.
pub struct Heartbeat {
    store: Arc<dyn RuntimeStore>,
    owner: String,
    lease_ms: i64,
    runs: Mutex<HashMap<String, Beat>>,
    /// Numbers registrations, so a renewal read before a run was
    /// registered again (a resumed run) never reaches the new execution.
    next: AtomicU64,
}

/// One watched run.
struct Beat {
    generation: u64,
    watcher: Arc<dyn LeaseWatcher>,
}

/// Keeps a run under the heartbeat until dropped.
pub struct Watched {
    heartbeat: Arc<Heartbeat>,
    run_id: String,
    generation: u64,
}

impl Drop for Watched {
    fn drop(&mut self) {
        let mut runs = self.heartbeat.runs();
        if runs
            .get(&self.run_id)
            .is_some_and(|beat| beat.generation == self.generation)
        {
            runs.remove(&self.run_id);
        }
    }
}

impl Heartbeat {
    /// A heartbeat renewing leases held by `owner` in `store` for
    /// `lease_ms` at each beat.
    pub(crate) fn new(store: Arc<dyn RuntimeStore>, owner: String, lease_ms: i64) -> Self {
        Self {
            store,
            owner,
            lease_ms,
            runs: Mutex::new(HashMap::new()),
            next: AtomicU64::new(0),
        }
    }

    fn runs(&self) -> std::sync::MutexGuard<'_, HashMap<String, Beat>> {
        self.runs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many runs the heartbeat keeps.
    pub fn len(&self) -> usize {
        self.runs().len()
    }

    /// Whether it keeps none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keeps `run_id`'s lease (held already) renewed at each beat until
    /// the returned guard is dropped, telling `watcher` what each renewal
    /// found.
    pub fn watch(self: &Arc<Self>, run_id: &str, watcher: Arc<dyn LeaseWatcher>) -> Watched {
        let generation = self.next.fetch_add(1, Ordering::Relaxed);
        self.runs().insert(
            run_id.to_owned(),
            Beat {
                generation,
                watcher,
            },
        );
        Watched {
            heartbeat: self.clone(),
            run_id: run_id.to_owned(),
            generation,
        }
    }

    /// Renews every watched run's lease for another lease length from
    /// `now` and tells each watcher what its renewal found; returns the
    /// ids of the runs whose leases were renewed.
    pub async fn beat(&self, now: i64) -> RuntimeResult<Vec<String>> {
        let (ids, generations): (Vec<String>, Vec<u64>) = self
            .runs()
            .iter()
            .map(|(id, beat)| (id.clone(), beat.generation))
            .unzip();
        if ids.is_empty() {
            return Ok(ids);
        }
        let renewals = self
            .store
            .renew_leases(&self.owner, &ids, now + self.lease_ms)
            .await?;
        let runs = self.runs();
        for ((id, generation), renewal) in ids.iter().zip(&generations).zip(&renewals) {
            if let Some(beat) = runs.get(id).filter(|b| b.generation == *generation) {
                beat.watcher.renewed(renewal);
            }
        }
        Ok(ids
            .into_iter()
            .zip(renewals)
            .filter(|(_, renewal)| *renewal == LeaseRenewal::Renewed)
            .map(|(id, _)| id)
            .collect())
    }
}
