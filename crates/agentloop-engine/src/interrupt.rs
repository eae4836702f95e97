//! [`Interrupt`]: a signal that stops the step a run has in flight
//! without ending the run, so that it goes on with what was sent to it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::Notify;

/// Asks a run to stop the model call or tool step it has in flight and go
/// on: an interrupted model call keeps what it streamed (its calls
/// answered as not run) and is made again after the messages its inbox
/// holds (see [`RunDeps::with_inbox`](crate::RunDeps::with_inbox)); an
/// interrupted tool step answers every call that had not finished, and the
/// run goes on to its next step, where those messages join. A request
/// made while the run is between steps interrupts its next model call or
/// tool step, unless the run took its inbox's messages in between (they
/// were then delivered as the request asked). Cloning shares the signal.
#[derive(Clone, Debug, Default)]
pub struct Interrupt(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    /// Requests so far.
    requested: AtomicU64,
    notify: Notify,
}

impl Interrupt {
    /// A signal nothing has requested yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Interrupts the step in flight of the runs holding this signal.
    pub fn interrupt(&self) {
        self.0.requested.fetch_add(1, Ordering::SeqCst);
        self.0.notify.notify_waiters();
    }

    /// Requests so far: what a run has seen.
    pub(crate) fn mark(&self) -> u64 {
        self.0.requested.load(Ordering::SeqCst)
    }

    /// Resolves once a request comes after `seen`.
    pub(crate) async fn after(&self, seen: u64) {
        loop {
            let notified = self.0.notify.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if self.mark() > seen {
                return;
            }
            notified.await;
        }
    }
}
