//! The HTTP server of agentloop (seed 004): projects and tasks owned by
//! users, agent runs started with `POST /api/tasks/{id}/agent-runs` and
//! chained on the server (implementation → review → implementation … until
//! the task's `workflow_complete`), event logs streamed as SSE, owner
//! notifications over a WebSocket, and runs that survive a crash: each is
//! executed under a lease and taken over by a live instance when the lease
//! expires.
//!
//! - [`routes`]: the API; [`openapi`] describes it.
//! - [`runner`] starts agent runs; [`drive`] executes one under its lease
//!   and chains the next; [`ending`] decides how a run ends (status,
//!   reason, and the result its record and terminal event carry); [`heartbeat`] renews the leases of all runs
//!   executing here at once; [`recovery`] takes over runs whose lease
//!   expired.
//! - [`executor`]: the [`AgentExecutor`] port and [`RuntimeExecutor`],
//!   which runs the loop through `agentloop-runtime` (messages are stored
//!   as they come); [`sink`] appends each run's events to its log.
//! - [`waiting`]: runs waiting for a person (approvals, answers): the
//!   decisions people send, resuming, closing what a stopped run waits on.
//! - [`policy`]: whether a project's fs writes and JavaScript calls wait
//!   for a person (`ask`) or not (`unattended`, the server's default).
//! - [`users`]: users and token hashes; [`config`]: provider, prompts,
//!   leases and limits.
//!
//! ```no_run
//! use std::sync::Arc;
//! use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
//! use agentloop_server::{Server, ServerConfig, shutdown_signal};
//! use agentloop_storage::MemoryStore;
//! use agentloop_types::ApiKind;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let provider = ScriptedProvider::new([ScriptedTurn::new().text("Done.")]);
//! let config = ServerConfig::new(provider, ApiKind::AnthropicMessages, "scripted");
//! let store = Arc::new(MemoryStore::new());
//! // Hand `token` to its user once: the store keeps only its hash.
//! let (_user, token) = agentloop_server::users::create_user(&*store, "ada").await?;
//! assert!(token.starts_with("al_"));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! Server::new(store, config).serve(listener, shutdown_signal()).await?;
//! # Ok(()) }
//! ```

pub mod config;
pub mod drive;
pub mod ending;
pub mod error;
pub mod executor;
pub mod folders;
pub mod follow;
pub mod heartbeat;
pub mod ids;
pub mod listener;
pub mod metrics;
pub mod openapi;
pub mod policy;
pub mod recovery;
pub mod routes;
pub mod runner;
pub mod server;
pub mod sink;
pub mod state;
pub mod tool;
pub mod users;
pub mod waiting;
pub mod web;

pub use config::{AgentPrompts, ServerConfig};
pub use error::{ApiError, ServerError};
pub use executor::{AgentExecutor, AgentJob, Outcome, RuntimeExecutor};
pub use server::{Server, shutdown_signal};
pub use state::AppState;
