//! The `native` strategy's entry point: builds its machine
//! (`machine::strategies::native`) and starts it on the driver.

use std::sync::Arc;

use agentloop_types::{LoopOptions, Message, Retriever};

use super::loop_strategy::LoopStrategy;
use crate::driver::{self, RunDeps};
use crate::machine::StrategyMachine;
use crate::machine::strategies::names;
use crate::machine::strategies::native::NativeMachine;
use crate::run_stream::RunStream;

/// The engine's own loop; see the [strategy table](super).
#[derive(Clone)]
pub struct NativeStrategy {
    /// Passages for the first step, if any.
    pub retriever: Option<Arc<dyn Retriever>>,
    /// How many passages to retrieve.
    pub passages: usize,
}

impl Default for NativeStrategy {
    fn default() -> Self {
        Self {
            retriever: None,
            passages: 4,
        }
    }
}

impl LoopStrategy for NativeStrategy {
    fn name(&self) -> &str {
        names::NATIVE
    }

    fn run(&self, options: LoopOptions, context: Vec<Message>, mut deps: RunDeps) -> RunStream {
        let machine = NativeMachine::new(self.retriever.as_ref().map(|_| self.passages));
        if let Some(retriever) = &self.retriever {
            deps.retriever = Some(Arc::clone(retriever));
        }
        driver::start(options, context, deps, StrategyMachine::Native(machine))
    }
}
