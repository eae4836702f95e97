//! Group commit of event-log appends for the SQL backends.
//!
//! Every `append_events` call joins a queue; one flush at a time takes what
//! is queued (up to [`MAX_BATCH_EVENTS`]) and writes it in one transaction,
//! then answers each caller. Appends that arrive while a batch commits form
//! the next batch, so a busy store commits many runs' events per
//! transaction while a lone append waits for no timer.
//!
//! Invariants: an append is acknowledged only after the transaction that
//! holds it committed; one call's events are written together or not at
//! all. A batch that fails is split and retried down to one append per
//! transaction, so each caller gets the error its own events cause (a
//! duplicate seq fails only its append) and a failure of the database
//! reaches every caller.

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use futures::channel::oneshot;

use crate::error::{StorageError, StorageResult};

/// Most events one transaction takes; a larger single append still goes
/// alone.
pub(crate) const MAX_BATCH_EVENTS: usize = 2_000;

/// One stored event of an append, encoded.
pub(crate) struct EventRow {
    pub(crate) seq: i64,
    pub(crate) body: String,
}

/// One `append_events` call.
pub(crate) struct Append {
    pub(crate) run_id: String,
    pub(crate) rows: Vec<EventRow>,
}

/// A backend's writes of queued appends.
#[async_trait]
pub(crate) trait CommitAppends: Clone + Send + Sync + 'static {
    /// Writes every append of `batch` in one transaction.
    async fn commit_batch(&self, batch: &[Append]) -> StorageResult<()>;
    /// Writes one append in its own transaction, failing with the error
    /// its events alone cause.
    async fn commit_one(&self, append: &Append) -> StorageResult<()>;
}

type Waiter = (Append, oneshot::Sender<StorageResult<()>>);

#[derive(Default)]
struct Queue {
    waiting: Vec<Waiter>,
    flushing: bool,
}

/// The queue of one store's appends.
#[derive(Clone, Default)]
pub(crate) struct GroupCommit {
    queue: Arc<Mutex<Queue>>,
}

impl std::fmt::Debug for GroupCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit").finish_non_exhaustive()
    }
}

impl GroupCommit {
    /// Queues `append` and waits until the transaction holding it ended.
    pub(crate) async fn append<S: CommitAppends>(
        &self,
        store: &S,
        append: Append,
    ) -> StorageResult<()> {
        let (done, answer) = oneshot::channel();
        let lead = {
            let mut queue = lock(&self.queue);
            queue.waiting.push((append, done));
            !std::mem::replace(&mut queue.flushing, true)
        };
        if lead {
            let flush = flush(self.queue.clone(), store.clone());
            // The flush runs in its own task so a caller that stops waiting
            // does not abandon the others' appends halfway.
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => drop(runtime.spawn(flush)),
                Err(_) => flush.await,
            }
        }
        answer.await.unwrap_or_else(|_| {
            Err(StorageError::Database(
                "the event log writer stopped before the append committed".to_owned(),
            ))
        })
    }
}

fn lock(queue: &Mutex<Queue>) -> std::sync::MutexGuard<'_, Queue> {
    queue.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Clears the flushing mark when a flush ends, also when its task is
/// dropped (a runtime shutting down): the next append then starts a new
/// one instead of waiting forever.
struct Flushing(Option<Arc<Mutex<Queue>>>);

impl Drop for Flushing {
    fn drop(&mut self) {
        if let Some(queue) = self.0.take() {
            lock(&queue).flushing = false;
        }
    }
}

async fn flush<S: CommitAppends>(queue: Arc<Mutex<Queue>>, store: S) {
    let mut flushing = Flushing(Some(queue.clone()));
    loop {
        let batch = {
            let mut queue = lock(&queue);
            if queue.waiting.is_empty() {
                queue.flushing = false;
                // Cleared under the lock: a new flush may already run.
                flushing.0 = None;
                return;
            }
            take_batch(&mut queue.waiting)
        };
        let (appends, waiters): (Vec<Append>, Vec<_>) = batch.into_iter().unzip();
        let results = commit(&store, &appends).await;
        for (waiter, result) in waiters.into_iter().zip(results) {
            let _ = waiter.send(result);
        }
    }
}

/// The oldest waiting appends, at most [`MAX_BATCH_EVENTS`] events (at
/// least one append).
fn take_batch(waiting: &mut Vec<Waiter>) -> Vec<Waiter> {
    let mut events = 0;
    let mut take = 0;
    for (append, _) in waiting.iter() {
        if take > 0 && events + append.rows.len() > MAX_BATCH_EVENTS {
            break;
        }
        events += append.rows.len();
        take += 1;
    }
    waiting.drain(..take).collect()
}

/// Commits `appends` together; when that fails, each half again, down to
/// single appends, so one bad append costs a few transactions rather than
/// one per append.
fn commit<'a, S: CommitAppends>(
    store: &'a S,
    appends: &'a [Append],
) -> futures::future::BoxFuture<'a, Vec<StorageResult<()>>> {
    Box::pin(async move {
        if let [append] = appends {
            return vec![store.commit_one(append).await];
        }
        match store.commit_batch(appends).await {
            Ok(()) => appends.iter().map(|_| Ok(())).collect(),
            Err(_) => {
                let (first, second) = appends.split_at(appends.len() / 2);
                let mut results = commit(store, first).await;
                results.extend(commit(store, second).await);
                results
            }
        }
    })
}
