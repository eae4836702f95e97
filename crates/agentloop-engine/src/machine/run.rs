//! One run as a machine: the shared [`RunCore`] and the strategy deciding
//! over it. Plan-and-execute nests one per step.

use agentloop_types::{LoopError, PendingCall, RunPhase, RunState};
use serde::{Deserialize, Serialize};

use super::protocol::{Awaiting, Input, Step};
use super::run_core::{AfterHooks, Env, RunCore};

/// A strategy's decisions over a run core: what each built-in strategy's
/// machine implements.
pub(crate) trait Decider {
    /// Begins a fresh run.
    fn start(&mut self, core: &mut RunCore, env: &Env) -> Step;
    /// Advances by one input other than `Start`.
    fn step(&mut self, core: &mut RunCore, env: &Env, input: Input) -> Step;
    /// The innermost run whose I/O is in flight: a plan step's nested run
    /// while it executes.
    fn nested(&self) -> Option<&dyn Nested> {
        None
    }
}

/// What the machine reads of a nested run.
pub(crate) trait Nested {
    /// What the innermost run waits for, when it ended `suspended`.
    fn pending(&self) -> Option<&[PendingCall]>;
    /// What the run waits for.
    fn awaiting(&self) -> Awaiting;
}

/// A core and the strategy deciding over it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Run<M> {
    pub(crate) core: RunCore,
    pub(crate) machine: M,
}

impl<M: Decider> Run<M> {
    pub(crate) fn new(state: RunState, machine: M) -> Self {
        Self {
            core: RunCore::new(state),
            machine,
        }
    }

    /// Begins, or picks up what was in flight when the state was stored.
    pub(crate) fn start(&mut self, env: &Env) -> Step {
        if let Some(step) = self.core.resume_pending(env) {
            return step;
        }
        self.machine.start(&mut self.core, env)
    }

    /// Advances by one input other than `Start`.
    pub(crate) fn step(&mut self, env: &Env, mut input: Input) -> Step {
        // A summary answers the core of the run that asked for it: this one,
        // unless a nested run has I/O in flight.
        if self.machine.nested().is_none() {
            // A turn that failed after its usage arrived (a stream cut after
            // `message_delta`) was still billed: count it.
            if let Input::ModelFailed {
                error: LoopError::Provider { error },
            } = &input
                && let Some(usage) = error.partial.as_ref().and_then(|p| p.usage)
            {
                self.core.consume(usage);
            }
            input = self.unique_call_ids(input);
            match input {
                Input::Summary { text, usage } => {
                    return self.core.summarised(env, Ok((text, usage)));
                }
                Input::SummaryFailed { error } => return self.core.summarised(env, Err(error)),
                // Decisions and the rounds of a step that waits are the
                // core's: the strategy sees the step once it is whole.
                Input::Decisions { decisions } => return self.core.decide(env, decisions),
                Input::ToolsDone {
                    results,
                    child_tokens,
                } => match self.core.settle_tools(env, results, child_tokens) {
                    Ok(whole) => return self.machine.step(&mut self.core, env, whole),
                    Err(suspended) => return suspended,
                },
                Input::Steer {
                    messages,
                    interrupted,
                } => return self.core.steer(env, messages, interrupted),
                Input::GuardrailTripped {
                    guardrail,
                    reason,
                    usage,
                } => return self.core.guardrail_tripped(guardrail, reason, usage),
                // Hooks answer the core, which goes on with what it was
                // about to do.
                Input::Hooked { answers } => {
                    return match self.core.hooked(env, answers) {
                        AfterHooks::Step(step) => step,
                        AfterHooks::StartStrategy => self.machine.start(&mut self.core, env),
                        AfterHooks::Settle => {
                            match self.core.settle_tools(env, Vec::new(), Default::default()) {
                                Ok(whole) => self.machine.step(&mut self.core, env, whole),
                                Err(step) => step,
                            }
                        }
                    };
                }
                _ => {}
            }
        }
        self.machine.step(&mut self.core, env, input)
    }

    /// A turn (or the part of one streamed before a cancel) with every
    /// reused call id renamed, before any strategy commits it.
    fn unique_call_ids(&self, input: Input) -> Input {
        match input {
            Input::ModelTurn {
                content,
                stop_reason,
                usage,
            } => Input::ModelTurn {
                content: self.core.unique_call_ids(content),
                stop_reason,
                usage,
            },
            Input::Cancelled {
                partial_turn,
                finished_tools,
                child_tokens,
            } => Input::Cancelled {
                partial_turn: partial_turn.map(|turn| self.core.unique_call_ids(turn)),
                finished_tools,
                child_tokens,
            },
            Input::Steer {
                messages,
                interrupted,
            } => Input::Steer {
                messages,
                interrupted: interrupted.map(|turn| self.core.unique_call_ids(turn)),
            },
            other => other,
        }
    }

    /// Whether the run itself (not a nested one) awaits the answer to a
    /// model call not yet made: where messages sent to it may join.
    pub(crate) fn steerable(&self) -> bool {
        self.machine.nested().is_none()
            && self.core.hook.is_none()
            && self.core.summary.is_none()
            && self.core.pending().is_none()
            && self.core.model_call.is_some()
            && !self.core.is_finished()
    }

    /// What the innermost run waits for, when it ended `suspended`.
    pub(crate) fn pending(&self) -> Option<&[PendingCall]> {
        match self.machine.nested() {
            Some(nested) => nested.pending(),
            None => self.core.pending(),
        }
    }

    /// What the run waits for.
    pub(crate) fn awaiting(&self) -> Awaiting {
        if self.core.is_finished() {
            return Awaiting::Nothing;
        }
        if let Some(nested) = self.machine.nested() {
            return nested.awaiting();
        }
        if self.core.hook.is_some() {
            Awaiting::Hooks
        } else if self.core.pending().is_some() {
            Awaiting::Decisions
        } else if self.core.summary.is_some() {
            Awaiting::Summary
        } else if self.core.model_call.is_some() {
            Awaiting::Model
        } else if self.core.retrieval.is_some() {
            Awaiting::Retrieval
        } else if matches!(self.core.state.phase, RunPhase::RunTools { .. }) {
            Awaiting::Tools
        } else {
            Awaiting::Start
        }
    }
}

impl<M: Decider> Nested for Run<M> {
    fn pending(&self) -> Option<&[PendingCall]> {
        Run::pending(self)
    }

    fn awaiting(&self) -> Awaiting {
        Run::awaiting(self)
    }
}
