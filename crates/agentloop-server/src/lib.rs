//! The HTTP server of agentloop (seed 004): projects and tasks owned by
//! users, agent runs started with `POST /api/tasks/{id}/agent-runs` and
//! chained on the server (implementation → review → implementation … until
//! the task's `workflow_complete`), event logs streamed as SSE, owner
//! notifications over a WebSocket, and runs that survive a crash: each is
//! executed under a lease and taken over by a live instance when the lease
//! expires.
//!
//! The crate reads top-down in three layers; no module imports from a
//! layer above it:
//!
//! 1. **HTTP** ([`http`]): the router, one module per resource with its
//!    own `router()`, the extractors, the one error answer
//!    ([`ApiError`]), the OpenAPI document and the web page. [`server`]
//!    wires it to a listener; [`listener`] accepts connections within
//!    bounds and [`unread_body`] keeps a connection whose answer left the
//!    request body unread usable.
//! 2. **Run lifecycle**: [`drive`] starts an agent run, executes it under
//!    its lease and chains the next, step by step; [`waiting`] holds runs
//!    waiting for a person (approvals, answers); [`recovery`] takes over
//!    runs whose lease expired; [`webhooks`] tells a project's registered
//!    URLs when its runs end, wait for a person or end a chain. Below
//!    them: [`runner`] (a run's task context, preparing it, creating it),
//!    [`run_log`] (ending a run no
//!    loop is left to end), [`hosting`] (executing the loop through
//!    `agentloop-runtime`, which keeps the run's one record, lease and
//!    event log, and reading its events to live followers), [`run_tools`]
//!    (the tools it is offered), [`run_memory`] (what it recalls as it
//!    starts and extracts as it ends), [`ending`] (how a run ends, decided once
//!    as its terminal event is written), [`heartbeat`] (renewing every
//!    lease here at once), [`local_run`] (a run executing here: its one
//!    cancel token and why it was halted), and [`tool`].
//!    [`dispatch`] and [`durable`] are the seams of an outside durable
//!    engine (Restate): runs handed to it instead of this instance's
//!    scheduler, and one attempt of a run executed for it.
//! 3. **State**: [`state`] ([`AppState`], shared by both layers above),
//!    [`follow`] (waking followers of runs executing elsewhere),
//!    [`metrics`], [`readiness`] (what the instance waits for before it
//!    serves), [`shapes`] (JSON shapes of records for answers and
//!    notifications), [`policy`] (whether fs writes and JavaScript calls
//!    wait for a person), [`users`], [`folders`], [`ids`] and [`config`].
//!
//! ```no_run
//! use std::sync::Arc;
//! use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
//! use agentloop_server::{Server, ServerConfig, shutdown_signal};
//! use agentloop_storage::MemoryStore;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let provider = ScriptedProvider::new([ScriptedTurn::new().text("Done.")]);
//! let config = ServerConfig::new(provider, "scripted");
//! let store = Arc::new(MemoryStore::new());
//! // Hand `token` to its user once: the store keeps only its hash.
//! let (_user, token) = agentloop_server::users::create_user(&*store, "ada").await?;
//! assert!(token.starts_with("al_"));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! Server::new(store, config).serve(listener, shutdown_signal()).await?;
//! # Ok(()) }
//! ```
//!
//! # Cargo features
//!
//! None.

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod audit;
pub mod budgets;
pub mod chain_bounds;
pub mod config;
pub mod dispatch;
pub mod drive;
pub mod durable;
pub mod ending;
pub mod error;
pub mod folders;
pub mod follow;
pub mod fork;
pub mod heartbeat;
pub mod holder;
pub mod hosting;
pub mod http;
pub mod ids;
pub mod inspect;
pub mod listener;
pub mod local_run;
pub mod metrics;
pub mod notices;
pub mod policy;
pub mod project_agents;
pub mod project_instructions;
pub mod proxies;
pub mod rate_limit;
pub mod readiness;
pub mod recovery;
pub mod run_files;
pub mod run_log;
pub mod run_memory;
pub mod run_tools;
pub mod runner;
pub mod schedule_time;
pub mod scheduler;
pub mod server;
pub mod shapes;
pub mod state;
pub mod steer;
pub mod tool;
pub mod unread_body;
pub mod users;
pub mod waiting;
pub mod webhooks;

/// The HTTP layer under its former name.
pub use http as routes;
pub use http::{openapi, web};

pub use config::{AgentPrompts, ServerConfig};
pub use error::ServerError;
pub use http::error::ApiError;
pub use server::{Server, shutdown_signal};
pub use state::AppState;
