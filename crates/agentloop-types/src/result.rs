//! How a run ended (seed 000's `AgenticLoopResult`, plus `cancelled` and
//! `limit_exceeded`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::LoopError;
use crate::message::{ContentBlock, Message, Role, ToolResultBlock, ToolUseBlock};
use crate::tokens::TokenTotals;

/// Which usage limit ended a run.
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
    /// A tool suspended the run to wait for outside input.
    Suspended {
        /// The call that waits for its result.
        pending_tool_call: ToolUseBlock,
        /// What the suspending tool said (a question, for ask_user).
        reason: String,
        /// Results of the turn's other calls, in call order.
        other_tool_results: Vec<ToolResultBlock>,
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
    pub messages: Vec<Message>,
    /// Sum of every model turn's tokens, children's included.
    pub tokens: TokenTotals,
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

    /// For a suspended run: the tool-result message that resumes it, with
    /// `answer` as the pending call's result and the other results in call
    /// order. `None` for any other status.
    pub fn resume_message(
        &self,
        id: impl Into<String>,
        answer: ToolResultBlock,
    ) -> Option<Message> {
        let LoopStatus::Suspended {
            pending_tool_call,
            other_tool_results,
            ..
        } = &self.status
        else {
            return None;
        };
        let calls = self
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant)?
            .tool_uses();
        let content = calls
            .filter_map(|call| {
                if call.id == pending_tool_call.id {
                    Some(answer.clone())
                } else {
                    other_tool_results
                        .iter()
                        .find(|r| r.tool_use_id == call.id)
                        .cloned()
                }
            })
            .map(ContentBlock::ToolResult)
            .collect();
        Some(Message::new(id, Role::User, content))
    }
}
