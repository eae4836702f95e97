//! Errors that end a run, as values (the loop never panics or throws).

use serde::{Deserialize, Serialize};

use crate::history::HistoryError;
use crate::stop::{PartialTurn, RefusalDetails};
use crate::stream::AssemblyError;

/// What went wrong talking to a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ProviderErrorKind {
    /// The provider answered with an HTTP error status.
    Http,
    /// The stream carried an error event (overloaded, quota, ...).
    Api,
    /// The connection failed or broke.
    Connection,
    /// The stream ended before the turn was complete.
    Truncated,
    /// The provider sent something that could not be decoded.
    Decode,
    /// The request asks for something this provider cannot do.
    Unsupported,
    /// The request could not be built (a missing attachment, bad options).
    InvalidRequest,
    /// No provider is configured, so no model can answer; the message says
    /// how to configure one, and is shown as it is (no kind, no
    /// `provider error` prefix: nothing failed that a user must decode).
    NotConfigured,
}

impl ProviderErrorKind {
    /// The kind in words, as error messages start: `api error`,
    /// `invalid request`.
    pub fn label(self) -> &'static str {
        match self {
            Self::Http => "http error",
            Self::Api => "api error",
            Self::Connection => "connection error",
            Self::Truncated => "truncated stream",
            Self::Decode => "decode error",
            Self::Unsupported => "unsupported request",
            Self::InvalidRequest => "invalid request",
            Self::NotConfigured => "no provider configured",
        }
    }
}

impl std::fmt::Display for ProviderErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// A provider failure, with everything the provider said about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[error("{}", self.describe())]
pub struct ProviderError {
    /// Category.
    pub kind: ProviderErrorKind,
    /// Human-readable message.
    pub message: String,
    /// HTTP status, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The provider's error type (`overloaded_error`, `insufficient_quota`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// The provider's request id, for support tickets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// What the turn reported before it failed (a stream cut after its
    /// usage and stop reason arrived), so billed tokens are not lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<Box<PartialTurn>>,
}

impl ProviderError {
    /// One line with everything known: kind, status, type, message, request id.
    /// A [`NotConfigured`](ProviderErrorKind::NotConfigured) error is its
    /// message alone: it already says what to do.
    fn describe(&self) -> String {
        if self.kind == ProviderErrorKind::NotConfigured {
            return self.message.clone();
        }
        let mut out = self.kind.label().to_owned();
        if let Some(status) = self.status {
            out.push_str(&format!(" (HTTP {status})"));
        }
        if let Some(error_type) = &self.error_type {
            out.push_str(&format!(" [{error_type}]"));
        }
        out.push_str(": ");
        out.push_str(&self.message);
        if let Some(request_id) = &self.request_id {
            out.push_str(&format!(" (request id {request_id})"));
        }
        out
    }

    /// An error of `kind` with a message and nothing else.
    pub fn new(kind: ProviderErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            status: None,
            error_type: None,
            request_id: None,
            partial: None,
        }
    }
}

/// Why a run ended with status `error`.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LoopError {
    /// The provider failed. Shown as `provider error: ...`, except when no
    /// provider is configured: then only the message saying how to set one.
    #[error("{}", provider_failure(error))]
    Provider {
        /// What it said.
        error: ProviderError,
    },
    /// The provider adapter broke the streaming protocol.
    #[error("malformed model stream: {error}")]
    Assembly {
        /// The violation.
        error: AssemblyError,
    },
    /// The provider stream ended without a finish item.
    #[error("model stream ended without a stop reason")]
    IncompleteStream,
    /// The history about to be sent breaks the tool-call pairing rules.
    #[error("invalid history: {error}")]
    InvalidHistory {
        /// The violation.
        error: HistoryError,
    },
    /// The final answer did not fit the output schema, also after every
    /// retry the schema allowed.
    #[error("output_invalid: the answer does not fit the output schema: {}", errors.join("; "))]
    OutputInvalid {
        /// The last answer, as the model gave it (JSON text, or the
        /// `final_output` call's input serialised).
        answer: String,
        /// What the validator found wrong with it.
        errors: Vec<String>,
    },
    /// The model refused to give the structured answer.
    #[error("the model refused{}", refusal_text(details.as_ref()))]
    Refused {
        /// What the provider said about the refusal.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<RefusalDetails>,
    },
    /// The run asked for an output schema, but its strategy answers in
    /// free text and cannot be held to one (only the native strategy can).
    /// Refused before the first model request.
    #[error(
        "an output schema needs the native strategy; the {strategy} strategy cannot hold its \
         answer to one"
    )]
    OutputSchemaUnsupported {
        /// The strategy the run was started with.
        strategy: String,
    },
    /// The run's agents hand off to each other, but its strategy cannot
    /// (only the native strategy can). Refused before the first model
    /// request.
    #[error("handoffs need the native strategy; the {strategy} strategy cannot hand off")]
    HandoffsUnsupported {
        /// The strategy the run was started with.
        strategy: String,
    },
    /// A hook (or a guardrail) blocked the run: its prompt, a model call,
    /// or its answer. Nothing after the block was committed.
    #[error("{by} `{name}` blocked the run: {reason}")]
    Blocked {
        /// What blocked it: `hook` or `guardrail`.
        by: String,
        /// The hook's or guardrail's name.
        name: String,
        /// Why.
        reason: String,
    },
    /// A resumed run state has a schema this version cannot read.
    #[error("run state schema {found} is not supported (expected {expected})")]
    UnsupportedState {
        /// Version found.
        found: u32,
        /// Version supported.
        expected: u32,
    },
    /// A resumed run state cannot continue: it has finished, or its
    /// strategy phase cannot be read.
    #[error("run state cannot be resumed: {reason}")]
    InvalidState {
        /// Why.
        reason: String,
    },
    /// The host could not execute the run (a tool or server it offers
    /// could not start): the run ended before its loop did anything.
    #[error("{message}")]
    Host {
        /// What went wrong.
        message: String,
    },
}

/// How [`LoopError::Provider`] reads.
fn provider_failure(error: &ProviderError) -> String {
    match error.kind {
        ProviderErrorKind::NotConfigured => error.to_string(),
        _ => format!("provider error: {error}"),
    }
}

/// `": explanation (category)"`, or nothing when the provider said nothing.
fn refusal_text(details: Option<&RefusalDetails>) -> String {
    let Some(details) = details else {
        return String::new();
    };
    let mut out = String::new();
    if let Some(explanation) = &details.explanation {
        out.push_str(": ");
        out.push_str(explanation);
    }
    if let Some(category) = &details.category {
        out.push_str(&format!(" ({category})"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_provider_reads_as_what_to_do_and_other_failures_keep_their_kind() {
        let missing = LoopError::Provider {
            error: ProviderError::new(
                ProviderErrorKind::NotConfigured,
                "no model provider is configured: pass --demo",
            ),
        };
        assert_eq!(
            missing.to_string(),
            "no model provider is configured: pass --demo"
        );
        let bad = LoopError::Provider {
            error: ProviderError::new(ProviderErrorKind::InvalidRequest, "bad model"),
        };
        assert_eq!(
            bad.to_string(),
            "provider error: invalid request: bad model"
        );
    }
}
