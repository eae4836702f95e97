//! The [`LoopStrategy`] port: a way to run an agent, selected by name.

use agentloop_types::{LoopOptions, Message};

use crate::driver::RunDeps;
use crate::run_stream::RunStream;

/// A way to run an agent: same inputs and event contract as [`run`](crate::run).
pub trait LoopStrategy: Send + Sync {
    /// The name it is registered and selected by.
    fn name(&self) -> &str;
    /// Starts a run; the stream ends with the root `finished` event.
    fn run(&self, options: LoopOptions, context: Vec<Message>, deps: RunDeps) -> RunStream;
}
