//! The [`Machine`]: one run's decisions over its [`RunState`], stepped by
//! the driver one [`Input`] at a time (see the [module docs](super)).

use agentloop_types::{
    ApiKind, DecisionError, Decisions, EventKind, FinishedEvent, History, HookPoint, LimitKind,
    LoopError, LoopOptions, LoopStatus, PendingCall, RUN_STATE_SCHEMA_VERSION, RunState,
    check_decisions,
};

use super::handoffs::HandoffPlan;
use super::output::OutputPlan;
use super::protocol::{Awaiting, Input, OfferedTool, Output, Step, StepError};
use super::run::Run;
use super::run_core::{Env, HookConfig};
use super::strategies::names;
use super::strategy_machine::StrategyMachine;

/// The loop's decision logic over a [`RunState`]; see the module docs.
#[derive(Debug, Clone)]
pub struct Machine {
    run: Run<StrategyMachine>,
    env: Env,
    started: bool,
    /// Why the stored state cannot be resumed, found when it was read.
    unreadable: Option<String>,
    /// Whether `RunState::strategy` holds the strategy's current phase;
    /// it is written when the state is read, not after every step.
    synced: bool,
    /// Why the run is refused before its first step: an output schema its
    /// strategy cannot honour (boxed: rare).
    refused: Option<Box<LoopError>>,
    /// Whether the machine refused the run: it awaits nothing more.
    ended: bool,
}

impl Machine {
    /// A machine for `state` under `options`, offering no tools: the
    /// strategy stored in the state, or the native loop when it names none.
    /// Its provider names no API until [`with_api`](Self::with_api) says
    /// which.
    pub fn new(state: RunState, options: LoopOptions) -> Self {
        let (run, unreadable) = match Run::from_state(state.clone()) {
            Ok(run) => (run, None),
            Err(reason) => (
                Run::new(state, StrategyMachine::Native(Default::default())),
                Some(reason),
            ),
        };
        Self::from_run(run, options, unreadable)
    }

    /// A machine running `strategy` over a fresh `state`.
    pub(crate) fn with_strategy(
        state: RunState,
        options: LoopOptions,
        strategy: StrategyMachine,
    ) -> Self {
        Self::from_run(Run::new(state, strategy), options, None)
    }

    fn from_run(
        run: Run<StrategyMachine>,
        options: LoopOptions,
        unreadable: Option<String>,
    ) -> Self {
        let machine = Self {
            run,
            env: Env::new(options, Vec::new(), None),
            started: false,
            unreadable,
            // Written when the state is first read: a run nobody stores
            // never serialises its strategy.
            synced: false,
            refused: None,
            ended: false,
        };
        machine.with_api(None)
    }

    /// The wire API the run's provider speaks
    /// ([`ModelProvider::api`](agentloop_types::ModelProvider::api)); the
    /// driver sets it from the provider. It decides, once, how an output
    /// schema is asked for: the request's response format where the API
    /// has one, else the `final_output` tool (also when no API is named).
    pub fn with_api(mut self, api: Option<ApiKind>) -> Self {
        let plan = OutputPlan::for_run(&self.env.options, self.run.machine.name(), api);
        let (output, refused) = match plan {
            OutputPlan::Free => (None, None),
            OutputPlan::Held(rules) => (Some(rules), None),
            OutputPlan::Refused(error) => (None, Some(error)),
        };
        self.refused = refused.map(Box::new);
        self.env = self.env.with_output(output);
        self
    }

    /// Offers these tools (narrowed by `LoopOptions::enabled_tools`).
    /// Calls of other tools are answered as unknown.
    pub fn with_tools<T: Into<OfferedTool>>(mut self, tools: impl IntoIterator<Item = T>) -> Self {
        let tools = tools.into_iter().map(Into::into).collect();
        self.env = self.env.with_tools(tools);
        self
    }

    /// Lets the run's agents hand the conversation to each other as `plan`
    /// says: the root agent offers the run's tools (those of
    /// [`with_tools`](Self::with_tools)) and its handoff tools. Only the
    /// native strategy hands off; any other refuses the run before its
    /// first step.
    pub fn with_handoffs(mut self, plan: Option<HandoffPlan>) -> Self {
        if plan.is_some() && self.run.machine.name() != names::NATIVE {
            self.refused = Some(Box::new(LoopError::HandoffsUnsupported {
                strategy: self.run.machine.name().to_owned(),
            }));
        }
        self.env = self.env.with_handoffs(plan);
        self
    }

    /// The agent speaking (the one the next model call or tool step is
    /// for), in a run that hands off; `None` in one that does not.
    pub fn speaker(&self) -> Option<String> {
        self.run.core.speaker(&self.env)
    }

    /// Runs the run's input guardrails beside its first model call
    /// ([`Step::CallModel`]'s `guard_input`).
    pub fn with_input_guardrails(mut self, guarded: bool) -> Self {
        self.env.input_guardrails = guarded;
        self
    }

    /// Asks hooks at these points ([`Step::Hook`]), and lets `run_end`
    /// hooks send the run back to the model at most `max_continues`
    /// times. With no points (the default) the machine never asks.
    pub fn with_hooks(
        mut self,
        points: impl IntoIterator<Item = HookPoint>,
        max_continues: u32,
    ) -> Self {
        self.env.hooks = HookConfig {
            points: points.into_iter().collect(),
            max_continues,
        };
        self
    }

    /// The current state, for storing, with the strategy's phase written
    /// into it.
    pub fn state(&mut self) -> &RunState {
        if !self.synced {
            self.run.sync_state();
            self.synced = true;
        }
        &self.run.core.state
    }

    /// The run's history as it stands (what its stored state holds).
    pub fn history(&self) -> &History {
        &self.run.core.state.messages
    }

    /// The options the run was given.
    pub fn options(&self) -> &LoopOptions {
        &self.env.options
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.run.core.state.run_id
    }

    /// The name of the strategy deciding.
    pub fn strategy(&self) -> &'static str {
        self.run.machine.name()
    }

    /// The input the machine accepts next.
    pub fn awaiting(&self) -> Awaiting {
        if self.ended {
            return Awaiting::Nothing;
        }
        let awaiting = self.run.awaiting();
        if !self.started && !matches!(awaiting, Awaiting::Nothing | Awaiting::Decisions) {
            return Awaiting::Start;
        }
        awaiting
    }

    /// Whether [`Input::Steer`] is taken now: the machine asked for a
    /// model call ([`Step::CallModel`]) that is not yet made, in the run
    /// itself rather than a plan step's nested run.
    pub fn steerable(&self) -> bool {
        !self.ended && self.started && self.run.steerable()
    }

    /// Whether the run's history holds a message with this id.
    pub fn holds_message(&self, id: &str) -> bool {
        self.run.core.messages().iter().any(|m| m.id == id)
    }

    /// What a suspended run waits for (empty for any other run).
    pub fn pending(&self) -> &[PendingCall] {
        self.run.pending().unwrap_or_default()
    }

    /// Whether `decisions` decide exactly what the run waits for.
    pub fn check_decisions(&self, decisions: &Decisions) -> Result<(), DecisionError> {
        check_decisions(self.pending(), decisions)
    }

    /// Advances the machine by one input. An out-of-phase input trips a
    /// `debug_assert`; see [`StepError`].
    pub fn step(&mut self, input: Input) -> Result<Output, StepError> {
        let result = self.try_step(input);
        debug_assert!(
            !matches!(result, Err(StepError::OutOfPhase { .. })),
            "{result:?}"
        );
        result
    }

    /// The terminal event a driver emits when [`step`](Self::step) refused
    /// its input, so the run still ends with exactly one: an `error` result
    /// over the state's messages. The machine is not changed.
    pub fn refusal(&self, error: &StepError) -> EventKind {
        self.run.core.refused(error.to_string())
    }

    /// [`step`](Self::step) without the `debug_assert`.
    pub(crate) fn try_step(&mut self, input: Input) -> Result<Output, StepError> {
        // A passed deadline stops the run as a cancel does; only the
        // status it ends with differs.
        let (input, limited) = match input {
            Input::TimedOut {
                partial_turn,
                finished_tools,
                child_tokens,
            } => (
                Input::Cancelled {
                    partial_turn,
                    finished_tools,
                    child_tokens,
                },
                Some((LimitKind::Timeout, None)),
            ),
            // A refused model call was never made: the run stops before
            // it, as a cancel does.
            Input::BudgetRefused { budget } => (
                Input::Cancelled {
                    partial_turn: None,
                    finished_tools: Vec::new(),
                    child_tokens: Default::default(),
                },
                Some((LimitKind::Budget, Some(budget))),
            ),
            other => (other, None),
        };
        self.check_phase(&input)?;
        // A run its strategy cannot honour ends before its first step, its
        // state left as it was.
        if !self.started
            && let Some(error) = self.refused.take()
        {
            self.started = true;
            self.ended = true;
            return Ok(Output {
                events: vec![self.run.core.refused_with(*error)],
                next: Step::Done,
            });
        }
        let next = match input {
            Input::Start => {
                self.started = true;
                self.start()
            }
            other => {
                self.started = true;
                self.run.step(&self.env, other)
            }
        };
        self.synced = false;
        let mut events = self.run.core.take_events();
        if let Some((limit, budget)) = limited {
            mark_limited(&mut events, limit, budget);
        }
        // A suspended run's result carries the state it resumes from.
        for event in &mut events {
            if let EventKind::Finished(FinishedEvent { result }) = event
                && let LoopStatus::Suspended { state, .. } = &mut result.status
                && state.is_none()
            {
                if !self.synced {
                    self.run.sync_state();
                    self.synced = true;
                }
                *state = Some(Box::new(self.run.core.state.clone()));
            }
        }
        Ok(Output { events, next })
    }

    fn check_phase(&self, input: &Input) -> Result<(), StepError> {
        let awaiting = self.awaiting();
        let fits = match (awaiting, input) {
            (Awaiting::Start, Input::Start) => true,
            (Awaiting::Model, Input::Steer { .. }) => self.run.steerable(),
            (Awaiting::Nothing, Input::Start) if !self.started => {
                return Err(StepError::Finished);
            }
            (Awaiting::Decisions, Input::Start) => return Err(StepError::AwaitsDecisions),
            (Awaiting::Decisions, Input::Decisions { decisions }) => {
                return self
                    .check_decisions(decisions)
                    .map_err(StepError::Decisions);
            }
            (
                Awaiting::Model,
                Input::ModelTurn { .. }
                | Input::ModelFailed { .. }
                | Input::GuardrailTripped { .. },
            )
            | (Awaiting::Tools, Input::ToolsDone { .. })
            | (Awaiting::Retrieval, Input::Retrieved { .. })
            | (Awaiting::Summary, Input::Summary { .. } | Input::SummaryFailed { .. })
            | (Awaiting::Hooks, Input::Hooked { .. })
            | (
                Awaiting::Model
                | Awaiting::Tools
                | Awaiting::Retrieval
                | Awaiting::Summary
                | Awaiting::Hooks
                | Awaiting::Decisions,
                Input::Cancelled { .. },
            ) => true,
            _ => false,
        };
        if fits {
            Ok(())
        } else {
            Err(StepError::OutOfPhase {
                input: input.name(),
                awaiting,
            })
        }
    }

    fn start(&mut self) -> Step {
        let core = &mut self.run.core;
        let found = core.state.schema_version;
        // Version 1 differs only by lacking the fields version 2 added.
        if found != RUN_STATE_SCHEMA_VERSION && found != 1 {
            let error = LoopError::UnsupportedState {
                found,
                expected: RUN_STATE_SCHEMA_VERSION,
            };
            return core.finish(LoopStatus::Error { error });
        }
        core.state.schema_version = RUN_STATE_SCHEMA_VERSION;
        if let Some(reason) = self.unreadable.take() {
            return core.invalid(&reason);
        }
        if let Some(reason) = core.unknown_speaker(&self.env) {
            return core.invalid(&reason);
        }
        // A fresh top-level run asks its start hooks before its strategy
        // starts; a resumed one picks up what was in flight.
        if let Some(step) = self.run.core.resume_pending(&self.env) {
            return step;
        }
        if let Some(step) = self.run.core.start_hooks(&self.env) {
            return step;
        }
        self.run.start(&self.env)
    }
}

/// Turns the run's `cancelled` end into the `limit_exceeded` end of a
/// passed deadline or a refusing budget. Only the last terminal event is
/// the run's own: nested runs' ends come before it.
fn mark_limited(events: &mut [EventKind], limit: LimitKind, budget: Option<String>) {
    let last = events.iter_mut().rev().find_map(|event| match event {
        EventKind::Finished(FinishedEvent { result }) => Some(result),
        _ => None,
    });
    if let Some(result) = last
        && result.status == LoopStatus::Cancelled
    {
        result.status = LoopStatus::LimitExceeded { limit, budget };
    }
}
