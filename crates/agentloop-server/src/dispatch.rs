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
//! ([`RunDispatch::cancel`]), so the engine stops retrying it.

use async_trait::async_trait;

use crate::state::AppState;

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

/// Cancels the engine's execution of a run a person ended (nothing without
/// an engine). A failure is logged: the run's end is logged anyway by the
/// engine's next attempt, which finds the run ended.
pub async fn cancel_in_engine(state: &AppState, run_id: &str) {
    if let Some(dispatch) = &state.config.dispatch
        && let Err(error) = dispatch.cancel(run_id).await
    {
        tracing::warn!(agent_run_id = %run_id, %error,
                       "the durable engine did not take the run's cancellation");
    }
}
