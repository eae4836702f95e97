//! Lifecycle hooks: code (or a command) that sees a moment of a run and
//! decides about it — let it pass, block it with a reason the model or the
//! caller sees, hold a tool call for a person, rewrite a call's arguments,
//! add context, replace a result, or ask a finishing run to go on.
//!
//! A hook only *answers*: the engine's machine asks for the answers of
//! every hook registered for a moment ([`HookPoint`]), records each as a
//! `hook` event ([`HookEvent`](crate::event::HookEvent)) and in the run's state, and decides what
//! they mean together. A run resumed from a stored state never asks a hook
//! again for a decision it already has.
//!
//! Which decisions apply where:
//!
//! | point | pass | block | ask | rewrite | add_context | replace | continue |
//! | --- | --- | --- | --- | --- | --- | --- | --- |
//! | `run_start`, `user_prompt_submitted` | ✓ | run ends `error` (`blocked`) | | | a user message after the prompt | | |
//! | `before_model_call` | ✓ | run ends `error` (`blocked`) | | | a user message before the call | | |
//! | `before_compaction` | ✓ | the request goes out uncompacted | | | kept in what stands in for the compacted turns | | |
//! | `before_tool_call` | ✓ | the call does not run; its result is the reason | held for a person's approval | the call runs with these arguments | appended to the call's result | | |
//! | `before_subagent` | ✓ | the sub-agent never starts; its call's result is the reason | held for a person's approval | the sub-agent starts with these arguments | appended to the call's result | | |
//! | `after_tool_call` | ✓ | the result becomes an error carrying the reason | | | appended to the result | the result's text | |
//! | `after_subagent` | ✓ | the result becomes an error carrying the reason | | | appended to the result | the result's text | |
//! | `run_end` | ✓ | run ends `error` (`blocked`): the answer is withheld | | | | | the model is called once more with the reason (bounded) |
//!
//! The sub-agent points are asked about calls of tools that run a child
//! agent ([`Tool::runs_subagent`](crate::Tool::runs_subagent), the minion
//! tool among them), after the tool-call point of the same call:
//! `before_tool_call` first, then `before_subagent` (with the arguments a
//! `before_tool_call` hook rewrote, and not for a call it blocked), then
//! any approval; once the call has a result, `after_tool_call`, then
//! `after_subagent` (seeing what `after_tool_call` hooks made of it). A
//! call that resumes a suspended child run is not asked about again.
//!
//! A decision that does not apply at its point is recorded with
//! `ignored: true` and changes nothing. With several hooks at one point,
//! every answer is recorded in registration order; a block wins over an
//! ask, an ask over the rest, the last rewrite or replacement wins, and
//! added contexts are joined.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A moment of a run a hook can see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum HookPoint {
    /// A fresh run starts (not a resumed one).
    RunStart,
    /// A fresh run starts on a user's prompt (its last message is one).
    UserPromptSubmitted,
    /// A model request is about to go out.
    BeforeModelCall,
    /// The request about to go out is over the context threshold and the
    /// run is about to compact it (leave the oldest turns out, or
    /// summarise them). Asked once per compaction, after
    /// `before_model_call`.
    BeforeCompaction,
    /// A tool call is about to run (after the engine's own checks: an
    /// unknown tool or bad arguments never reach a hook).
    BeforeToolCall,
    /// A call of a tool that runs a sub-agent is about to start it: asked
    /// after `before_tool_call`, for the calls it let through.
    BeforeSubagent,
    /// A tool call ran; its result is not committed yet.
    AfterToolCall,
    /// A call of a tool that runs a sub-agent has its result (the
    /// sub-agent ended); asked after `after_tool_call`, before the result
    /// is committed.
    AfterSubagent,
    /// The model answered without a tool call and the run is about to
    /// complete.
    RunEnd,
}

impl HookPoint {
    /// Every point, in lifecycle order.
    pub const ALL: [HookPoint; 9] = [
        HookPoint::RunStart,
        HookPoint::UserPromptSubmitted,
        HookPoint::BeforeModelCall,
        HookPoint::BeforeCompaction,
        HookPoint::BeforeToolCall,
        HookPoint::BeforeSubagent,
        HookPoint::AfterToolCall,
        HookPoint::AfterSubagent,
        HookPoint::RunEnd,
    ];

    /// The snake_case name, as serialised.
    pub fn name(self) -> &'static str {
        match self {
            HookPoint::RunStart => "run_start",
            HookPoint::UserPromptSubmitted => "user_prompt_submitted",
            HookPoint::BeforeModelCall => "before_model_call",
            HookPoint::BeforeCompaction => "before_compaction",
            HookPoint::BeforeToolCall => "before_tool_call",
            HookPoint::BeforeSubagent => "before_subagent",
            HookPoint::AfterToolCall => "after_tool_call",
            HookPoint::AfterSubagent => "after_subagent",
            HookPoint::RunEnd => "run_end",
        }
    }

    /// The point named `name` (its serialised form).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// What a hook is shown: the moment and its data. Serialised (tagged by
/// `event`) it is what a command hook reads on stdin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum HookInput {
    /// A fresh run starts.
    RunStart {
        /// The run.
        run_id: String,
    },
    /// A fresh run starts on a user's prompt.
    UserPromptSubmitted {
        /// The run.
        run_id: String,
        /// The prompt's text.
        prompt: String,
    },
    /// A model request is about to go out.
    BeforeModelCall {
        /// The run.
        run_id: String,
        /// 1-based number of the run's model call.
        iteration: u32,
    },
    /// The run is about to compact what it sends.
    BeforeCompaction {
        /// The run.
        run_id: String,
        /// 1-based number of the model call whose request is compacted.
        iteration: u32,
        /// How: the oldest turns left out, or summarised.
        strategy: crate::options::CompactionStrategy,
        /// The request's estimated tokens before compacting.
        tokens_before: u64,
        /// How many history messages the compaction stands in for.
        messages_compacted: u32,
    },
    /// A tool call is about to run.
    BeforeToolCall {
        /// The run.
        run_id: String,
        /// The call's id.
        tool_use_id: String,
        /// The tool.
        tool: String,
        /// The arguments the model gave.
        arguments: Value,
    },
    /// A call of a tool that runs a sub-agent is about to start it.
    BeforeSubagent {
        /// The run making the call (the sub-agent's parent).
        run_id: String,
        /// The call's id.
        tool_use_id: String,
        /// The tool.
        tool: String,
        /// The arguments the sub-agent starts with: its task (for the
        /// minion tool, `task` and an optional `chat_id`), after any
        /// `before_tool_call` rewrite.
        arguments: Value,
    },
    /// A tool call ran.
    AfterToolCall {
        /// The run.
        run_id: String,
        /// The call's id.
        tool_use_id: String,
        /// The tool.
        tool: String,
        /// The arguments it ran with.
        arguments: Value,
        /// The result's text.
        result: String,
        /// Whether the result is an error.
        is_error: bool,
    },
    /// A call of a tool that runs a sub-agent has its result.
    AfterSubagent {
        /// The run making the call (the sub-agent's parent).
        run_id: String,
        /// The call's id.
        tool_use_id: String,
        /// The tool.
        tool: String,
        /// The arguments the sub-agent ran with.
        arguments: Value,
        /// The result's text: the sub-agent's answer, or why it failed.
        result: String,
        /// Whether the result is an error (the sub-agent failed).
        is_error: bool,
    },
    /// The run is about to complete with the model's answer.
    RunEnd {
        /// The run.
        run_id: String,
        /// The answer's text.
        answer: String,
        /// The validated structured output, when the run has an output
        /// schema.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<Value>,
        /// How many times hooks already asked this run to go on.
        continued: u32,
    },
}

impl HookInput {
    /// The moment.
    pub fn point(&self) -> HookPoint {
        match self {
            HookInput::RunStart { .. } => HookPoint::RunStart,
            HookInput::UserPromptSubmitted { .. } => HookPoint::UserPromptSubmitted,
            HookInput::BeforeModelCall { .. } => HookPoint::BeforeModelCall,
            HookInput::BeforeCompaction { .. } => HookPoint::BeforeCompaction,
            HookInput::BeforeToolCall { .. } => HookPoint::BeforeToolCall,
            HookInput::BeforeSubagent { .. } => HookPoint::BeforeSubagent,
            HookInput::AfterToolCall { .. } => HookPoint::AfterToolCall,
            HookInput::AfterSubagent { .. } => HookPoint::AfterSubagent,
            HookInput::RunEnd { .. } => HookPoint::RunEnd,
        }
    }

    /// The tool call it is about, if any.
    pub fn tool_use_id(&self) -> Option<&str> {
        match self {
            HookInput::BeforeToolCall { tool_use_id, .. }
            | HookInput::BeforeSubagent { tool_use_id, .. }
            | HookInput::AfterToolCall { tool_use_id, .. }
            | HookInput::AfterSubagent { tool_use_id, .. } => Some(tool_use_id),
            HookInput::RunStart { .. }
            | HookInput::UserPromptSubmitted { .. }
            | HookInput::BeforeModelCall { .. }
            | HookInput::BeforeCompaction { .. }
            | HookInput::RunEnd { .. } => None,
        }
    }

    /// The tool it is about, if any.
    pub fn tool(&self) -> Option<&str> {
        match self {
            HookInput::BeforeToolCall { tool, .. }
            | HookInput::BeforeSubagent { tool, .. }
            | HookInput::AfterToolCall { tool, .. }
            | HookInput::AfterSubagent { tool, .. } => Some(tool),
            HookInput::RunStart { .. }
            | HookInput::UserPromptSubmitted { .. }
            | HookInput::BeforeModelCall { .. }
            | HookInput::BeforeCompaction { .. }
            | HookInput::RunEnd { .. } => None,
        }
    }
}

/// What a hook decided. See the [module docs](self) for where each
/// applies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum HookDecision {
    /// Nothing to change.
    Pass,
    /// Stop what is about to happen; the reason is what the model (a tool
    /// call's result) or the caller (the run's error) reads.
    Block {
        /// Why.
        reason: String,
    },
    /// Hold the tool call (or the sub-agent's start) for a person's
    /// approval, with this reason.
    Ask {
        /// Why.
        reason: String,
    },
    /// Run the tool call with these arguments instead (a JSON object).
    Rewrite {
        /// The new arguments.
        arguments: Value,
    },
    /// Add this text for the model to read.
    AddContext {
        /// The text.
        text: String,
    },
    /// Replace a tool call's result.
    Replace {
        /// The new result text.
        result: String,
        /// Whether it is an error.
        #[serde(default)]
        is_error: bool,
    },
    /// Do not end yet: the model is called once more with this reason.
    Continue {
        /// Why, as the model reads it.
        reason: String,
    },
}

impl HookDecision {
    /// The snake_case name, as serialised in `decision`.
    pub fn name(&self) -> &'static str {
        match self {
            HookDecision::Pass => "pass",
            HookDecision::Block { .. } => "block",
            HookDecision::Ask { .. } => "ask",
            HookDecision::Rewrite { .. } => "rewrite",
            HookDecision::AddContext { .. } => "add_context",
            HookDecision::Replace { .. } => "replace",
            HookDecision::Continue { .. } => "continue",
        }
    }

    /// Whether the decision means something at `point`.
    pub fn applies_at(&self, point: HookPoint) -> bool {
        use HookPoint as P;
        match self {
            HookDecision::Pass => true,
            HookDecision::Block { .. } => true,
            HookDecision::Ask { .. } | HookDecision::Rewrite { .. } => {
                matches!(point, P::BeforeToolCall | P::BeforeSubagent)
            }
            HookDecision::AddContext { .. } => point != P::RunEnd,
            HookDecision::Replace { .. } => matches!(point, P::AfterToolCall | P::AfterSubagent),
            HookDecision::Continue { .. } => point == P::RunEnd,
        }
    }
}

/// A hook that failed to answer (crashed, timed out, said something that
/// could not be read). The run goes on with the hook's
/// [`on_error`](Hook::on_error) decision, and the failure is recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HookError {
    /// What went wrong (no secrets: it is recorded in the run's events).
    pub message: String,
}

impl HookError {
    /// A failure saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// One hook's answer about one moment: what the driver hands the machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HookAnswer {
    /// The hook's name.
    pub hook: String,
    /// The moment.
    pub point: HookPoint,
    /// The tool call the moment is about, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// What it decided (its `on_error` decision when it failed).
    #[serde(flatten)]
    pub decision: HookDecision,
    /// Why it failed to answer, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// It is a guardrail.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub guardrail: bool,
    /// What the hook says it did, for people reading the run (see
    /// [`Hook::call_noted`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A lifecycle hook. Implement [`call`](Hook::call); say which moments it
/// wants with [`points`](Hook::points) (the run asks nothing at moments no
/// hook wants, so they cost nothing) and narrow them further with
/// [`matches`](Hook::matches) (a tool name pattern, say).
///
/// ```
/// use agentloop_types::{Hook, HookDecision, HookError, HookInput, HookPoint};
///
/// struct NoRm;
///
/// #[agentloop_types::async_trait]
/// impl Hook for NoRm {
///     fn name(&self) -> &str { "no-rm" }
///     fn points(&self) -> Vec<HookPoint> { vec![HookPoint::BeforeToolCall] }
///     async fn call(&self, input: &HookInput) -> Result<HookDecision, HookError> {
///         Ok(match input {
///             HookInput::BeforeToolCall { arguments, .. } if arguments["command"] == "delete" => {
///                 HookDecision::Block { reason: "deleting is not allowed".into() }
///             }
///             _ => HookDecision::Pass,
///         })
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait Hook: Send + Sync {
    /// The name recorded with its decisions.
    fn name(&self) -> &str;

    /// The moments it is asked about.
    fn points(&self) -> Vec<HookPoint>;

    /// Whether it is asked about this moment (all of its points by
    /// default). A hook that does not match records nothing.
    fn matches(&self, input: &HookInput) -> bool {
        let _ = input;
        true
    }

    /// Its decision.
    async fn call(&self, input: &HookInput) -> Result<HookDecision, HookError>;

    /// Its decision and a note on what it did, recorded with the decision
    /// in the run's `hook` event (a hook that works beside the run — one
    /// that writes memories — says what it wrote). [`call`](Hook::call)
    /// with no note by default; a hook that overrides this is asked only
    /// through it.
    async fn call_noted(
        &self,
        input: &HookInput,
    ) -> Result<(HookDecision, Option<String>), HookError> {
        self.call(input).await.map(|decision| (decision, None))
    }

    /// The decision taken when [`call`](Hook::call) fails: pass by default.
    fn on_error(&self) -> HookDecision {
        HookDecision::Pass
    }

    /// Whether asking it again about a moment it already answered is
    /// harmless (it decides the same, and what it does may be done twice).
    /// A run stores its state before asking a hook that is not, so that a
    /// run resumed there never asks it again; before asking only hooks
    /// that are, it stores nothing. False by default.
    fn asked_again_safely(&self) -> bool {
        false
    }

    /// Whether it is a guardrail (see [`guardrail`](crate::guardrail)):
    /// its blocks then name a guardrail, not a hook.
    fn is_guardrail(&self) -> bool {
        false
    }
}

type HookFuture = Pin<Box<dyn Future<Output = Result<HookDecision, HookError>> + Send>>;

/// A hook made of a closure: see [`hook_fn`].
pub struct FnHook<F> {
    name: String,
    points: Vec<HookPoint>,
    call: F,
}

/// A hook named `name` at `points` whose decision is `call(input)`.
///
/// ```
/// use agentloop_types::{HookDecision, HookInput, HookPoint, hook_fn};
///
/// let hook = hook_fn("context", [HookPoint::UserPromptSubmitted], |_input: HookInput| async {
///     Ok(HookDecision::AddContext { text: "Today is Tuesday.".into() })
/// });
/// # let _ = hook;
/// ```
pub fn hook_fn<F, Fut>(
    name: impl Into<String>,
    points: impl IntoIterator<Item = HookPoint>,
    call: F,
) -> Arc<dyn Hook>
where
    F: Fn(HookInput) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<HookDecision, HookError>> + Send + 'static,
{
    let call = move |input: HookInput| -> HookFuture { Box::pin(call(input)) };
    Arc::new(FnHook {
        name: name.into(),
        points: points.into_iter().collect(),
        call,
    })
}

#[async_trait::async_trait]
impl<F> Hook for FnHook<F>
where
    F: Fn(HookInput) -> HookFuture + Send + Sync,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn points(&self) -> Vec<HookPoint> {
        self.points.clone()
    }

    async fn call(&self, input: &HookInput) -> Result<HookDecision, HookError> {
        (self.call)(input.clone()).await
    }
}

/// The hooks of a run, in registration order, and how often `run_end`
/// hooks may ask it to go on.
#[derive(Clone)]
pub struct Hooks {
    /// The hooks.
    pub hooks: Vec<Arc<dyn Hook>>,
    /// How many times `continue` decisions may send a finishing run back
    /// to the model (3 by default); past it they are recorded and ignored.
    pub max_continues: u32,
}

impl Default for Hooks {
    fn default() -> Self {
        Self {
            hooks: Vec::new(),
            max_continues: 3,
        }
    }
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.hooks.iter().map(|h| h.name()).collect();
        f.debug_struct("Hooks")
            .field("hooks", &names)
            .field("max_continues", &self.max_continues)
            .finish()
    }
}

impl Hooks {
    /// Adds a hook after the others.
    pub fn push(&mut self, hook: Arc<dyn Hook>) {
        self.hooks.push(hook);
    }

    /// Whether no hook is registered.
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// The points some hook wants, in lifecycle order.
    pub fn points(&self) -> Vec<HookPoint> {
        let mut points: Vec<HookPoint> = self.hooks.iter().flat_map(|h| h.points()).collect();
        points.sort();
        points.dedup();
        points
    }

    /// Whether a run stores its state before asking about `inputs`: some
    /// hook is asked about one of them (one registered at its point that
    /// [matches](Hook::matches) it) that must not be asked twice
    /// ([`Hook::asked_again_safely`]).
    pub fn store_before_asking(&self, inputs: &[HookInput]) -> bool {
        inputs.iter().any(|input| {
            let point = input.point();
            self.hooks
                .iter()
                .any(|h| !h.asked_again_safely() && h.points().contains(&point) && h.matches(input))
        })
    }

    /// Every matching hook's answer about `input`, in registration order.
    /// Hooks run concurrently; a failed one answers its `on_error`
    /// decision with the failure noted.
    pub async fn answer(&self, input: &HookInput) -> Vec<HookAnswer> {
        let point = input.point();
        let asked = self
            .hooks
            .iter()
            .filter(|h| h.points().contains(&point) && h.matches(input))
            .map(|hook| async move {
                let (decision, note, error) = match hook.call_noted(input).await {
                    Ok((decision, note)) => (decision, note, None),
                    Err(error) => (hook.on_error(), None, Some(error.message)),
                };
                HookAnswer {
                    hook: hook.name().to_owned(),
                    point,
                    tool_use_id: input.tool_use_id().map(str::to_owned),
                    decision,
                    error,
                    guardrail: hook.is_guardrail(),
                    note,
                }
            });
        futures::future::join_all(asked).await
    }
}
