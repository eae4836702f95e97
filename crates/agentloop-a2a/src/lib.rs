//! [A2A](https://a2a-protocol.org) (Agent2Agent, protocol version 1.0,
//! JSON-RPC binding) for agentloop: an agent's runs as A2A tasks.
//!
//! - [`wire`]: the protocol's objects as they go over JSON-RPC (agent
//!   card, task, message, part, artifact, stream items, requests).
//! - [`rpc`]: the JSON-RPC envelope, method names and error codes.
//! - [`mapping`]: sans-IO, a run's result and events as a task's status,
//!   artifacts and progress, and a client's reply to an input-required
//!   task as decisions on the calls the run waits on.
//!
//! - `client` (feature `client`): a remote A2A agent as a tool, its
//!   progress the call's progress, cancel propagated.
//!
//! The server side is `agentloop-server`'s `POST /a2a` (a task is one agent
//! run); without `client` this crate does no I/O.
//!
//! # Cargo features
//!
//! - `client`: `client::A2aAgentTool` over reqwest.

#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "client")]
#[cfg_attr(docsrs, doc(cfg(feature = "client")))]
pub mod client;
pub mod mapping;
pub mod rpc;
pub mod v0_3;
pub mod wire;

pub use mapping::{Reply, TaskIds};
pub use rpc::{ErrorCode, RpcError};
pub use wire::{AgentCard, Artifact, Message, Part, StreamResponse, Task, TaskState, TaskStatus};
