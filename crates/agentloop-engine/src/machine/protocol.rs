//! What crosses the boundary between a [`Machine`](super::Machine) and its
//! driver: the inputs it takes, the steps it asks for, the phases it
//! awaits and the inputs it refuses.

use std::sync::Arc;

use agentloop_types::{
    ApprovalPolicy, ChildResume, ContentBlock, DecisionError, Decisions, EventKind, History,
    HookAnswer, HookInput, LoopError, Message, Passage, ResponseFormat, StopReason, TokenTotals,
    Tool, ToolDefinition, ToolOptionSpec, ToolResult, ToolUseBlock,
};
use serde_json::{Map, Value};

use super::answers::ToolOutcome;

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
    /// An input guardrail run beside the turn
    /// (`guard_input` of [`Step::CallModel`]) tripped: the turn was cancelled
    /// and nothing of it is committed.
    GuardrailTripped {
        /// The guardrail's name.
        guardrail: String,
        /// Why it tripped.
        reason: String,
        /// The turn's tokens, when it had finished before the trip.
        usage: Option<TokenTotals>,
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
    /// per call id, checked with [`Machine::check_decisions`](crate::machine::Machine::check_decisions)).
    Decisions {
        /// The decisions.
        decisions: Decisions,
    },
    /// The hooks answered a [`Step::Hook`]: every matching hook's answer
    /// about each of its moments (none when no hook matched).
    Hooked {
        /// The answers, in the order of the step's moments, each moment's
        /// in the hooks' registration order.
        answers: Vec<HookAnswer>,
    },
    /// In place of the answer to a [`Step::CallModel`]: messages sent to
    /// the run while it went on (see [`agentloop_types::Inbox`]). They join
    /// the history as they are, in order, each reported as created, and
    /// the model call is asked again over the longer history. Taken only
    /// where [`Machine::steerable`](crate::machine::Machine::steerable)
    /// says.
    Steer {
        /// The messages, oldest first: persons' messages (no tool calls
        /// or results).
        messages: Vec<Message>,
        /// `None`: the call was not made yet, and is made as it was
        /// decided. `Some`: it was interrupted (see
        /// [`Interrupt`](crate::Interrupt)) after streaming this much,
        /// which joins the history first (its calls answered as not run)
        /// when the call's turn would have; the call is then made again
        /// as the run's next model call.
        interrupted: Option<Vec<ContentBlock>>,
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
    /// The run's wall-clock limit (`LoopOptions::timeout_ms`) passed: taken
    /// where [`Input::Cancelled`] is, with the same fields, and handled the
    /// same way, except that the run ends `limit_exceeded` with
    /// [`LimitKind::Timeout`](agentloop_types::LimitKind::Timeout). The
    /// driver measures the time; the machine reads no clock.
    TimedOut {
        /// The assistant content streamed before the deadline.
        partial_turn: Option<Vec<ContentBlock>>,
        /// Outcomes of calls that finished before the deadline.
        finished_tools: Vec<(String, ToolOutcome)>,
        /// Tokens spent by child runs before the deadline.
        child_tokens: TokenTotals,
    },
    /// In place of the answer to a [`Step::CallModel`]: the run's
    /// [`Budget`](agentloop_types::Budget) refused the call, which was
    /// not made. The run ends as a cancel before the call would, except
    /// that it ends `limit_exceeded` with
    /// [`LimitKind::Budget`](agentloop_types::LimitKind::Budget) and the
    /// budget named.
    BudgetRefused {
        /// The budget, said for a person.
        budget: String,
    },
}

impl Input {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Input::Start => "start",
            Input::ModelTurn { .. } => "model_turn",
            Input::ModelFailed { .. } => "model_failed",
            Input::GuardrailTripped { .. } => "guardrail_tripped",
            Input::ToolsDone { .. } => "tools_done",
            Input::Retrieved { .. } => "retrieved",
            Input::Summary { .. } => "summary",
            Input::SummaryFailed { .. } => "summary_failed",
            Input::Decisions { .. } => "decisions",
            Input::Hooked { .. } => "hooked",
            Input::Steer { .. } => "steer",
            Input::Cancelled { .. } => "cancelled",
            Input::BudgetRefused { .. } => "budget_refused",
            Input::TimedOut { .. } => "timed_out",
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
    /// Its calls start a sub-agent: the `before_subagent` and
    /// `after_subagent` hooks are asked about them.
    pub subagent: bool,
}

impl OfferedTool {
    /// What `tool` declares.
    pub fn of(tool: &dyn Tool) -> Self {
        Self {
            definition: tool.definition(),
            runs_alone: tool.runs_alone(),
            options: tool.options(),
            approval: tool.approval(),
            subagent: tool.runs_subagent(),
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
            subagent: false,
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
        /// own structured-output field (the request's `response_format`),
        /// when the run's output schema is asked for natively; `None` leaves
        /// it out. Shared between a run's requests.
        response_format: Option<Arc<ResponseFormat>>,
        /// Run the run's input guardrails beside the turn (its first model
        /// call): one that trips cancels the turn and is reported with
        /// [`Input::GuardrailTripped`]; the turn's answer is reported only
        /// once every guardrail passed.
        guard_input: bool,
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
    /// Ask the run's hooks about these moments; report every matching
    /// hook's answer with [`Input::Hooked`]. Asked only at moments some
    /// hook wants ([`Machine::with_hooks`](crate::machine::Machine::with_hooks)).
    Hook {
        /// The moments, in order.
        requests: Vec<HookInput>,
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
    /// The answer to a [`Step::Hook`].
    Hooks,
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
