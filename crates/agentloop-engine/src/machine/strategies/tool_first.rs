//! The `tool-first` strategy: one act step whose first tool call runs,
//! then a plain answer call (two steps). A first turn with no call is the
//! answer.

use agentloop_types::{AgentStartEvent, AgentTurnStartEvent};
use agentloop_types::{EventKind, Passage};
use serde::{Deserialize, Serialize};

use super::act::{self, ActStart, Acting, cited, final_call, retrieved};
use super::react::FINAL_PROMPT;
use crate::machine::protocol::{Input, Step};
use crate::machine::run::Decider;
use crate::machine::run_core::{Env, RunCore, ToolOffer};

/// Where a tool-first run is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub(crate) enum ToolFirstPhase {
    /// Not started, or retrieving.
    Starting,
    /// The act call is in flight.
    Act,
    /// Its first call runs.
    Acting(Acting),
    /// The plain answer call of a step is in flight.
    Answer { step: u32 },
}

/// The tool-first machine; see the module docs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ToolFirstMachine {
    max_retries: u32,
    retrieve: Option<usize>,
    phase: ToolFirstPhase,
}

impl ToolFirstMachine {
    /// One act step and an answer, each model call retried `max_retries`
    /// times, after retrieving up to `retrieve` passages, if given.
    pub(crate) fn new(max_retries: u32, retrieve: Option<usize>) -> Self {
        Self {
            max_retries,
            retrieve,
            phase: ToolFirstPhase::Starting,
        }
    }

    pub(crate) fn start(&mut self, core: &mut RunCore, env: &Env) -> Step {
        core.emit(EventKind::AgentStart(AgentStartEvent { max_steps: 2 }));
        if let Some(limit) = self.retrieve.take()
            && let Some(step) = core.retrieve(limit)
        {
            return step;
        }
        self.act(core, env, &[])
    }

    fn act(&mut self, core: &mut RunCore, env: &Env, passages: &[Passage]) -> Step {
        core.emit(EventKind::AgentTurnStart(AgentTurnStartEvent { step: 1 }));
        self.phase = ToolFirstPhase::Act;
        core.call_model(env, cited(passages), ToolOffer::RunTools, true)
    }

    fn answer(&mut self, core: &mut RunCore, env: &Env, step: u32) -> Step {
        self.phase = ToolFirstPhase::Answer { step };
        final_call(core, env, FINAL_PROMPT)
    }

    pub(crate) fn step(&mut self, core: &mut RunCore, env: &Env, input: Input) -> Step {
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
                self.act(core, env, &passages)
            }
            Input::ModelTurn { content, usage, .. } => {
                core.take_call();
                core.consume(usage);
                match self.phase.clone() {
                    ToolFirstPhase::Act => match act::begin(core, env, 1, content) {
                        ActStart::NoCall(text) if text.trim().is_empty() => {
                            self.answer(core, env, 1)
                        }
                        ActStart::NoCall(text) => core.complete(1, text),
                        ActStart::Running(next, acting) => {
                            self.phase = ToolFirstPhase::Acting(acting);
                            next
                        }
                    },
                    ToolFirstPhase::Answer { step } => {
                        let answer = core.commit_answer_turn(content);
                        core.complete(step, answer)
                    }
                    ToolFirstPhase::Starting | ToolFirstPhase::Acting(_) => {
                        core.invalid("a model turn outside a model step")
                    }
                }
            }
            Input::ModelFailed { error } => {
                let step = match &self.phase {
                    ToolFirstPhase::Answer { step } => *step,
                    ToolFirstPhase::Starting | ToolFirstPhase::Act | ToolFirstPhase::Acting(_) => 1,
                };
                core.retry_or_fail(env, error, step, self.max_retries)
            }
            Input::ToolsDone {
                results,
                child_tokens,
            } => {
                let ToolFirstPhase::Acting(acting) =
                    std::mem::replace(&mut self.phase, ToolFirstPhase::Starting)
                else {
                    return core.invalid("tool results outside the act step");
                };
                match act::done(core, acting, results, child_tokens) {
                    Err(end) => end,
                    Ok(_) => {
                        core.emit(EventKind::AgentTurnStart(AgentTurnStartEvent { step: 2 }));
                        self.answer(core, env, 2)
                    }
                }
            }
            // The machine hands a refused budget on as a cancel (the
            // call was never made).
            Input::BudgetRefused { .. } => {
                let extra = match &self.phase {
                    ToolFirstPhase::Acting(acting) => acting.not_run.clone(),
                    _ => Vec::new(),
                };
                core.cancel(None, Vec::new(), Default::default(), extra)
            }
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
            } => {
                let extra = match &self.phase {
                    ToolFirstPhase::Acting(acting) => acting.not_run.clone(),
                    _ => Vec::new(),
                };
                core.cancel(partial_turn, finished_tools, child_tokens, extra)
            }
        }
    }
}

impl Decider for ToolFirstMachine {
    fn start(&mut self, core: &mut RunCore, env: &Env) -> Step {
        ToolFirstMachine::start(self, core, env)
    }

    fn step(&mut self, core: &mut RunCore, env: &Env, input: Input) -> Step {
        ToolFirstMachine::step(self, core, env, input)
    }
}
