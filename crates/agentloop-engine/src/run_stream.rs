//! The stream a run is consumed through, and the emitter the driver writes
//! events into.
//!
//! The driver is an ordinary `async fn` that awaits [`Emitter::emit`]; the
//! [`RunStream`] owns that future and polls it only when the consumer asks
//! for the next event, so a slow consumer slows the run (bounded buffer)
//! and dropping the stream drops the driver, cancelling the run.
//!
//! Between steps the driver also writes the run's state as a checkpoint;
//! a consumer that stores runs reads them with
//! [`RunStream::with_checkpoints`], others never see them.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use agentloop_types::{CancellationToken, EventKind, LoopEvent, LoopResult, RunPath, RunState};
use futures::future::BoxFuture;
use futures::{Future, Stream, StreamExt};

/// Items buffered between the driver and the consumer: the driver waits
/// while more than this many are. Small, because a run keeps the buffer's
/// room for its whole life, idle or not: one past this bound is the
/// smallest room a `VecDeque` of events takes (4 slots), so a run waiting
/// on its model holds 0.4 KiB here, where a bound of 64 let a step's burst
/// of events grow it to 1.6 KiB.
const BUFFER: usize = 3;

/// Items the driver wrote and the consumer has not read. Not a channel:
/// the driver is polled only by the stream's own `poll_next`, which takes
/// from here first, so a full buffer needs no waker (the stream has items
/// to hand out and polls the driver again once they are gone).
#[derive(Default)]
struct Buffer(Mutex<VecDeque<Buffered>>);

/// A [`RunItem`] as the buffer holds it: a state is far larger than an
/// event, and every slot of the buffer is as large as its largest item.
enum Buffered {
    Event(LoopEvent),
    Checkpoint(Box<RunState>),
}

impl Buffer {
    fn pop(&self) -> Option<Buffered> {
        self.lock().pop_front()
    }

    fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Whether the driver waits for the consumer to take items.
    fn is_full(&self) -> bool {
        self.lock().len() > BUFFER
    }

    /// Writes `item` at once; the future waits until the buffer is back
    /// within its bound. Not an `async fn`: the future holds only a
    /// reference, not the item, and the driver awaits one at a time.
    fn push(&self, item: Buffered) -> impl Future<Output = ()> + '_ {
        self.lock().push_back(item);
        futures::future::poll_fn(|_| {
            if self.is_full() {
                Poll::Pending
            } else {
                Poll::Ready(())
            }
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Buffered>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One item of a run read [`with_checkpoints`](RunStream::with_checkpoints).
#[derive(Debug, Clone, PartialEq)]
pub enum RunItem {
    /// An event.
    Event(LoopEvent),
    /// The root run's state after a step, written after the step's events
    /// and before the driver performs the step: storing it lets
    /// [`resume`](crate::resume) continue the run in another process.
    Checkpoint(RunState),
}

/// Writes events with strictly increasing `seq`.
pub(crate) struct Emitter {
    buffer: Arc<Buffer>,
    seq: u64,
    checkpoints: Arc<AtomicBool>,
}

impl Emitter {
    /// Emits an event of the root run.
    pub(crate) fn emit(&mut self, kind: EventKind) -> impl Future<Output = ()> + '_ {
        self.emit_at(RunPath::root(), kind)
    }

    /// Emits an event of the run at `path`.
    pub(crate) fn emit_at(
        &mut self,
        path: RunPath,
        kind: EventKind,
    ) -> impl Future<Output = ()> + '_ {
        let event = LoopEvent {
            seq: self.seq,
            path,
            kind,
        };
        self.seq += 1;
        self.buffer.push(Buffered::Event(event))
    }

    /// Writes the run's state, when the consumer reads checkpoints. The
    /// state is only read then: reading it brings it up to date, which a
    /// run nobody stores need not pay for every step.
    ///
    /// The driver then waits until the consumer has read every item up to
    /// the checkpoint, so it performs the next step only once the state
    /// before it was handed out: a consumer that stops reading at a
    /// checkpoint (a durable host executing one step at a time) stops the
    /// run before the step it describes has started.
    pub(crate) async fn checkpoint(&mut self, state: impl FnOnce() -> RunState) {
        if self.checkpoints.load(Ordering::Relaxed) {
            self.buffer
                .push(Buffered::Checkpoint(Box::new(state())))
                .await;
            let buffer = &self.buffer;
            futures::future::poll_fn(|_| {
                // No waker needed: the stream takes items before it polls
                // the driver again (see `Buffer`).
                if buffer.is_empty() {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            })
            .await;
        }
    }
}

/// A running loop: a stream of events ending with the root run's
/// `finished` event. Dropping it cancels the run.
pub struct RunStream {
    buffer: Arc<Buffer>,
    driver: Option<BoxFuture<'static, ()>>,
    cancel_on_drop: Option<CancellationToken>,
    checkpoints: Arc<AtomicBool>,
}

impl RunStream {
    /// A stream driven by `drive`, which receives the emitter to write to.
    pub(crate) fn new<F, Fut>(drive: F) -> Self
    where
        F: FnOnce(Emitter) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let buffer = Arc::new(Buffer::default());
        let checkpoints = Arc::new(AtomicBool::new(false));
        let emitter = Emitter {
            buffer: Arc::clone(&buffer),
            seq: 0,
            checkpoints: Arc::clone(&checkpoints),
        };
        Self {
            buffer,
            driver: Some(Box::pin(drive(emitter))),
            cancel_on_drop: None,
            checkpoints,
        }
    }

    /// The run's events and, between steps, its state. Only runs of the
    /// built-in strategies write checkpoints.
    pub fn with_checkpoints(self) -> CheckpointedRun {
        self.checkpoints.store(true, Ordering::Relaxed);
        CheckpointedRun(self)
    }

    fn poll_item(&mut self, cx: &mut Context<'_>) -> Poll<Option<Buffered>> {
        loop {
            if let Some(item) = self.buffer.pop() {
                return Poll::Ready(Some(item));
            }
            let Some(driver) = self.driver.as_mut() else {
                return Poll::Ready(None);
            };
            match driver.as_mut().poll(cx) {
                // The driver is done; the loop hands out what it wrote last.
                Poll::Ready(()) => self.driver = None,
                // The driver waits for the consumer: hand out at once.
                Poll::Pending if self.buffer.is_full() => {}
                // The driver paused, maybe on I/O it has just started (a
                // request handed to its connection's task). If it wrote
                // events first, yield once before handing them out, so
                // that a single-threaded runtime runs that task (and the
                // request leaves) before the consumer's work on the
                // events, not after it. The next poll takes the events
                // without polling the driver.
                Poll::Pending => {
                    if !self.buffer.is_empty() {
                        cx.waker().wake_by_ref();
                    }
                    return Poll::Pending;
                }
            }
        }
    }

    /// Cancels `token` when the stream is dropped before the run ended, so
    /// work the run started outside its own future (tools on blocking
    /// threads, child runs) hears of it too.
    pub(crate) fn cancel_on_drop(mut self, token: CancellationToken) -> Self {
        self.cancel_on_drop = Some(token);
        self
    }
}

impl Drop for RunStream {
    fn drop(&mut self) {
        if self.driver.is_some()
            && let Some(token) = &self.cancel_on_drop
        {
            token.cancel();
        }
    }
}

impl Stream for RunStream {
    type Item = LoopEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<LoopEvent>> {
        loop {
            match self.poll_item(cx) {
                Poll::Ready(Some(Buffered::Event(event))) => return Poll::Ready(Some(event)),
                Poll::Ready(Some(Buffered::Checkpoint(_))) => continue,
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// A run read with its checkpoints; see [`RunStream::with_checkpoints`].
/// Dropping it cancels the run.
pub struct CheckpointedRun(RunStream);

impl Stream for CheckpointedRun {
    type Item = RunItem;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<RunItem>> {
        self.0.poll_item(cx).map(|item| {
            item.map(|item| match item {
                Buffered::Event(event) => RunItem::Event(event),
                Buffered::Checkpoint(state) => RunItem::Checkpoint(*state),
            })
        })
    }
}

/// Drains a run and returns the root run's result.
pub async fn collect(mut stream: RunStream) -> LoopResult {
    let mut last = None;
    while let Some(event) = stream.next().await {
        if let Some(result) = event.into_root_result() {
            last = Some(result);
        }
    }
    // The driver always ends with a root `finished` event; this fallback
    // only keeps the signature total.
    last.unwrap_or_else(|| LoopResult {
        status: agentloop_types::LoopStatus::Error {
            error: agentloop_types::LoopError::IncompleteStream,
        },
        messages: Default::default(),
        tokens: Default::default(),
        stop: None,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// A driver that only emits fills the buffer one past its bound, then
    /// waits for the consumer; every event arrives once, in order.
    #[test]
    fn a_driver_waits_once_the_buffer_is_past_its_bound() {
        let written = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&written);
        let mut stream = RunStream::new(move |mut emitter| async move {
            for _ in 0..1_000 {
                emitter.emit(EventKind::FirstChunk).await;
                counter.fetch_add(1, Ordering::SeqCst);
            }
        });
        let first = futures::executor::block_on(stream.next()).map(|e| e.seq);
        assert_eq!(first, Some(0));
        // The emit that went past the bound is still waiting.
        assert_eq!(written.load(Ordering::SeqCst), BUFFER);
        assert_eq!(stream.buffer.lock().len(), BUFFER);
        let rest: Vec<u64> = futures::executor::block_on(stream.map(|e| e.seq).collect());
        assert_eq!(rest, (1..1_000).collect::<Vec<u64>>());
        assert_eq!(written.load(Ordering::SeqCst), 1_000);
    }

    /// A driver that waits for room (not for I/O) is handed out from at
    /// once: a burst longer than the bound comes without a yield.
    #[test]
    fn a_burst_past_the_bound_comes_without_a_yield() {
        let (release, released) = futures::channel::oneshot::channel::<()>();
        let stream = RunStream::new(move |mut emitter| async move {
            for _ in 0..10 {
                emitter.emit(EventKind::FirstChunk).await;
            }
            released.await.ok();
        });
        let mut polled = Polled::new(stream);
        // The driver writes until the buffer is past its bound, then waits
        // for room; the bursts that fill it come without a yield.
        let room = (BUFFER + 1) as u64;
        let filled = 10 - 10 % room;
        let burst: Vec<_> = (0..filled).map(|_| polled.next()).collect();
        assert_eq!(
            burst,
            (0..filled).map(|seq| Some(Some(seq))).collect::<Vec<_>>()
        );
        assert_eq!(polled.wakes(), 0, "no yield inside the bursts");
        // The rest were written before the driver paused on its channel:
        // they come after one yield, as any events before a pause do.
        assert_eq!(polled.next(), None);
        assert_eq!(polled.wakes(), 1);
        let rest: Vec<_> = (filled..10).map(|_| polled.next()).collect();
        assert_eq!(
            rest,
            (filled..10).map(|seq| Some(Some(seq))).collect::<Vec<_>>()
        );
        assert_eq!(polled.next(), None, "the driver waits on its channel");
        release.send(()).ok();
        assert_eq!(polled.next(), Some(None));
    }

    /// A stream polled by hand with a waker that counts its wakes.
    struct Polled {
        stream: RunStream,
        wakes: Arc<CountWakes>,
        waker: std::task::Waker,
    }

    impl Polled {
        fn new(stream: RunStream) -> Self {
            let wakes = Arc::new(CountWakes(AtomicUsize::new(0)));
            let waker = std::task::Waker::from(Arc::clone(&wakes));
            Self {
                stream,
                wakes,
                waker,
            }
        }

        /// `None` when the stream is pending, else the next event's `seq`.
        fn next(&mut self) -> Option<Option<u64>> {
            let mut cx = Context::from_waker(&self.waker);
            match Pin::new(&mut self.stream).poll_next(&mut cx) {
                Poll::Ready(event) => Some(event.map(|e| e.seq)),
                Poll::Pending => None,
            }
        }

        fn wakes(&self) -> usize {
            self.wakes.0.load(Ordering::SeqCst)
        }
    }

    struct CountWakes(AtomicUsize);

    impl std::task::Wake for CountWakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A driver that wrote events and then paused (on a request it has
    /// handed to another task) is yielded once before its events are
    /// handed out; the events come next, without polling it again.
    #[test]
    fn events_written_before_a_pause_come_after_one_yield() {
        let (release, released) = futures::channel::oneshot::channel::<()>();
        let polls = Arc::new(AtomicUsize::new(0));
        let driver_polls = Arc::clone(&polls);
        let stream = RunStream::new(move |mut emitter| async move {
            emitter.emit(EventKind::FirstChunk).await;
            emitter.emit(EventKind::FirstChunk).await;
            let mut released = released;
            futures::future::poll_fn(|cx| {
                driver_polls.fetch_add(1, Ordering::SeqCst);
                Pin::new(&mut released).poll(cx)
            })
            .await
            .ok();
        });
        let mut polled = Polled::new(stream);

        assert_eq!(polled.next(), None, "the first poll yields");
        assert_eq!(polled.wakes(), 1, "and wakes itself");
        assert_eq!(polled.next(), Some(Some(0)));
        assert_eq!(polled.next(), Some(Some(1)));
        assert_eq!(
            polls.load(Ordering::SeqCst),
            1,
            "the driver was not polled again"
        );
        // Nothing buffered: the stream waits on the driver alone.
        assert_eq!(polled.next(), None);
        assert_eq!(polled.wakes(), 1);
        assert_eq!(polls.load(Ordering::SeqCst), 2);
        release.send(()).ok();
        assert_eq!(polled.next(), Some(None), "the driver ended");
    }
}
