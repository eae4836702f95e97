//! The `llm-only` strategy: one plain model call, no tools:
//! `agent_start`, `agent_turn_start`, the turn, `agent_completion`.

use agentloop_types::{AgentStartEvent, AgentTurnStartEvent};
use std::sync::Arc;

use agentloop_types::{EventKind, LoopOptions, Message, Passage, Retriever};
use serde::{Deserialize, Serialize};

use super::LoopStrategy;
use super::act::{cited, retrieved};
use crate::machine::run_core::{Env, RunCore, ToolOffer};
use crate::machine::{Input, Step, StrategyMachine};
use crate::{RunDeps, RunStream, driver};

/// One plain model call, no tools; see the module docs.
#[derive(Clone)]
pub struct LlmOnlyStrategy {
    /// Passages for the call, if any.
    pub retriever: Option<Arc<dyn Retriever>>,
    /// How many passages to retrieve.
    pub passages: usize,
    /// Retries of a failed model call.
    pub max_retries: u32,
}

impl Default for LlmOnlyStrategy {
    fn default() -> Self {
        Self {
            retriever: None,
            passages: 4,
            max_retries: 2,
        }
    }
}

impl LoopStrategy for LlmOnlyStrategy {
    fn name(&self) -> &str {
        super::LLM_ONLY
    }

    fn run(&self, options: LoopOptions, context: Vec<Message>, mut deps: RunDeps) -> RunStream {
        let machine = LlmOnlyMachine {
            max_retries: self.max_retries,
            retrieve: self.retriever.as_ref().map(|_| self.passages),
        };
        if let Some(retriever) = &self.retriever {
            deps.retriever = Some(Arc::clone(retriever));
        }
        driver::start(options, context, deps, StrategyMachine::LlmOnly(machine))
    }
}

/// The llm-only machine. Its phase is the core's: retrieving, or the one
/// call in flight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LlmOnlyMachine {
    max_retries: u32,
    retrieve: Option<usize>,
}

impl LlmOnlyMachine {
    pub(crate) fn start(&mut self, core: &mut RunCore, env: &Env) -> Step {
        core.emit(EventKind::AgentStart(AgentStartEvent { max_steps: 1 }));
        if let Some(limit) = self.retrieve.take()
            && let Some(step) = core.retrieve(limit)
        {
            return step;
        }
        call(core, env, &[])
    }

    pub(crate) fn step(&mut self, core: &mut RunCore, env: &Env, input: Input) -> Step {
        match input {
            Input::Start => core.invalid("a second start"),
            // The run core takes decisions before they reach a strategy.
            Input::Decisions { .. } => core.invalid("decisions outside a suspended step"),
            // The run core answers summaries before they reach a strategy.
            Input::Summary { .. } | Input::SummaryFailed { .. } => {
                core.invalid("a summary outside a summarising step")
            }
            Input::Retrieved { passages } => {
                let passages = retrieved(core, passages);
                call(core, env, &passages)
            }
            Input::ModelTurn { content, usage, .. } => {
                core.take_call();
                core.consume(usage);
                let answer = core.commit_answer_turn(content);
                core.complete(1, answer)
            }
            Input::ModelFailed { error } => core.retry_or_fail(env, error, 1, self.max_retries),
            Input::ToolsDone { .. } => core.invalid("tool results in an llm-only run"),
            Input::Cancelled {
                partial_turn,
                finished_tools,
                child_tokens,
            } => core.cancel(partial_turn, finished_tools, child_tokens, Vec::new()),
        }
    }
}

fn call(core: &mut RunCore, env: &Env, passages: &[Passage]) -> Step {
    core.emit(EventKind::AgentTurnStart(AgentTurnStartEvent { step: 1 }));
    core.call_model(env, cited(passages), ToolOffer::Nothing, true)
}
