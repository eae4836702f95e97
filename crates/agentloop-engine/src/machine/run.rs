//! One run as a machine: the shared [`RunCore`] and the strategy deciding
//! over it. Plan-and-execute nests one per step.

use agentloop_types::RunState;
use serde::{Deserialize, Serialize};

use super::compaction::{Compaction, PendingSummary};
use super::run_core::{Env, ModelCall, Retrieval, RunCore, Waiting};
use super::{Input, Step};
use crate::strategy::llm_only::LlmOnlyMachine;
use crate::strategy::native::NativeMachine;
use crate::strategy::plan::PlanMachine;
use crate::strategy::react::ReactMachine;
use crate::strategy::tool_first::ToolFirstMachine;

/// The built-in strategies' machines and their phases.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "strategy", rename_all = "kebab-case")]
pub(crate) enum StrategyMachine {
    Native(NativeMachine),
    React(ReactMachine),
    LlmOnly(LlmOnlyMachine),
    ToolFirst(ToolFirstMachine),
    PlanAndExecute(PlanMachine),
}

impl StrategyMachine {
    /// The strategy's name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            StrategyMachine::Native(_) => crate::strategy::NATIVE,
            StrategyMachine::React(_) => crate::strategy::REACT,
            StrategyMachine::LlmOnly(_) => crate::strategy::LLM_ONLY,
            StrategyMachine::ToolFirst(_) => crate::strategy::TOOL_FIRST,
            StrategyMachine::PlanAndExecute(_) => crate::strategy::PLAN_AND_EXECUTE,
        }
    }

    fn start(&mut self, core: &mut RunCore, env: &Env) -> Step {
        match self {
            StrategyMachine::Native(m) => m.start(core, env),
            StrategyMachine::React(m) => m.start(core, env),
            StrategyMachine::LlmOnly(m) => m.start(core, env),
            StrategyMachine::ToolFirst(m) => m.start(core, env),
            StrategyMachine::PlanAndExecute(m) => m.start(core, env),
        }
    }

    fn step(&mut self, core: &mut RunCore, env: &Env, input: Input) -> Step {
        match self {
            StrategyMachine::Native(m) => m.step(core, env, input),
            StrategyMachine::React(m) => m.step(core, env, input),
            StrategyMachine::LlmOnly(m) => m.step(core, env, input),
            StrategyMachine::ToolFirst(m) => m.step(core, env, input),
            StrategyMachine::PlanAndExecute(m) => m.step(core, env, input),
        }
    }

    /// The innermost run whose I/O is in flight: a plan step's nested run
    /// while it executes.
    fn nested(&self) -> Option<&Run> {
        match self {
            StrategyMachine::PlanAndExecute(m) => m.nested(),
            StrategyMachine::Native(_)
            | StrategyMachine::React(_)
            | StrategyMachine::LlmOnly(_)
            | StrategyMachine::ToolFirst(_) => None,
        }
    }
}

/// A core and the strategy deciding over it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Run {
    pub(crate) core: RunCore,
    pub(crate) machine: StrategyMachine,
}

/// What a top-level run stores in [`RunState::strategy`]: the strategy's
/// phase and the I/O in flight. (The rest of the core is the state itself.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Stored {
    machine: StrategyMachine,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model_call: Option<ModelCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retrieval: Option<Retrieval>,
    #[serde(default, skip_serializing_if = "is_zero")]
    output_retries: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    compaction: Option<Compaction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    summary: Option<PendingSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    waiting: Option<Waiting>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Run {
    pub(crate) fn new(state: RunState, machine: StrategyMachine) -> Self {
        Self {
            core: RunCore::new(state),
            machine,
        }
    }

    /// The run stored in `state`: its strategy phase, or a native run when
    /// the state names none.
    pub(crate) fn from_state(mut state: RunState) -> Result<Self, String> {
        let Some(value) = state.strategy.take() else {
            return Ok(Self::new(
                state,
                StrategyMachine::Native(NativeMachine::default()),
            ));
        };
        let stored: Stored = serde_json::from_value(value)
            .map_err(|e| format!("the strategy phase cannot be read: {e}"))?;
        let mut run = Self::new(state, stored.machine);
        run.core.model_call = stored.model_call;
        run.core.retrieval = stored.retrieval;
        run.core.output_retries = stored.output_retries;
        run.core.compaction = stored.compaction;
        run.core.summary = stored.summary;
        run.core.waiting = stored.waiting;
        Ok(run)
    }

    /// Writes the strategy's phase into the state, for storing.
    pub(crate) fn sync_state(&mut self) {
        let stored = Stored {
            machine: self.machine.clone(),
            model_call: self.core.model_call.clone(),
            retrieval: self.core.retrieval.clone(),
            output_retries: self.core.output_retries,
            compaction: self.core.compaction.clone(),
            summary: self.core.summary.clone(),
            waiting: self.core.waiting.clone(),
        };
        // These types always serialise; should one ever fail, the last
        // stored phase is kept rather than one that reads as native.
        if let Ok(value) = serde_json::to_value(&stored) {
            self.core.state.strategy = Some(value);
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
                error: agentloop_types::LoopError::Provider { error },
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
                } => match self.core.settle_tools(results, child_tokens) {
                    Ok(whole) => return self.machine.step(&mut self.core, env, whole),
                    Err(suspended) => return suspended,
                },
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
            other => other,
        }
    }

    /// What the innermost run waits for, when it ended `suspended`.
    pub(crate) fn pending(&self) -> Option<&[agentloop_types::PendingCall]> {
        match self.machine.nested() {
            Some(nested) => nested.pending(),
            None => self.core.pending(),
        }
    }

    /// What the run waits for.
    pub(crate) fn awaiting(&self) -> super::Awaiting {
        use super::Awaiting;
        if self.core.is_finished() {
            return Awaiting::Nothing;
        }
        if let Some(nested) = self.machine.nested() {
            return nested.awaiting();
        }
        if self.core.pending().is_some() {
            Awaiting::Decisions
        } else if self.core.summary.is_some() {
            Awaiting::Summary
        } else if self.core.model_call.is_some() {
            Awaiting::Model
        } else if self.core.retrieval.is_some() {
            Awaiting::Retrieval
        } else if matches!(
            self.core.state.phase,
            agentloop_types::RunPhase::RunTools { .. }
        ) {
            Awaiting::Tools
        } else {
            Awaiting::Start
        }
    }
}
