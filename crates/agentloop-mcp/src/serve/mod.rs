//! An agent offered as an MCP server (the `server` feature).
//!
//! The protocol side lives here and knows nothing of the engine: an
//! [`AgentHost`] runs the agent (the CLI builds one from its flags), and
//! this module offers it as the MCP tool [`ASK_TOOL`] over stdio
//! ([`serve_stdio`]) or streamable HTTP ([`serve_http`]). While a call runs,
//! the host hands each event to its [`Caller`], which turns it into an MCP
//! progress notification when the client asked for progress; when the run
//! waits for a person, [`Caller::decide`] asks the client through MCP
//! elicitation, or rejects the calls with a clear reason when the client
//! cannot elicit (the result then names them, in a second text block and
//! `refused`). On revisions without the handshake (2026-07-28 on) the
//! forms go back in an `input_required` result and the run waits for the
//! client's next round. A client's `notifications/cancelled` cancels the caller's
//! [`CancellationToken`](agentloop_types::CancellationToken), which the
//! host gives to the run.

mod caller;
mod elicit;
mod handler;
mod host;
mod progress;
mod rounds;
mod transport;

pub use caller::Caller;
pub use elicit::{decision_from_reply, elicitation_for};
pub use handler::{ASK_TOOL, AgentServer};
pub use host::{AgentHost, AskError, AskFuture, AskOutcome, AskRequest, ServeError};
pub use progress::progress_message;
pub use transport::{HttpOptions, serve_http, serve_stdio, session_end_answer};
