//! Following runs that execute on another instance: the store announces
//! which run logs grew ([`agentloop_storage::RunStore::watch_appends`],
//! PostgreSQL `LISTEN/NOTIFY`), and [`watch_appends`] wakes the followers
//! of those runs here, so they read the store when there is something to
//! read instead of polling it. Without announcements (SQLite, memory, or
//! while the listener reconnects) followers poll.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::watch;

use agentloop_storage::Store;
use agentloop_types::CancellationToken;

/// How long to wait before listening again after the listener failed.
const RELISTEN: Duration = Duration::from_secs(1);

/// The followers of run logs on this instance, by run id.
#[derive(Default)]
pub struct AppendWakers {
    runs: Mutex<HashMap<String, watch::Sender<u64>>>,
    listening: AtomicBool,
    wakes: AtomicU64,
}

impl AppendWakers {
    /// Whether appends are announced now: if not, followers poll.
    pub fn listening(&self) -> bool {
        self.listening.load(Ordering::SeqCst)
    }

    /// How many announcements found followers here to wake.
    pub fn wakes(&self) -> u64 {
        self.wakes.load(Ordering::SeqCst)
    }

    /// Wakes the followers of `run_id`'s log on this instance.
    pub fn wake(&self, run_id: &str) {
        let runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(run) = runs.get(run_id) {
            run.send_modify(|n| *n = n.wrapping_add(1));
            self.wakes.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Wakes every follower (announcements may have been missed).
    fn wake_all(&self) {
        let runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        for run in runs.values() {
            run.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    fn set_listening(&self, listening: bool) {
        self.listening.store(listening, Ordering::SeqCst);
        self.wake_all();
    }

    /// A waiter woken by every append to `run_id`'s log from now on.
    pub fn waiter(self: &Arc<Self>, run_id: &str) -> AppendWaiter {
        let mut runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        let woken = runs
            .entry(run_id.to_owned())
            .or_insert_with(|| watch::channel(0).0)
            .subscribe();
        AppendWaiter {
            wakers: self.clone(),
            run_id: run_id.to_owned(),
            woken,
        }
    }
}

/// One follower's wake-ups for one run's log.
pub struct AppendWaiter {
    wakers: Arc<AppendWakers>,
    run_id: String,
    woken: watch::Receiver<u64>,
}

impl AppendWaiter {
    /// Waits until the log grew since the last wait (or since the waiter
    /// was made), or `timeout` passed.
    pub async fn wait(&mut self, timeout: Duration) {
        let _ = tokio::time::timeout(timeout, self.woken.changed()).await;
    }
}

impl Drop for AppendWaiter {
    fn drop(&mut self) {
        let mut runs = self
            .wakers
            .runs
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // This waiter's receiver still counts: it is the last one.
        if runs
            .get(&self.run_id)
            .is_some_and(|run| run.receiver_count() <= 1)
        {
            runs.remove(&self.run_id);
        }
    }
}

/// Listens to the store's announcements of appends until the instance
/// shuts down, waking the followers of each announced run. Returns at once
/// when the store makes none.
pub async fn watch_appends(
    store: Arc<dyn Store>,
    wakers: Arc<AppendWakers>,
    shutdown: CancellationToken,
) {
    loop {
        let announced = tokio::select! {
            () = shutdown.cancelled() => return,
            announced = store.watch_appends() => announced,
        };
        match announced {
            Ok(None) => return,
            Ok(Some(mut runs)) => {
                wakers.set_listening(true);
                loop {
                    let next = tokio::select! {
                        () = shutdown.cancelled() => None,
                        next = runs.next() => next,
                    };
                    match next {
                        Some(Ok(run_id)) => wakers.wake(&run_id),
                        Some(Err(e)) => {
                            tracing::warn!(error = %e, "append announcements failed; followers poll");
                            break;
                        }
                        None => break,
                    }
                }
                wakers.set_listening(false);
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for append announcements; followers poll");
            }
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(RELISTEN) => {}
        }
    }
}
