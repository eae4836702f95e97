//! Input guardrails: checks of a run's input that run beside its first
//! model call, so one that passes costs no wall time when the turn is the
//! slower. One that trips cancels the streaming turn at once; nothing of
//! it is committed and the run ends `error` with
//! [`LoopError::Blocked`](crate::LoopError::Blocked) (`by: "guardrail"`,
//! naming it). A guardrail may be plain code or a model call of its own
//! (a classifier).
//!
//! Tool calls are guarded with hooks (`before_tool_call` and
//! `after_tool_call` blocks, see [`hook`](crate::hook)).

use std::sync::Arc;

use crate::hook::HookError;
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
