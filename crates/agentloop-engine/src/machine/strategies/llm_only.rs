//! The `llm-only` strategy: one plain model call, no tools:
//! `agent_start`, `agent_turn_start`, the turn, `agent_completion`.

use agentloop_types::{AgentStartEvent, AgentTurnStartEvent};
use agentloop_types::{EventKind, Passage};
use serde::{Deserialize, Serialize};

use super::act::{cited, retrieved};
use crate::machine::protocol::{Input, Step};
use crate::machine::run::Decider;
use crate::machine::run_core::{Env, RunCore, ToolOffer};

/// The llm-only machine. Its phase is the core's: retrieving, or the one
/// call in flight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LlmOnlyMachine {
    max_retries: u32,
    retrieve: Option<usize>,
}

impl LlmOnlyMachine {
    /// One call, retried `max_retries` times, after retrieving up to
    /// `retrieve` passages, if given.
    pub(crate) fn new(max_retries: u32, retrieve: Option<usize>) -> Self {
        Self {
            max_retries,
            retrieve,
        }
    }
}

impl Decider for LlmOnlyMachine {
    fn start(&mut self, core: &mut RunCore, env: &Env) -> Step {
        core.emit(EventKind::AgentStart(AgentStartEvent { max_steps: 1 }));
        if let Some(limit) = self.retrieve.take()
            && let Some(step) = core.retrieve(limit)
        {
            return step;
        }
        call(core, env, &[])
    }

    fn step(&mut self, core: &mut RunCore, env: &Env, input: Input) -> Step {
        match input {
            Input::Start => core.invalid("a second start"),
            // The run core takes decisions before they reach a strategy.
            Input::Decisions { .. } => core.invalid("decisions outside a suspended step"),
            // The run core takes hook answers before they reach a strategy.
            Input::Hooked { .. } => core.invalid("hook answers outside a hook step"),
            Input::Steer { .. } => core.invalid("messages to steer outside a model step"),
            Input::GuardrailTripped { .. } => core.invalid("a guardrail outside a model step"),
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
            // The machine hands a passed deadline on as a cancel; the
            // arm takes both so the match stays exhaustive.
            Input::Cancelled {
                partial_turn,
                finished_tools,
                child_tokens,
            }
            | Input::TimedOut {
                partial_turn,
                finished_tools,
                child_tokens,
            } => core.cancel(partial_turn, finished_tools, child_tokens, Vec::new()),
            // So is a refused budget (the call was never made).
            Input::BudgetRefused { .. } => {
                core.cancel(None, Vec::new(), Default::default(), Vec::new())
            }
        }
    }
}

fn call(core: &mut RunCore, env: &Env, passages: &[Passage]) -> Step {
    core.emit(EventKind::AgentTurnStart(AgentTurnStartEvent { step: 1 }));
    core.call_model(env, cited(passages), ToolOffer::Nothing, true)
}
