//! The loop as a pure step machine.
//!
//! A [`Machine`] decides what happens next in one run — call the model, run
//! these tool calls, retrieve passages, finish with this result — and which
//! events that produces. It does no I/O, no async, reads no clock and no
//! randomness: run ids and time limits come in as inputs, so every decision
//! is deterministic and its state ([`RunState`]) can be stored and resumed
//! in another process.
//!
//! Every built-in strategy (native, react, llm-only, tool-first,
//! plan-and-execute) is a machine over one shared run core, which alone
//! commits messages, assigns their ids, accounts tokens and limits,
//! validates the history, answers calls that must not run, closes
//! dangling calls and emits the terminal event.
//!
//! # Call order
//!
//! ```text
//! let mut machine = Machine::new(state, options).with_tools(offered); // [OfferedTool]
//! let mut input = Input::Start;                   // first input, exactly once
//! loop {
//!     let Output { events, next } = match machine.step(input) {
//!         Ok(output) => output,
//!         Err(error) => { emit(machine.refusal(&error)); break } // the one terminal event
//!     };
//!     // emit `events` in order; store `machine.state()` if wanted
//!     input = match next {
//!         Step::CallModel { iteration, messages, tools, output } => /* stream a turn */,
//!         Step::RunTools { calls } => /* run those without an `answer`, `alone` apart;
//!                                        report every call's ToolOutcome */,
//!         Step::Retrieve { query, limit } => /* ask the retriever */,
//!         Step::Summarise { messages } => /* one quiet model turn: its text */,
//!         Step::Done => break,                    // the last event was `finished`
//!     };
//!     // instead of any answer, the driver may send `Input::Cancelled`
//! }
//! ```
//!
//! # Phases
//!
//! After each step the machine awaits exactly one kind of input
//! ([`Machine::awaiting`]):
//!
//! | [`Awaiting`] | after | accepted inputs |
//! | --- | --- | --- |
//! | `Start` | construction | [`Input::Start`] |
//! | `Model` | [`Step::CallModel`] | [`Input::ModelTurn`], [`Input::ModelFailed`], [`Input::Cancelled`] |
//! | `Tools` | [`Step::RunTools`] | [`Input::ToolsDone`], [`Input::Cancelled`] |
//! | `Retrieval` | [`Step::Retrieve`] | [`Input::Retrieved`], [`Input::Cancelled`] |
//! | `Summary` | [`Step::Summarise`] | [`Input::Summary`], [`Input::SummaryFailed`], [`Input::Cancelled`] |
//! | `Decisions` | [`Step::Done`] of a run that ended `suspended` | [`Input::Decisions`], [`Input::Cancelled`] |
//! | `Nothing` | [`Step::Done`] | none: a finished run never restarts |
//!
//! Any other input is out of phase: a bug in the driver. It trips a
//! `debug_assert` and, in release builds, returns
//! [`StepError::OutOfPhase`] and leaves the machine unchanged. `Start` on a
//! stored state that has finished returns [`StepError::Finished`].
//!
//! Waiting for a person: a tool step whose calls need approval (the
//! tool's [`ApprovalPolicy`] or `LoopOptions::approvals`) or ask a question
//! runs its other calls, then ends `suspended` (the `finished` event's
//! result holds every [`PendingCall`] and the state). A machine over that
//! state awaits [`Input::Decisions`] (or a cancel), not `Start`, and goes
//! on with the same step.
//!
//! Resuming: a machine built from a stored state and given `Start` first
//! redoes whatever was in flight when the state was stored (the same model
//! call, the same retrieval, the same tool calls — those listed in
//! [`RunState::interrupted_calls`] are answered as interrupted instead of
//! run again); a fresh state starts its strategy.

mod answers;
mod compaction;
mod output;
mod run;
pub(crate) mod run_core;

use std::sync::Arc;

use agentloop_types::{
    ApprovalPolicy, ChildResume, DecisionError, Decisions, FinishedEvent, PendingCall,
    check_decisions,
};
use agentloop_types::{
    ContentBlock, EventKind, History, LoopError, LoopOptions, LoopStatus, Message, OutputSchema,
    Passage, RUN_STATE_SCHEMA_VERSION, RunState, StopReason, TokenTotals, Tool, ToolDefinition,
    ToolOptionSpec, ToolResult, ToolUseBlock,
};
use serde_json::{Map, Value};

pub use answers::ToolOutcome;
pub(crate) use answers::{committed_block, running_block, text_of, tool_calls};
pub(crate) use run::{Run, StrategyMachine};
use run_core::Env;

/// What the driver reports back to the machine.
#[derive(Debug, Clone)]
pub enum Input {
    /// Begin (or resume from a stored state). Always the first input.
    Start,
    /// A model turn finished.
    ModelTurn {
        /// The assembled assistant content.
        content: Vec<ContentBlock>,
        /// Why it ended.
        stop_reason: StopReason,
        /// Its tokens and cost.
        usage: TokenTotals,
    },
    /// The model request failed.
    ModelFailed {
        /// Why.
        error: LoopError,
    },
    /// Every call of a [`Step::RunTools`] finished.
    ToolsDone {
        /// One outcome per call id, in any order.
        results: Vec<(String, ToolOutcome)>,
        /// Tokens spent by child runs the tools drove.
        child_tokens: TokenTotals,
    },
    /// The retriever answered a [`Step::Retrieve`].
    Retrieved {
        /// The passages, or why retrieval failed.
        passages: Result<Vec<Passage>, String>,
    },
    /// The summarising call of a [`Step::Summarise`] answered.
    Summary {
        /// The text of its answer.
        text: String,
        /// Its tokens and cost.
        usage: TokenTotals,
    },
    /// The summarising call failed.
    SummaryFailed {
        /// Why.
        error: LoopError,
    },
    /// A person decided every call a suspended run waits on (one decision
    /// per call id, checked with [`Machine::check_decisions`]).
    Decisions {
        /// The decisions.
        decisions: Decisions,
    },
    /// The caller cancelled.
    Cancelled {
        /// The assistant content streamed before the cancel, if a model turn
        /// was in flight.
        partial_turn: Option<Vec<ContentBlock>>,
        /// Outcomes of calls that finished before the cancel.
        finished_tools: Vec<(String, ToolOutcome)>,
        /// Tokens spent by child runs before the cancel.
        child_tokens: TokenTotals,
    },
}

impl Input {
    fn name(&self) -> &'static str {
        match self {
            Input::Start => "start",
            Input::ModelTurn { .. } => "model_turn",
            Input::ModelFailed { .. } => "model_failed",
            Input::ToolsDone { .. } => "tools_done",
            Input::Retrieved { .. } => "retrieved",
            Input::Summary { .. } => "summary",
            Input::SummaryFailed { .. } => "summary_failed",
            Input::Decisions { .. } => "decisions",
            Input::Cancelled { .. } => "cancelled",
        }
    }
}

/// One call of a [`Step::RunTools`].
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The call.
    pub call: ToolUseBlock,
    /// The core's answer when the call must not run (an unknown tool,
    /// arguments that are not an object, configured options that do not
    /// fit, a call interrupted in a stopped process). The driver reports it
    /// as the call's outcome without running anything.
    pub answer: Option<ToolResult>,
    /// The tool must run with no other call beside it.
    pub alone: bool,
    /// The option values the call runs with (`ToolContext::options`).
    pub options: Map<String, Value>,
    /// The suspended child run the call resumes (`ToolContext::resume`).
    pub resume: Option<ChildResume>,
}

/// A tool a machine may offer: what the model is shown, and what the core
/// needs to plan its calls.
#[derive(Debug, Clone, PartialEq)]
pub struct OfferedTool {
    /// Name, description and input schema.
    pub definition: ToolDefinition,
    /// Its calls run with no other call beside them.
    pub runs_alone: bool,
    /// The options it accepts.
    pub options: Vec<ToolOptionSpec>,
    /// Which of its calls wait for approval, unless the run's options say
    /// otherwise.
    pub approval: ApprovalPolicy,
}

impl OfferedTool {
    /// What `tool` declares.
    pub fn of(tool: &dyn Tool) -> Self {
        Self {
            definition: tool.definition(),
            runs_alone: tool.runs_alone(),
            options: tool.options(),
            approval: tool.approval(),
        }
    }
}

impl From<ToolDefinition> for OfferedTool {
    /// A tool that may share its turn and takes no options.
    fn from(definition: ToolDefinition) -> Self {
        Self {
            definition,
            runs_alone: false,
            options: Vec::new(),
            approval: ApprovalPolicy::Never,
        }
    }
}

/// What the driver must do next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Request a model turn; report with [`Input::ModelTurn`] or
    /// [`Input::ModelFailed`].
    CallModel {
        /// 1-based number of the run's model call.
        iteration: u32,
        /// The messages to send (thinking trimmed per
        /// `thinking_keep_turns`, older turns compacted per
        /// `LoopOptions::compaction`, prompts of the step appended), shared
        /// with the run's state when nothing is trimmed or added.
        messages: History,
        /// The tools to offer, shared between a run's requests.
        tools: Arc<[ToolDefinition]>,
        /// The schema the provider is asked to hold the answer to with its
        /// own structured-output form (the request's
        /// `LoopOptions::output_schema`); `None` leaves it out.
        output: Option<OutputSchema>,
    },
    /// Run these calls; report with [`Input::ToolsDone`].
    RunTools {
        /// The calls, in call order.
        calls: Vec<ToolCall>,
    },
    /// Retrieve passages; report with [`Input::Retrieved`].
    Retrieve {
        /// The query.
        query: String,
        /// How many passages at most.
        limit: usize,
    },
    /// Before a model call, summarise older turns to fit the context
    /// window: request one turn over `messages`, with no tools, no system
    /// prompt of the run's own and no streaming events; report its text
    /// with [`Input::Summary`] or [`Input::SummaryFailed`].
    Summarise {
        /// The summarising request: its instruction (a system message) and
        /// the transcript to summarise.
        messages: Vec<Message>,
    },
    /// The run is over; the last event was `finished`.
    Done,
}

/// Events to emit, then the next step.
#[derive(Debug, Clone, PartialEq)]
#[must_use = "the events must be emitted and the next step performed"]
pub struct Output {
    /// Events, in order.
    pub events: Vec<EventKind>,
    /// What to do next.
    pub next: Step,
}

/// The input a machine accepts next; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Awaiting {
    /// [`Input::Start`].
    Start,
    /// The answer to a [`Step::CallModel`].
    Model,
    /// The answer to a [`Step::RunTools`].
    Tools,
    /// The answer to a [`Step::Retrieve`].
    Retrieval,
    /// The answer to a [`Step::Summarise`].
    Summary,
    /// [`Input::Decisions`]: the run ended `suspended` and waits for a
    /// person.
    Decisions,
    /// Nothing: the run has finished.
    Nothing,
}

/// An input the machine cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    /// `Start` on a state that has finished: a finished run never restarts.
    #[error("the run has finished; a finished run never restarts")]
    Finished,
    /// Decisions that do not fit what the run waits for.
    #[error(transparent)]
    Decisions(DecisionError),
    /// `Start` on a suspended state: it resumes with [`Input::Decisions`].
    #[error("the run waits for a person's decisions; it resumes with them")]
    AwaitsDecisions,
    /// An input out of phase: a driver bug.
    #[error("input `{input}` is out of phase: the machine awaits {awaiting:?}")]
    OutOfPhase {
        /// The input given.
        input: &'static str,
        /// What the machine awaits.
        awaiting: Awaiting,
    },
}

/// The loop's decision logic over a [`RunState`]; see the module docs.
#[derive(Debug, Clone)]
pub struct Machine {
    run: Run,
    env: Env,
    started: bool,
    /// Why the stored state cannot be resumed, found when it was read.
    unreadable: Option<String>,
    /// Whether `RunState::strategy` holds the strategy's current phase;
    /// it is written when the state is read, not after every step.
    synced: bool,
}

impl Machine {
    /// A machine for `state` under `options`, offering no tools: the
    /// strategy stored in the state, or the native loop when it names none.
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

    fn from_run(mut run: Run, options: LoopOptions, unreadable: Option<String>) -> Self {
        run.sync_state();
        // Only the native loop finishes through an answer the core can hold
        // to a schema; the other strategies' prompts expect free text.
        let output = match run.machine {
            StrategyMachine::Native(_) => output::OutputRules::for_run(&options),
            _ => None,
        };
        let env = Env::new(options, Vec::new(), output);
        Self {
            run,
            env,
            started: false,
            unreadable,
            synced: true,
        }
    }

    /// Offers these tools (narrowed by `LoopOptions::enabled_tools`).
    /// Calls of other tools are answered as unknown.
    pub fn with_tools<T: Into<OfferedTool>>(mut self, tools: impl IntoIterator<Item = T>) -> Self {
        let tools = tools.into_iter().map(Into::into).collect();
        let output = self.env.output.take();
        self.env = Env::new(self.env.options, tools, output);
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
        let awaiting = self.run.awaiting();
        if !self.started && !matches!(awaiting, Awaiting::Nothing | Awaiting::Decisions) {
            return Awaiting::Start;
        }
        awaiting
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
        self.check_phase(&input)?;
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
            (Awaiting::Nothing, Input::Start) if !self.started => {
                return Err(StepError::Finished);
            }
            (Awaiting::Decisions, Input::Start) => return Err(StepError::AwaitsDecisions),
            (Awaiting::Decisions, Input::Decisions { decisions }) => {
                return self
                    .check_decisions(decisions)
                    .map_err(StepError::Decisions);
            }
            (Awaiting::Model, Input::ModelTurn { .. } | Input::ModelFailed { .. })
            | (Awaiting::Tools, Input::ToolsDone { .. })
            | (Awaiting::Retrieval, Input::Retrieved { .. })
            | (Awaiting::Summary, Input::Summary { .. } | Input::SummaryFailed { .. })
            | (
                Awaiting::Model
                | Awaiting::Tools
                | Awaiting::Retrieval
                | Awaiting::Summary
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
        self.run.start(&self.env)
    }
}

#[cfg(test)]
mod tests;
