//! The `tool-first` strategy's entry point: builds its machine
//! (`machine::strategies::tool_first`) and starts it on the driver.

use std::sync::Arc;

use agentloop_types::{LoopOptions, Message, Retriever};

use super::loop_strategy::LoopStrategy;
use crate::driver::{self, RunDeps};
use crate::machine::StrategyMachine;
use crate::machine::strategies::names;
use crate::machine::strategies::tool_first::ToolFirstMachine;
use crate::run_stream::RunStream;

/// One act step, then a plain answer; see the [strategy table](super).
#[derive(Clone)]
pub struct ToolFirstStrategy {
    /// Passages for the act step, if any.
    pub retriever: Option<Arc<dyn Retriever>>,
    /// How many passages to retrieve.
    pub passages: usize,
    /// Retries of a failed model call.
    pub max_retries: u32,
}

impl Default for ToolFirstStrategy {
    fn default() -> Self {
        Self {
            retriever: None,
            passages: 4,
            max_retries: 2,
        }
    }
}

impl LoopStrategy for ToolFirstStrategy {
    fn name(&self) -> &str {
        names::TOOL_FIRST
    }

    fn run(&self, options: LoopOptions, context: Vec<Message>, mut deps: RunDeps) -> RunStream {
        let machine = ToolFirstMachine::new(
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
            StrategyMachine::ToolFirst(Box::new(machine)),
        )
    }
}
