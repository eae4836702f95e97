//! The serialisable state of a run, so a suspended or interrupted run can be
//! stored and resumed in another process.

use serde::{Deserialize, Serialize};

use crate::message::ToolUseBlock;
use crate::shared_history::History;
use crate::tokens::TokenTotals;

/// Version of the [`RunState`] JSON shape. Bumped on any incompatible change.
///
/// Version 2 added [`RunState::strategy`] and [`RunState::interrupted_calls`];
/// a version-1 state reads as a native run with neither.
pub const RUN_STATE_SCHEMA_VERSION: u32 = 2;

/// Where a run is between two steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum RunPhase {
    /// Next: a model request.
    CallModel,
    /// Next: these calls of the last assistant message run; their results
    /// go into the message with this id.
    RunTools {
        /// Id of the tool-result message.
        result_message_id: String,
        /// The calls, in call order.
        calls: Vec<ToolUseBlock>,
    },
    /// The run ended.
    Finished,
}

/// Everything the loop machine knows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RunState {
    /// Always [`RUN_STATE_SCHEMA_VERSION`] when written by this version.
    pub schema_version: u32,
    /// Run id; message ids are derived from it.
    pub run_id: String,
    /// The whole history.
    pub messages: History,
    /// Sum of all model turns.
    pub totals: TokenTotals,
    /// Model turns started.
    pub iteration: u32,
    /// Tool calls made.
    pub tool_calls: u32,
    /// Messages this run created (for ids).
    pub created_messages: u32,
    /// What comes next.
    pub phase: RunPhase,
    /// The strategy driving the run and where it is, as the engine writes
    /// it (its name, its phase, a model call in flight). `None`: a native
    /// run that has not taken a step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<serde_json::Value>,
    /// Calls of the pending tool step that may have started in a process
    /// that stopped before their results were committed. A resumed run
    /// answers them as interrupted instead of running them again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interrupted_calls: Vec<String>,
    /// Tools a person approved for the rest of the run: their calls no
    /// longer wait for approval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approved_tools: Vec<String>,
}

impl RunState {
    /// The state of a run that has not started.
    pub fn new(run_id: impl Into<String>, messages: impl Into<History>) -> Self {
        Self {
            schema_version: RUN_STATE_SCHEMA_VERSION,
            run_id: run_id.into(),
            messages: messages.into(),
            totals: TokenTotals::default(),
            iteration: 0,
            tool_calls: 0,
            created_messages: 0,
            phase: RunPhase::CallModel,
            strategy: None,
            interrupted_calls: Vec::new(),
            approved_tools: Vec::new(),
        }
    }
}
