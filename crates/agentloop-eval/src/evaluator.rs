//! The evaluator contract: what a finished run shows ([`Observation`]),
//! and the [`Evaluator`] trait that judges it into a [`Verdict`]. The
//! built-in checks ([`crate::checks`]), the LLM judge ([`crate::judge`]) and
//! an application's own evaluators all implement it.

use std::time::Duration;

use agentloop_types::{ContentBlock, LoopResult, LoopStatus, Role, TokenTotals};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::dataset::Case;

/// One tool call the run made, in call order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The tool's name.
    pub name: String,
    /// Its arguments.
    pub input: Value,
}

/// What one run of a case showed.
#[derive(Debug, Clone)]
pub struct Observation {
    /// The run's result (status, every message, token totals).
    pub result: LoopResult,
    /// The last assistant text, else the value the run returned, as text.
    pub answer: Option<String>,
    /// The structured output (validated against the case's
    /// `output_schema`), else the return tool's value.
    pub output: Option<Value>,
    /// The root run's tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Model turns the run took (assistant messages it added).
    pub steps: u32,
    /// How long the run took.
    pub elapsed: Duration,
}

impl Observation {
    /// Reads what a run showed from its result; `context_turns` is the
    /// number of assistant messages the case's context already held.
    pub fn new(result: LoopResult, context_turns: usize, elapsed: Duration) -> Self {
        let mut tool_calls = Vec::new();
        let mut assistant = 0usize;
        for message in result.messages.iter() {
            if message.role != Role::Assistant {
                continue;
            }
            assistant += 1;
            if assistant <= context_turns {
                continue;
            }
            for block in &message.content {
                if let ContentBlock::ToolUse(call) = block {
                    tool_calls.push(ToolCall {
                        name: call.name.clone(),
                        input: call.input.value(),
                    });
                }
            }
        }
        let steps = u32::try_from(assistant.saturating_sub(context_turns)).unwrap_or(u32::MAX);
        let output = match &result.status {
            LoopStatus::Complete {
                output: Some(value),
                ..
            }
            | LoopStatus::Complete {
                return_value: Some(value),
                ..
            } => Some(value.clone()),
            _ => None,
        };
        let answer = result
            .final_text()
            .filter(|t| !t.trim().is_empty())
            .or_else(|| {
                output.as_ref().map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
            });
        Self {
            result,
            answer,
            output,
            tool_calls,
            steps,
            elapsed,
        }
    }

    /// The run's token totals.
    pub fn tokens(&self) -> &TokenTotals {
        &self.result.tokens
    }
}

/// One evaluator's judgement of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The evaluator's name (`contains`, `trajectory`, `judge`, ...).
    pub evaluator: String,
    /// Whether the run passes it.
    pub passed: bool,
    /// A score from 0 to 1 (1 or 0 for pass/fail checks).
    pub score: f64,
    /// Why, in a sentence (always set on a failure).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

impl Verdict {
    /// A passing verdict, score 1.
    pub fn pass(evaluator: impl Into<String>) -> Self {
        Self {
            evaluator: evaluator.into(),
            passed: true,
            score: 1.0,
            reason: String::new(),
        }
    }

    /// A failing verdict, score 0, with its reason.
    pub fn fail(evaluator: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            evaluator: evaluator.into(),
            passed: false,
            score: 0.0,
            reason: reason.into(),
        }
    }

    /// Pass or fail by `ok`; the reason is kept only on a failure.
    pub fn check(evaluator: impl Into<String>, ok: bool, reason: impl FnOnce() -> String) -> Self {
        if ok {
            Self::pass(evaluator)
        } else {
            Self::fail(evaluator, reason())
        }
    }
}

/// Judges a case's run. Implement it for checks of your own and add them
/// with [`Runner::evaluator`](crate::Runner::evaluator); they run on every
/// case after the case's own expectations.
#[async_trait]
pub trait Evaluator: Send + Sync {
    /// The name reports show.
    fn name(&self) -> &str;
    /// The verdict on one run of `case`. Errors are verdicts too: an
    /// evaluator that cannot decide fails the run with its reason.
    async fn evaluate(&self, case: &Case, run: &Observation) -> Verdict;
}
