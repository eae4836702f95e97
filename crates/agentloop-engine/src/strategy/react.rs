//! The `react` strategy's entry point: builds its machine
//! (`machine::strategies::react`) and starts it on the driver.

use std::sync::Arc;

use agentloop_types::{LoopOptions, Message, Retriever};

use super::loop_strategy::LoopStrategy;
use crate::driver::{self, RunDeps};
use crate::machine::StrategyMachine;
use crate::machine::strategies::names;
use crate::machine::strategies::react::ReactMachine;
use crate::run_stream::RunStream;

/// The ReAct strategy; see the [strategy table](super).
#[derive(Clone)]
pub struct ReactStrategy {
    /// Reason–act–observe steps before the final plain call.
    pub max_steps: u32,
    /// Retries of a failed model call.
    pub max_retries: u32,
    /// Passages for the act step, if any.
    pub retriever: Option<Arc<dyn Retriever>>,
    /// How many passages to retrieve.
    pub passages: usize,
}

impl Default for ReactStrategy {
    fn default() -> Self {
        Self {
            max_steps: 10,
            max_retries: 2,
            retriever: None,
            passages: 4,
        }
    }
}

impl LoopStrategy for ReactStrategy {
    fn name(&self) -> &str {
        names::REACT
    }

    fn run(&self, options: LoopOptions, context: Vec<Message>, mut deps: RunDeps) -> RunStream {
        let machine = ReactMachine::new(
            self.max_steps.max(1),
            self.max_retries,
            self.retriever.as_ref().map(|_| self.passages),
        );
        if let Some(retriever) = &self.retriever {
            deps.retriever = Some(Arc::clone(retriever));
        }
        driver::start(
            options,
            context,
            deps,
            StrategyMachine::React(Box::new(machine)),
        )
    }
}
