//! [`ChatRun`]: a stored run going on, read as a stream of its events.
//!
//! Reading the stream drives the run: each poll takes the loop's next item,
//! stores it (see [`crate::persist`]; an event that commits nothing may
//! wait in the log's batch, at most 8 events, none for a hosted run) and
//! only then yields the event. No
//! task runs beside the reader and nothing is buffered between the loop and
//! the store beyond the loop's own bounded buffer and one log batch, so a
//! store that stalls stalls the run, and a reader that stops reading stops
//! it. Dropping a `ChatRun` before its end drops the loop where it is, like
//! a crash: the record stays `running` for recovery or another worker.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use agentloop_engine::{CheckpointedRun, RunItem};
use agentloop_storage::RuntimeStore;
use agentloop_types::{LoopEvent, LoopResult};
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};

use crate::error::{RuntimeError, RuntimeResult};
use crate::persist::Persister;

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    /// The stored run's id.
    pub run_id: String,
    /// The loop's result (its `messages` are the whole history).
    pub result: LoopResult,
}

/// A stored run going on: a stream of its events, each yielded once it is
/// stored. The last item is the root `finished` event, or an error after
/// which the run is stopped (a store failure, a lost lease).
pub struct ChatRun {
    run_id: String,
    /// Where the run's lease is held, and by whom.
    holder: (Arc<dyn RuntimeStore>, String),
    events: BoxStream<'static, RuntimeResult<LoopEvent>>,
    pacing: Arc<Pacing>,
}

/// Whether a run stops after one step, and whether it did.
#[derive(Default)]
struct Pacing {
    one_step: AtomicBool,
    paused: AtomicBool,
}

impl ChatRun {
    /// Drives `stream`, persisting through `persister`.
    pub(crate) fn new(persister: Box<Persister>, stream: CheckpointedRun) -> Self {
        let run_id = persister.run().id.clone();
        let holder = (persister.store.clone(), persister.owner.clone());
        let pacing = Arc::new(Pacing::default());
        let driving = Driving {
            persister,
            stream: Some(stream),
            pacing: pacing.clone(),
            checkpoints: 0,
        };
        let events = futures::stream::unfold(driving, |mut driving| async move {
            let item = driving.next().await?;
            Some((item, driving))
        });
        Self {
            run_id,
            holder,
            events: events.boxed(),
            pacing,
        }
    }

    /// Ends the stream after the run's next step (see the module docs).
    pub fn stop_after_step(self) -> Self {
        self.pacing.one_step.store(true, Ordering::Relaxed);
        self
    }

    /// Whether the stream ended after one step, the run not ended.
    pub fn paused(&self) -> bool {
        self.pacing.paused.load(Ordering::Relaxed)
    }

    /// Gives the run up where it is, as a crash would, but hands its lease
    /// back at once so another worker can take it over without waiting
    /// for it to expire (an instance shutting down).
    pub async fn give_up(self) {
        let Self {
            run_id,
            events,
            holder,
            ..
        } = self;
        drop(events);
        let (store, owner) = holder;
        // A release that fails leaves the lease to expire.
        let _ = store.release_lease(&run_id, &owner).await;
    }

    /// The stored run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Reads the run to its end.
    pub async fn outcome(mut self) -> RuntimeResult<RunOutcome> {
        let mut result = None;
        while let Some(event) = self.events.next().await {
            if let Some(ended) = event?.into_root_result() {
                result = Some(ended);
            }
        }
        match result {
            Some(result) => Ok(RunOutcome {
                run_id: self.run_id,
                result,
            }),
            None => Err(ended_without_result(&self.run_id)),
        }
    }
}

impl Stream for ChatRun {
    type Item = RuntimeResult<LoopEvent>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.events.poll_next_unpin(cx)
    }
}

impl std::fmt::Debug for ChatRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatRun")
            .field("run_id", &self.run_id)
            .finish_non_exhaustive()
    }
}

/// The state behind a [`ChatRun`]: the loop (until it ended or failed) and
/// what stores it.
struct Driving {
    persister: Box<Persister>,
    stream: Option<CheckpointedRun>,
    pacing: Arc<Pacing>,
    /// Checkpoints stored: the first is the state before the first step
    /// performed here.
    checkpoints: u32,
}

impl Driving {
    /// Stores the loop's items up to its next event and yields it; `None`
    /// once the run ended.
    async fn next(&mut self) -> Option<RuntimeResult<LoopEvent>> {
        loop {
            let item = self.stream.as_mut()?.next().await;
            let stored = match item {
                Some(RunItem::Checkpoint(state)) => {
                    match self.persister.checkpoint(state).await {
                        Ok(()) => {
                            self.checkpoints += 1;
                            if self.checkpoints >= 2 && self.pacing.one_step.load(Ordering::Relaxed)
                            {
                                // The driver waits for this checkpoint to be
                                // read before the step it describes: dropped
                                // here, it never starts it.
                                self.stream = None;
                                self.pacing.paused.store(true, Ordering::Relaxed);
                                // Whoever executes the next step takes
                                // the lease again; a release that fails
                                // leaves it to expire.
                                let _ = self.persister.release().await;
                                return None;
                            }
                            Ok(None)
                        }
                        Err(error) => Err(error),
                    }
                }
                Some(RunItem::Event(event)) => self.persister.handle(event).await.map(Some),
                None => Err(ended_without_result(&self.persister.run().id)),
            };
            match stored {
                Ok(None) => {}
                Ok(Some(event)) => {
                    if self.persister.has_ended() {
                        self.stream = None;
                    }
                    return Some(Ok(event));
                }
                Err(error) => {
                    // The loop is dropped first: nothing it still does may
                    // reach the store after the run was abandoned.
                    self.stream = None;
                    self.persister.abandon(&error).await;
                    return Some(Err(error));
                }
            }
        }
    }
}

fn ended_without_result(run_id: &str) -> RuntimeError {
    RuntimeError::CorruptRun {
        run_id: run_id.to_owned(),
        message: "the run ended without a result".to_owned(),
    }
}
