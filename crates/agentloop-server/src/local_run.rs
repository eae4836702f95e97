//! [`LocalRun`]: a run executing in this instance — its one cancel token,
//! why it was halted, and its live followers.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use agentloop_engine::Interrupt;
use agentloop_types::{CancellationToken, LoopEvent};
use tokio::sync::broadcast;

/// Why a run executing here was halted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Halt {
    /// A person ended it (cancel, Mark Done): the loop stops and the run
    /// ends as the person's end says.
    Cancel,
    /// This instance gives it up where it is (shutdown, lost lease): it
    /// stays `running` for the instance that continues it.
    Stop,
}

/// A run executing in this instance.
pub struct LocalRun {
    /// The run's one cancel token: the loop stops when it is cancelled.
    cancel: CancellationToken,
    /// Stops the step in flight so the run goes on with the messages sent
    /// to it (a message's `interrupt` strategy).
    interrupt: Interrupt,
    /// Why it was cancelled; the first reason wins.
    halt: Mutex<Option<Halt>>,
    /// Live events, for SSE followers. Made when the first follower comes:
    /// a channel holds its whole capacity from the start, and most runs
    /// are never followed live.
    events: OnceLock<broadcast::Sender<LoopEvent>>,
    capacity: usize,
    /// Set when the run was asked to execute here while this execution
    /// was still finishing: a decision that resumes it can come before the
    /// execution that suspended it has ended.
    again: AtomicBool,
}

impl LocalRun {
    /// A run whose live followers may fall `capacity` events behind.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            cancel: CancellationToken::new(),
            interrupt: Interrupt::new(),
            halt: Mutex::new(None),
            events: OnceLock::new(),
            capacity: capacity.max(1),
            again: AtomicBool::new(false),
        }
    }

    /// Asks for the run to be executed once more after this execution.
    pub(crate) fn execute_again(&self) {
        self.again.store(true, Ordering::SeqCst);
    }

    /// Whether [`Self::execute_again`] was asked, clearing it.
    pub(crate) fn take_again(&self) -> bool {
        self.again.swap(false, Ordering::SeqCst)
    }

    /// Halts the run for `why`; a run halted already keeps its first
    /// reason.
    pub fn halt(&self, why: Halt) {
        self.halt
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert(why);
        self.cancel.cancel();
    }

    /// Why the run was halted, if it was.
    pub fn halted(&self) -> Option<Halt> {
        *self.halt.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The run's cancel token, for the loop.
    pub fn token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// The run's interrupt signal, for the loop.
    pub fn interrupt(&self) -> &Interrupt {
        &self.interrupt
    }

    /// Receives the live events sent from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<LoopEvent> {
        self.events
            .get_or_init(|| broadcast::channel(self.capacity).0)
            .subscribe()
    }

    /// Sends a stored event to the live followers, if any.
    pub fn send(&self, event: LoopEvent) {
        if let Some(events) = self.events.get()
            && events.receiver_count() > 0
        {
            let _ = events.send(event);
        }
    }
}
