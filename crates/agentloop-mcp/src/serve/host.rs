//! What the protocol side needs of the agent: the host trait, one call's
//! request and outcome, and the errors.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use super::caller::Caller;

/// One call of the ask tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AskRequest {
    /// The user's message.
    pub prompt: String,
    /// The conversation to continue; `None` starts a new one.
    pub chat_id: Option<String>,
}

/// How a call of the ask tool ended.
#[derive(Debug, Clone, PartialEq)]
pub struct AskOutcome {
    /// The conversation the turn belongs to: pass it again to go on.
    pub chat_id: String,
    /// The run's status, as its `Finished` event names it (`complete`,
    /// `error`, `cancelled`, ...).
    pub status: String,
    /// The answer: the last assistant text, else the returned value.
    pub answer: Option<String>,
    /// The validated structured output or the return tool's value.
    pub output: Option<Value>,
    /// Whether the run failed (error, limits): the tool result says
    /// `isError`.
    pub is_error: bool,
}

/// What a host refuses an ask with: shown to the client as the tool's
/// error result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct AskError {
    /// What went wrong, for the client.
    pub message: String,
}

impl AskError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// The future an [`AgentHost`] answers with.
pub type AskFuture = Pin<Box<dyn Future<Output = Result<AskOutcome, AskError>> + Send>>;

/// Runs the agent for the MCP server: one turn of a conversation per call.
pub trait AgentHost: Send + Sync + 'static {
    /// The server's name and a one-line description, shown to clients.
    fn describe(&self) -> (String, String);

    /// Runs `request` to its end. The host passes each event to
    /// `caller.event`, settles pending calls with `caller.decide`, and
    /// gives `caller.cancel_token()` to the run so a cancelled request
    /// stops it.
    fn ask(&self, request: AskRequest, caller: Arc<Caller>) -> AskFuture;
}

/// What can go wrong serving.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The transport failed (stdin closed early, a bind error, ...).
    #[error("MCP server: {message}")]
    Transport {
        /// What failed.
        message: String,
    },
    /// The address could not be bound or served.
    #[error("MCP server on {address}: {source}")]
    Io {
        /// The address.
        address: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}
