//! [`RunDispatch`]: where agent runs go to be executed when an outside
//! durable engine executes them instead of this instance's lease
//! scheduler (`agentloop serve --engine restate`).
//!
//! With a dispatcher set ([`ServerConfig::dispatch`](crate::ServerConfig)),
//! a run that must execute (started, taken over after its lease expired)
//! is handed to it instead of being executed here; the engine then calls
//! [`crate::durable::execute_attempt`] on one of the instances, which
//! executes it through the same lifecycle as a local run (one record,
//! lease, event log and cancel token, kept by the runtime). A waiting run
//! resumed by a decision is woken in the engine ([`RunDispatch::wake`]);
//! a run a person ended (cancel, Mark Done) is cancelled in it
//! ([`RunDispatch::cancel`], see [`crate::drive::cancel_in_engine`]), so
//! the engine stops retrying it.

use async_trait::async_trait;

/// Hands runs to the engine that executes them.
#[async_trait]
pub trait RunDispatch: Send + Sync {
    /// Asks the engine to execute run `run_id`. Idempotent: a run the
    /// engine executes already stays one execution.
    async fn dispatch(&self, run_id: &str) -> Result<(), String>;

    /// Wakes run `run_id`, parked on the wait named `wait` (see
    /// [`crate::waiting::wait_key`]) and now decided. Waking a wait that is
    /// over changes nothing.
    async fn wake(&self, run_id: &str, wait: &str) -> Result<(), String>;

    /// Cancels the engine's execution of run `run_id`, which a person
    /// ended; the engine logs the run's end if no instance does. An
    /// execution that ended already is left as it is.
    async fn cancel(&self, run_id: &str) -> Result<(), String>;
}
