//! How a run ended (seed 000's `AgenticLoopResult`, plus `cancelled` and
//! `limit_exceeded`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approval::PendingCall;
use crate::error::LoopError;
use crate::message::{Message, Role};
use crate::shared_history::History;
use crate::state::RunState;
use crate::tokens::TokenTotals;

/// Which limit ended a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    /// `max_requests`.
    Requests,
    /// `max_tool_calls`.
    ToolCalls,
    /// `max_total_tokens`.
    TotalTokens,
    /// `max_cost`.
    Cost,
    /// The run's handoff limit (a cycle of agents handing off to each
    /// other ends here).
    Handoffs,
    /// The run's wall-clock limit (`LoopOptions::timeout_ms`) passed.
    Timeout,
    /// A budget above the run (a user's, a project's, a task's; see
    /// [`Budget`](crate::Budget)) would go past its limit with the next
    /// model call.
    Budget,
}

impl LimitKind {
    /// The snake_case name, as serialised.
    pub fn name(self) -> &'static str {
        match self {
            Self::Requests => "requests",
            Self::ToolCalls => "tool_calls",
            Self::TotalTokens => "total_tokens",
            Self::Cost => "cost",
            Self::Handoffs => "handoffs",
            Self::Timeout => "timeout",
            Self::Budget => "budget",
        }
    }
}

/// The status of a finished run and what goes with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum LoopStatus {
    /// The model finished, or the return tool ended the run.
    Complete {
        /// The return tool's value, if it ended the run.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        return_value: Option<Value>,
        /// The answer, validated against `LoopOptions::output_schema`,
        /// when the run had one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<Value>,
    },
    /// The run waits for a person: calls that need approval, questions.
    /// Resumed in place with one decision per pending call
    /// (`agentloop_engine::decide`).
    Suspended {
        /// Every call it waits on, in call order (nested runs' included).
        #[serde(default)]
        pending: Vec<PendingCall>,
        /// The run's state to resume from.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<Box<RunState>>,
    },
    /// The run failed; `messages` holds everything committed before.
    Error {
        /// What failed.
        error: LoopError,
    },
    /// `max_iterations` model turns ran.
    MaxIterations,
    /// The caller cancelled; every dangling call has a synthesised result.
    Cancelled,
    /// A usage limit was reached.
    LimitExceeded {
        /// Which one.
        limit: LimitKind,
        /// The budget that refused the run's next model call, said for a
        /// person (with limit `budget`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        budget: Option<String>,
    },
}

impl LoopStatus {
    /// The snake_case status name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Complete { .. } => "complete",
            Self::Suspended { .. } => "suspended",
            Self::Error { .. } => "error",
            Self::MaxIterations => "max_iterations",
            Self::Cancelled => "cancelled",
            Self::LimitExceeded { .. } => "limit_exceeded",
        }
    }
}

/// The result of a run: its status, every message of the history (the input
/// context followed by what the run added) and its token totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LoopResult {
    /// How it ended.
    #[serde(flatten)]
    pub status: LoopStatus,
    /// The whole history.
    // Shared with the run's final state, not copied from it.
    pub messages: History,
    /// Sum of every model turn's tokens, children's included.
    pub tokens: TokenTotals,
    /// Who stopped the run from outside, when its host ended it rather
    /// than the loop ending on its own; absent otherwise.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<RunStop>,
}

/// Why a host ended a run from outside (serialised flat into the result as
/// `stopped_by` and `stop_message`). A run stopped because its work was
/// declared done ends `complete` with one, so it is not mistaken for a
/// loop that finished on its own; a run a person cancelled ends
/// `cancelled` with one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RunStop {
    /// What stopped it, machine-readable (`cancel`, `workflow_complete`).
    pub stopped_by: String,
    /// A sentence for people.
    pub stop_message: String,
}

impl LoopResult {
    /// The last assistant message's text: the answer of a completed run.
    pub fn final_text(&self) -> Option<String> {
        self.messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant)
            .map(Message::text)
    }
}
