//! agentloop runs hosted as durable [Restate](https://restate.dev)
//! workflows: a second host of the one run lifecycle of
//! `agentloop-runtime`, beside the built-in lease scheduler.
//!
//! - [`AgentRunWorkflow`] (service `AgentRun`): one workflow per agent
//!   run, keyed by the run's id. Its handler asks a [`RunHost`] for the
//!   run's steps, each a journaled `ctx.run`; see [`workflow`] for how a
//!   step that did not commit is executed again. Its shared `submit`
//!   handler takes a run's inputs (`agentloop_types::RunInput`) through
//!   Restate's ingress and hands them to the host.
//! - [`ServiceEndpoint`]: serves the workflow (HTTP/2) in the process
//!   that executes runs.
//! - [`RestateClient`]: registers that endpoint with Restate's admin API
//!   (idempotent), starts a run's workflow through the ingress, wakes a
//!   workflow whose run waited for a person, and cancels one with
//!   Restate's cancellation.
//!
//! The crate knows Restate and nothing of HTTP routes or tasks: the
//! server implements [`RunHost`] over its run lifecycle, and the
//! `agentloop` binary wires the two (`agentloop serve --engine restate`).
//!
//! ```
//! use std::sync::Arc;
//! use agentloop_restate::{Refused, RestateClient, RunHost, Step};
//! use agentloop_types::RunInput;
//! use serde_json::Value;
//!
//! struct Done;
//! #[async_trait::async_trait]
//! impl RunHost for Done {
//!     async fn step(&self, _run_id: &str) -> Result<Step, String> {
//!         Ok(Step::Ended)
//!     }
//!     async fn stop(&self, _run_id: &str) -> Result<(), String> {
//!         Ok(())
//!     }
//!     async fn submit(&self, _run_id: &str, _input: RunInput) -> Result<Value, Refused> {
//!         Err(Refused::Input { status: 409, message: "the run has ended".into() })
//!     }
//! }
//! let _host: Arc<dyn RunHost> = Arc::new(Done);
//! let client = RestateClient::new("http://127.0.0.1:8080", "http://127.0.0.1:9070");
//! assert!(client.is_ok());
//! assert!(RestateClient::new("ftp://x", "http://127.0.0.1:9070").is_err());
//! ```
//!
//! # Cargo features
//!
//! None.

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod client;
pub mod endpoint;
pub mod error;
pub mod host;
pub mod workflow;

pub use client::RestateClient;
pub use endpoint::{Protocol, SERVICE, ServiceEndpoint};
pub use error::{RestateError, RestateResult};
pub use host::{Refused, RunHost, Step};
pub use workflow::AgentRunWorkflow;
