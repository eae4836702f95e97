//! The built-in strategies as one machine type, and what a top-level run
//! stores of it in [`RunState::strategy`].

use agentloop_types::RunState;
use serde::{Deserialize, Serialize};

use super::compaction::{Compaction, PendingSummary};
use super::context_edits::ContextEdits;
use super::protocol::{Input, Step};
use super::run::{Decider, Nested, Run};
use super::run_core::{Env, ModelCall, PendingHook, Retrieval, RunCore, TakenHandoff};
use super::strategies::llm_only::LlmOnlyMachine;
use super::strategies::names;
use super::strategies::native::NativeMachine;
use super::strategies::plan::PlanMachine;
use super::strategies::react::ReactMachine;
use super::strategies::tool_first::ToolFirstMachine;
use super::waits::Waiting;

/// The built-in strategies' machines and their phases.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "strategy", rename_all = "kebab-case")]
pub(crate) enum StrategyMachine {
    Native(NativeMachine),
    // The larger machines are boxed: every run holds this enum, and most
    // runs are native.
    React(Box<ReactMachine>),
    LlmOnly(LlmOnlyMachine),
    ToolFirst(Box<ToolFirstMachine>),
    PlanAndExecute(Box<PlanMachine>),
}

impl StrategyMachine {
    /// The strategy's name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            StrategyMachine::Native(_) => names::NATIVE,
            StrategyMachine::React(_) => names::REACT,
            StrategyMachine::LlmOnly(_) => names::LLM_ONLY,
            StrategyMachine::ToolFirst(_) => names::TOOL_FIRST,
            StrategyMachine::PlanAndExecute(_) => names::PLAN_AND_EXECUTE,
        }
    }
}

impl Decider for StrategyMachine {
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

    fn nested(&self) -> Option<&dyn Nested> {
        match self {
            StrategyMachine::PlanAndExecute(m) => m.nested(),
            StrategyMachine::Native(_)
            | StrategyMachine::React(_)
            | StrategyMachine::LlmOnly(_)
            | StrategyMachine::ToolFirst(_) => None,
        }
    }
}

/// What a top-level run stores in [`RunState::strategy`]: the strategy's
/// phase and the I/O in flight. (The rest of the core is the state itself.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Stored {
    machine: StrategyMachine,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model_call: Option<ModelCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retrieval: Option<Box<Retrieval>>,
    #[serde(default, skip_serializing_if = "is_zero")]
    output_retries: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    compaction: Option<Box<Compaction>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    summary: Option<Box<PendingSummary>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    waiting: Option<Box<Waiting>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hook: Option<Box<PendingHook>>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    hooks_started: bool,
    #[serde(default, skip_serializing_if = "is_zero")]
    continues: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent: Option<String>,
    #[serde(default, skip_serializing_if = "is_zero")]
    handoffs: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    handoff_point: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    handoff_to: Option<Box<TakenHandoff>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    context: Option<Box<ContextEdits>>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Run<StrategyMachine> {
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
        run.core.hook = stored.hook;
        run.core.hooks_started = stored.hooks_started;
        run.core.continues = stored.continues;
        run.core.agent = stored.agent;
        run.core.handoffs = stored.handoffs;
        run.core.handoff_point = stored.handoff_point;
        run.core.handoff_to = stored.handoff_to;
        run.core.context = stored.context;
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
            hook: self.core.hook.clone(),
            hooks_started: self.core.hooks_started,
            continues: self.core.continues,
            agent: self.core.agent.clone(),
            handoffs: self.core.handoffs,
            handoff_point: self.core.handoff_point.clone(),
            handoff_to: self.core.handoff_to.clone(),
            context: self.core.context.clone(),
        };
        // These types always serialise; should one ever fail, the last
        // stored phase is kept rather than one that reads as native.
        if let Ok(value) = serde_json::to_value(&stored) {
            self.core.state.strategy = Some(value);
        }
    }
}
