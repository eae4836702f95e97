//! Group commit for the SQL backends: event-log appends, and on SQLite the
//! starts of agent runs.
//!
//! Every write joins a queue; one flush at a time takes what is queued (up
//! to its kind's [`Batched::MAX_WEIGHT`]) and writes it in one
//! transaction, then answers each caller. Writes that arrive while a batch
//! commits form the next batch, so a busy store commits many writes per
//! transaction while a lone write waits for no timer.
//!
//! Invariants: a write is acknowledged only after the transaction that
//! holds it committed; one call's rows are written together or not at
//! all. A batch that fails is split and retried down to one write per
//! transaction, so each caller gets the error its own rows cause (a
//! duplicate seq fails only its append) and a failure of the database
//! reaches every caller.

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use futures::channel::oneshot;

use crate::error::{StorageError, StorageResult};
use crate::model::AgentRunStart;

/// A kind of write that is committed in batches.
pub(crate) trait Batched: Send + Sync + 'static {
    /// Most weight one transaction takes; a heavier single write still
    /// goes alone.
    const MAX_WEIGHT: usize;
    /// This write's share of a batch.
    fn weight(&self) -> usize;

    /// How many of `count` waiting writes (that fit the weight) one batch
    /// takes: all of them, unless the kind says otherwise.
    fn batch_len(count: usize) -> usize {
        count
    }
}

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

impl Batched for Append {
    /// Events.
    const MAX_WEIGHT: usize = 2_000;

    fn weight(&self) -> usize {
        self.rows.len()
    }
}

/// One `start_agent_run` call, its first message encoded.
pub(crate) struct QueuedStart {
    pub(crate) start: AgentRunStart,
    pub(crate) body: String,
}

impl Batched for QueuedStart {
    /// Starts.
    const MAX_WEIGHT: usize = 16;

    fn weight(&self) -> usize {
        1
    }

    /// A power of two: a batch is sent as one query prepared for its size
    /// (see `SqliteStore`'s starts), and five sizes keep that connection's
    /// statement cache small and warm.
    fn batch_len(count: usize) -> usize {
        1 << count.max(1).ilog2()
    }
}

/// A backend's writes of queued `T`s.
#[async_trait]
pub(crate) trait CommitBatch<T>: Clone + Send + Sync + 'static {
    /// Writes every item of `batch` in one transaction.
    async fn commit_batch(&self, batch: &[T]) -> StorageResult<()>;
    /// Writes one item in its own transaction, failing with the error its
    /// rows alone cause.
    async fn commit_one(&self, item: &T) -> StorageResult<()>;
}

type Waiter<T> = (T, oneshot::Sender<StorageResult<()>>);

struct Queue<T> {
    waiting: Vec<Waiter<T>>,
    flushing: bool,
}

/// The queue of one store's writes of one kind.
pub(crate) struct GroupCommit<T> {
    queue: Arc<Mutex<Queue<T>>>,
}

impl<T> Clone for GroupCommit<T> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
        }
    }
}

impl<T> Default for GroupCommit<T> {
    fn default() -> Self {
        Self {
            queue: Arc::new(Mutex::new(Queue {
                waiting: Vec::new(),
                flushing: false,
            })),
        }
    }
}

impl<T> std::fmt::Debug for GroupCommit<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit").finish_non_exhaustive()
    }
}

impl<T: Batched> GroupCommit<T> {
    /// Queues `item` and waits until the transaction holding it ended.
    pub(crate) async fn write<S: CommitBatch<T>>(&self, store: &S, item: T) -> StorageResult<()> {
        let (done, answer) = oneshot::channel();
        let lead = {
            let mut queue = lock(&self.queue);
            queue.waiting.push((item, done));
            !std::mem::replace(&mut queue.flushing, true)
        };
        if lead {
            let flush = flush(self.queue.clone(), store.clone());
            // The flush runs in its own task so a caller that stops waiting
            // does not abandon the others' writes halfway.
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => drop(runtime.spawn(flush)),
                Err(_) => flush.await,
            }
        }
        answer.await.unwrap_or_else(|_| {
            Err(StorageError::Database(
                "the store's writer stopped before the write committed".to_owned(),
            ))
        })
    }
}

fn lock<T>(queue: &Mutex<Queue<T>>) -> std::sync::MutexGuard<'_, Queue<T>> {
    queue.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Clears the flushing mark when a flush ends, also when its task is
/// dropped (a runtime shutting down): the next append then starts a new
/// one instead of waiting forever.
struct Flushing<T>(Option<Arc<Mutex<Queue<T>>>>);

impl<T> Drop for Flushing<T> {
    fn drop(&mut self) {
        if let Some(queue) = self.0.take() {
            lock(&queue).flushing = false;
        }
    }
}

async fn flush<T: Batched, S: CommitBatch<T>>(queue: Arc<Mutex<Queue<T>>>, store: S) {
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
        let (items, waiters): (Vec<T>, Vec<_>) = batch.into_iter().unzip();
        let results = commit(&store, &items).await;
        for (waiter, result) in waiters.into_iter().zip(results) {
            let _ = waiter.send(result);
        }
    }
}

/// The oldest waiting writes, at most [`Batched::MAX_WEIGHT`] (at least
/// one write).
fn take_batch<T: Batched>(waiting: &mut Vec<Waiter<T>>) -> Vec<Waiter<T>> {
    let mut weight = 0;
    let mut take = 0;
    for (item, _) in waiting.iter() {
        if take > 0 && weight + item.weight() > T::MAX_WEIGHT {
            break;
        }
        weight += item.weight();
        take += 1;
    }
    let take = T::batch_len(take).clamp(1, take.max(1));
    waiting.drain(..take).collect()
}

/// Commits `items` together; when that fails, each half again, down to
/// single writes, so one bad write costs a few transactions rather than
/// one per write.
fn commit<'a, T: Batched, S: CommitBatch<T>>(
    store: &'a S,
    items: &'a [T],
) -> futures::future::BoxFuture<'a, Vec<StorageResult<()>>> {
    Box::pin(async move {
        if let [item] = items {
            return vec![store.commit_one(item).await];
        }
        match store.commit_batch(items).await {
            Ok(()) => items.iter().map(|_| Ok(())).collect(),
            Err(_) => {
                let (first, second) = items.split_at(items.len() / 2);
                let mut results = commit(store, first).await;
                results.extend(commit(store, second).await);
                results
            }
        }
    })
}
