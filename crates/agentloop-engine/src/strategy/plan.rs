//! The `plan-and-execute` strategy's entry point: builds its machine
//! (`machine::strategies::plan`) and starts it on the driver.

use agentloop_types::{LoopOptions, Message};

use super::loop_strategy::LoopStrategy;
use crate::driver::{self, RunDeps};
use crate::machine::StrategyMachine;
use crate::machine::strategies::names;
use crate::machine::strategies::plan::PlanMachine;
use crate::run_stream::RunStream;

/// The plan-and-execute strategy; see the [strategy table](super).
#[derive(Debug, Clone)]
pub struct PlanExecuteStrategy {
    /// Steps run at most (re-planned ones included).
    pub max_steps: u32,
    /// Re-plans allowed after failed steps.
    pub max_replans: u32,
    /// Retries of a failed planning or answer call.
    pub max_retries: u32,
}

impl Default for PlanExecuteStrategy {
    fn default() -> Self {
        Self {
            max_steps: 8,
            max_replans: 1,
            max_retries: 2,
        }
    }
}

impl LoopStrategy for PlanExecuteStrategy {
    fn name(&self) -> &str {
        names::PLAN_AND_EXECUTE
    }

    fn run(&self, options: LoopOptions, context: Vec<Message>, deps: RunDeps) -> RunStream {
        let machine = PlanMachine::new(self.max_steps.max(1), self.max_replans, self.max_retries);
        driver::start(
            options,
            context,
            deps,
            StrategyMachine::PlanAndExecute(Box::new(machine)),
        )
    }
}
