//! The tool port: what a tool declares, what it is given, what it streams.

use std::sync::Arc;

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::approval::{ApprovalPolicy, ChildResume, ChildSuspension};
use crate::budget::Budget;
use crate::cancel::CancellationToken;
use crate::event::LoopEvent;
use crate::render_blocks::RenderingBlockGroup;
use crate::run_path::RunPath;
pub use crate::tool_definition::ToolDefinition;

/// How a tool result ends the loop, if it does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum BreakLoop {
    /// Wait for a person; the call gets no result now. Its content is the
    /// question; the run ends `suspended` and the answer becomes the
    /// result. A tool whose child run suspended reports that run in
    /// `child`: its pending calls surface on this run, and the call runs
    /// again with [`ToolContext::resume`] once they are decided.
    Suspend {
        /// The suspended child run.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        child: Option<Box<ChildSuspension>>,
    },
    /// Stop with `complete` and this value (the return tool).
    Return {
        /// The value handed to the caller.
        value: Value,
    },
}

/// What a tool call produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ToolResult {
    /// What the model sees (for `Suspend`: what the tool asks, e.g. a question).
    pub content: String,
    /// Whether the call failed.
    #[serde(default)]
    pub is_error: bool,
    /// Ends the loop when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub break_loop: Option<BreakLoop>,
    /// Nested display groups (a minion's transcript).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rendering_groups: Vec<RenderingBlockGroup>,
}

impl ToolResult {
    /// A successful result.
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
            break_loop: None,
            rendering_groups: Vec::new(),
        }
    }

    /// A failed result; the model sees `content` and the loop goes on.
    pub fn error(content: impl Into<String>) -> Self {
        Self {
            is_error: true,
            ..Self::ok(content)
        }
    }

    /// A result that suspends the run, saying why.
    pub fn suspend(content: impl Into<String>) -> Self {
        Self {
            break_loop: Some(BreakLoop::Suspend { child: None }),
            ..Self::ok(content)
        }
    }

    /// A result saying the child run this tool drives suspended.
    pub fn child_suspended(content: impl Into<String>, child: ChildSuspension) -> Self {
        Self {
            break_loop: Some(BreakLoop::Suspend {
                child: Some(Box::new(child)),
            }),
            ..Self::ok(content)
        }
    }

    /// A result that completes the run with `value`.
    pub fn return_value(content: impl Into<String>, value: Value) -> Self {
        Self {
            break_loop: Some(BreakLoop::Return { value }),
            ..Self::ok(content)
        }
    }
}

/// Progress a tool reports while it runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolStreamEvent {
    /// Replaces the tool's nested display groups.
    GroupsUpdate {
        /// The groups so far.
        groups: Vec<RenderingBlockGroup>,
    },
    /// An event of a child run the tool drives (minion, skill). Its path is
    /// relative to the tool; the engine prefixes the call's path and
    /// renumbers `seq` within the parent stream.
    ChildEvent(Box<LoopEvent>),
}

/// One item of a tool's output stream; the stream ends after `Done`.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutput {
    /// Progress.
    Event(ToolStreamEvent),
    /// The result; anything after it is ignored.
    Done(ToolResult),
}

/// A running tool call.
pub type ToolStream = BoxStream<'static, ToolOutput>;

/// Type of a tool option (seed 003).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ToolOptionKind {
    /// A switch.
    Boolean,
    /// Long free text (a system prompt).
    Longtext,
    /// A model id.
    Model,
}

/// One option a tool accepts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ToolOptionSpec {
    /// Key in [`ToolContext::options`].
    pub key: String,
    /// Type.
    pub kind: ToolOptionKind,
    /// Value used when none is given.
    pub default: Value,
    /// What it does.
    pub description: String,
}

/// What a tool call is given besides its input.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// Id of the run making the call.
    pub run_id: String,
    /// Project of the run.
    pub project_id: String,
    /// Chat of the run, if any.
    pub chat_id: Option<String>,
    /// Id of this call.
    pub tool_use_id: String,
    /// Path of the run making the call.
    pub path: RunPath,
    /// Option values, defaults applied.
    pub options: Map<String, Value>,
    /// Cancelled when the run is cancelled or the call times out.
    pub cancel: CancellationToken,
    /// Set when the call runs again to resume the child run it reported
    /// suspended ([`BreakLoop::Suspend`]'s `child`).
    pub resume: Option<ChildResume>,
    /// The run's budget, when it has one: a tool that makes model calls
    /// of its own (a sub-agent, a skill) reserves each with it, so they
    /// spend against the same budgets as the run's own.
    pub budget: Option<Arc<dyn Budget>>,
}

/// A tool the model can call.
pub trait Tool: Send + Sync {
    /// Name the model calls it by.
    fn name(&self) -> &str;
    /// What it does, for the model.
    fn description(&self) -> &str;
    /// JSON schema of the input object.
    fn input_schema(&self) -> Value;
    /// Options the tool accepts.
    fn options(&self) -> Vec<ToolOptionSpec> {
        Vec::new()
    }
    /// True when the tool must not run at the same time as any other call of
    /// the same turn (it mutates shared state, or asks a person something).
    fn runs_alone(&self) -> bool {
        false
    }
    /// Which of its calls wait for a person's approval, unless the run's
    /// `LoopOptions::approvals` say otherwise.
    fn approval(&self) -> ApprovalPolicy {
        ApprovalPolicy::Never
    }
    /// True for skills (seed 002): their start and end events say so.
    fn is_skill(&self) -> bool {
        false
    }
    /// True when a call starts a sub-agent (a child agent run, as the
    /// minion tool does): the run's `before_subagent` and `after_subagent`
    /// hooks are asked about its calls.
    fn runs_subagent(&self) -> bool {
        false
    }
    /// True when this call may change files of the project folder (an fs
    /// write, a shell command, JavaScript with file access): a run that
    /// checkpoints its folder takes a checkpoint before such a call runs.
    fn may_write(&self, input: &Value) -> bool {
        let _ = input;
        false
    }
    /// Starts a call. The stream yields progress and ends with
    /// [`ToolOutput::Done`]; dropping it abandons the call.
    fn execute(self: Arc<Self>, input: Value, context: ToolContext) -> ToolStream;

    /// The definition offered to the model. A tool whose schema is costly
    /// to build or large (a generated one) overrides this to hand out one
    /// shared schema instead of a new one per run.
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: self.name().to_owned(),
            description: self.description().to_owned(),
            input_schema: Arc::new(self.input_schema()),
        }
    }
}

/// A stream that yields only the result of `future`: the shape of a tool
/// that reports no progress.
pub fn single_result<F>(future: F) -> ToolStream
where
    F: std::future::Future<Output = ToolResult> + Send + 'static,
{
    use futures::StreamExt;
    Box::pin(futures::stream::once(future).map(ToolOutput::Done))
}

/// Parses a tool input into `T`, or an error result saying what is wrong.
pub fn parse_input<T: serde::de::DeserializeOwned>(input: Value) -> Result<T, ToolResult> {
    serde_json::from_value(input).map_err(|e| ToolResult::error(format!("Invalid input: {e}")))
}
