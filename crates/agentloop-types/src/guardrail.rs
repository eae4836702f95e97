//! Guardrails: checks that stop a run, or a tool call, with a typed
//! outcome naming them. Each may be plain code or a model call of its own
//! (a classifier); one that fails to answer trips (the check could not be
//! made).
//!
//! | guardrail | checks | when it trips |
//! | --- | --- | --- |
//! | [`Guardrail`] (input) | the history the first model call sends, beside that call | the streaming turn is cancelled, nothing of it is committed; the run ends `error`, [`LoopError::Blocked`](crate::LoopError::Blocked) `{ by: "guardrail", name, reason }` |
//! | [`OutputGuardrail`] | the final answer (and its validated structured output) before the run completes | the run ends `error`, `Blocked { by: "guardrail", .. }`; the answer stays in the history, the result carries no output |
//! | [`ToolGuardrail`], before a call | the tool and its arguments | the call does not run; its result is an error `Blocked by guardrail `name`: reason` the model reads |
//! | [`ToolGuardrail`], after a call | the call and its result | the result is withheld: an error `The result was withheld by guardrail `name`: reason` |
//!
//! Output and tool guardrails are asked as hooks (see [`hook`](crate::hook))
//! at `run_end`, `before_tool_call` and `after_tool_call`: each verdict is
//! recorded as a `hook` event with `guardrail: true` and in the run's
//! state, so a resumed run never asks one again for a verdict it has.

use std::sync::Arc;

use serde_json::Value;

use crate::hook::{Hook, HookDecision, HookError, HookInput, HookPoint};
use crate::message::Message;

/// What a guardrail decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuardrailVerdict {
    /// The input may go on.
    Pass,
    /// The run must stop.
    Trip {
        /// Why (the caller reads it in the run's error).
        reason: String,
    },
}

/// A check of a run's input (the history its first model call sends).
///
/// ```
/// use agentloop_types::{Guardrail, GuardrailVerdict, HookError, Message};
///
/// struct NoSecrets;
///
/// #[agentloop_types::async_trait]
/// impl Guardrail for NoSecrets {
///     fn name(&self) -> &str { "no-secrets" }
///     async fn check(&self, messages: &[Message]) -> Result<GuardrailVerdict, HookError> {
///         let leaked = messages.iter().any(|m| m.text().contains("BEGIN PRIVATE KEY"));
///         Ok(if leaked {
///             GuardrailVerdict::Trip { reason: "a private key in the prompt".into() }
///         } else {
///             GuardrailVerdict::Pass
///         })
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait Guardrail: Send + Sync {
    /// The name a trip reports.
    fn name(&self) -> &str;

    /// Checks the messages the first model call sends.
    async fn check(&self, messages: &[Message]) -> Result<GuardrailVerdict, HookError>;
}

/// The first trip among `guardrails` over `messages`, checked
/// concurrently: `(name, reason)`, or `None` when all pass. A guardrail
/// that fails to answer trips (the check could not be made).
pub async fn first_trip(
    guardrails: &[Arc<dyn Guardrail>],
    messages: &[Message],
) -> Option<(String, String)> {
    use futures::stream::{FuturesUnordered, StreamExt};
    let mut checks: FuturesUnordered<_> = guardrails
        .iter()
        .map(|g| async move {
            let verdict = match g.check(messages).await {
                Ok(verdict) => verdict,
                Err(error) => GuardrailVerdict::Trip {
                    reason: format!("the check failed: {error}"),
                },
            };
            (g.name().to_owned(), verdict)
        })
        .collect();
    while let Some((name, verdict)) = checks.next().await {
        if let GuardrailVerdict::Trip { reason } = verdict {
            return Some((name, reason));
        }
    }
    None
}

/// A check of a run's final answer, before the run completes.
///
/// ```
/// use agentloop_types::{GuardrailVerdict, HookError, OutputGuardrail};
/// use serde_json::Value;
///
/// struct NoEmails;
///
/// #[agentloop_types::async_trait]
/// impl OutputGuardrail for NoEmails {
///     fn name(&self) -> &str { "no-emails" }
///     async fn check(&self, answer: &str, _output: Option<&Value>) -> Result<GuardrailVerdict, HookError> {
///         Ok(if answer.contains('@') {
///             GuardrailVerdict::Trip { reason: "the answer holds an email address".into() }
///         } else {
///             GuardrailVerdict::Pass
///         })
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait OutputGuardrail: Send + Sync {
    /// The name a trip reports.
    fn name(&self) -> &str;

    /// Checks the answer's text and, when the run has an output schema,
    /// its validated structured output.
    async fn check(
        &self,
        answer: &str,
        output: Option<&Value>,
    ) -> Result<GuardrailVerdict, HookError>;
}

/// A check of each tool call before it runs and of its result after.
/// Both checks pass unless implemented.
#[async_trait::async_trait]
pub trait ToolGuardrail: Send + Sync {
    /// The name a trip reports.
    fn name(&self) -> &str;

    /// Checks a call about to run.
    async fn check_call(
        &self,
        tool: &str,
        arguments: &Value,
    ) -> Result<GuardrailVerdict, HookError> {
        let _ = (tool, arguments);
        Ok(GuardrailVerdict::Pass)
    }

    /// Checks a call's result before the model reads it.
    async fn check_result(
        &self,
        tool: &str,
        arguments: &Value,
        result: &str,
        is_error: bool,
    ) -> Result<GuardrailVerdict, HookError> {
        let _ = (tool, arguments, result, is_error);
        Ok(GuardrailVerdict::Pass)
    }
}

fn decision(verdict: GuardrailVerdict) -> HookDecision {
    match verdict {
        GuardrailVerdict::Pass => HookDecision::Pass,
        GuardrailVerdict::Trip { reason } => HookDecision::Block { reason },
    }
}

/// An output guardrail asked as a `run_end` hook.
struct OutputHook(Arc<dyn OutputGuardrail>);

#[async_trait::async_trait]
impl Hook for OutputHook {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn points(&self) -> Vec<HookPoint> {
        vec![HookPoint::RunEnd]
    }

    async fn call(&self, input: &HookInput) -> Result<HookDecision, HookError> {
        match input {
            HookInput::RunEnd { answer, output, .. } => {
                Ok(decision(self.0.check(answer, output.as_ref()).await?))
            }
            _ => Ok(HookDecision::Pass),
        }
    }

    fn on_error(&self) -> HookDecision {
        HookDecision::Block {
            reason: "the check failed".to_owned(),
        }
    }

    fn is_guardrail(&self) -> bool {
        true
    }
}

/// A tool guardrail asked as `before_tool_call` and `after_tool_call`
/// hooks.
struct ToolHook(Arc<dyn ToolGuardrail>);

#[async_trait::async_trait]
impl Hook for ToolHook {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn points(&self) -> Vec<HookPoint> {
        vec![HookPoint::BeforeToolCall, HookPoint::AfterToolCall]
    }

    async fn call(&self, input: &HookInput) -> Result<HookDecision, HookError> {
        let verdict = match input {
            HookInput::BeforeToolCall {
                tool, arguments, ..
            } => self.0.check_call(tool, arguments).await?,
            HookInput::AfterToolCall {
                tool,
                arguments,
                result,
                is_error,
                ..
            } => {
                self.0
                    .check_result(tool, arguments, result, *is_error)
                    .await?
            }
            _ => GuardrailVerdict::Pass,
        };
        Ok(decision(verdict))
    }

    fn on_error(&self) -> HookDecision {
        HookDecision::Block {
            reason: "the check failed".to_owned(),
        }
    }

    fn is_guardrail(&self) -> bool {
        true
    }
}

/// `guardrail` as the hook that asks it at `run_end`.
pub fn output_guardrail_hook(guardrail: Arc<dyn OutputGuardrail>) -> Arc<dyn Hook> {
    Arc::new(OutputHook(guardrail))
}

/// `guardrail` as the hook that asks it at `before_tool_call` and
/// `after_tool_call`.
pub fn tool_guardrail_hook(guardrail: Arc<dyn ToolGuardrail>) -> Arc<dyn Hook> {
    Arc::new(ToolHook(guardrail))
}
