//! The front door of agentloop, a library for running LLM agent loops: a
//! model streams text and tool calls, the tools run, their results go back
//! to the model, until it is done.
//!
//! One dependency for the common case: the layers re-exported behind
//! features, an [`Agent`] builder that hides run ids, message ids and tool
//! casts, [`TypedTool`], a tool whose arguments are a Rust type, and
//! `Agent::run_typed`, a run whose answer is one.
//!
//! Its Cargo features choose the layers it brings in:
//!
//! | feature | default | gives |
//! | --- | --- | --- |
//! | (none) | always | [`types`]: messages, events, results, the port traits |
//! | `engine` | yes | [`engine`] and the [`Agent`] builder |
//! | `providers` | yes | [`providers`] and [`anthropic_from_env`] / [`openai_from_env`] |
//! | `tools` | yes | [`tools`], [`TypedTool`] and `Agent::run_typed` (typed answers) |
//! | `storage` | no | `storage`: the storage backends |
//! | `runtime` | no | `runtime`: persisted, resumable runs |
//! | `server` | no | `server`: the HTTP server |
//! | `mcp` | no | `mcp`: the tools of MCP servers (stdio, streamable HTTP) and `AgentBuilder::mcp_servers` |
//! | `eval` | no | `eval`: datasets of cases run against an agent (an [`Agent`] is an `eval::Subject`), judged and reported |
//!
//! An agent needs a provider and a model id; [`AgentBuilder::build`] refuses
//! one without either ([`BuildError::MissingModel`]). There is no default
//! model: which ids exist is the provider's business, and a default chosen
//! here would change cost and answers from one release to the next.
//!
//! A typed tool's argument and output types derive serde's and schemars'
//! traits through this crate ([`Deserialize`], [`Serialize`], `JsonSchema`
//! and the crates themselves, [`serde`], `schemars`, [`serde_json`]), so an
//! application needs neither crate in its own `Cargo.toml`. The derives take
//! a `crate` attribute naming the re-export, as below: serde's derive names
//! its crate by absolute path otherwise.
//!
//! ```
//! use agentloop::engine::scripted::{ScriptedProvider, ScriptedTurn};
//! use agentloop::prelude::*;
//! use agentloop::serde_json::json;
//!
//! /// Adds two numbers.
//! struct Add;
//!
//! // serde and schemars come re-exported; the `crate` attributes point
//! // their derives at the re-exports.
//! #[derive(agentloop::Deserialize, agentloop::JsonSchema)]
//! #[serde(crate = "agentloop::serde")]
//! #[schemars(crate = "agentloop::schemars")]
//! struct Numbers {
//!     a: i64,
//!     b: i64,
//! }
//!
//! impl TypedTool for Add {
//!     const NAME: &'static str = "add";
//!     const DESCRIPTION: &'static str = "Adds two numbers.";
//!     type Args = Numbers;
//!     type Output = i64;
//!
//!     async fn call(&self, args: Numbers, _: &ToolContext) -> Result<i64, ToolError> {
//!         Ok(args.a + args.b)
//!     }
//! }
//!
//! # futures::executor::block_on(async {
//! let provider = ScriptedProvider::new([
//!     ScriptedTurn::new().tool_call("t1", "add", json!({"a": 2, "b": 3})),
//!     ScriptedTurn::new().text("5"),
//! ]);
//! let agent = Agent::builder()
//!     .provider(provider)
//!     .model("claude-sonnet-4-5")
//!     .tool(Add)
//!     .build()?;
//! let result = agent.run("What is 2 + 3?").await;
//! assert_eq!(result.final_text().as_deref(), Some("5"));
//! # Ok::<(), BuildError>(())
//! # }).unwrap();
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]

pub use agentloop_types as types;
pub use agentloop_types::{
    ApprovalPolicy, CancellationToken, ContentBlock, Decision, DecisionError, Decisions, EventKind,
    LoopEvent, LoopOptions, LoopResult, LoopStatus, Message, ModelProvider, PendingCall,
    RequestOptions, Role, StreamDelta, Tool, ToolContext, ToolResult, Wait,
};

// What a typed tool's argument and output types derive, so an application
// needs no serde or schemars dependency of its own (the derives still need
// `#[serde(crate = "agentloop::serde")]` and
// `#[schemars(crate = "agentloop::schemars")]`: serde's derive names its crate
// by absolute path).
#[cfg(feature = "tools")]
pub use schemars::{self, JsonSchema};
pub use serde::{self, Deserialize, Serialize};
pub use serde_json;

#[cfg(feature = "engine")]
pub use agentloop_engine as engine;
#[cfg(feature = "eval")]
pub use agentloop_eval as eval;
#[cfg(feature = "mcp")]
pub use agentloop_mcp as mcp;
#[cfg(feature = "providers")]
pub use agentloop_providers as providers;
#[cfg(feature = "runtime")]
pub use agentloop_runtime as runtime;
#[cfg(feature = "server")]
pub use agentloop_server as server;
#[cfg(feature = "storage")]
pub use agentloop_storage as storage;
#[cfg(feature = "tools")]
pub use agentloop_tools as tools;

#[cfg(feature = "engine")]
mod agent;
mod handoffs;
#[cfg(feature = "engine")]
mod into;
#[cfg(feature = "providers")]
mod provider;
mod text;
#[cfg(feature = "tools")]
mod typed;
#[cfg(feature = "tools")]
mod typed_output;

#[cfg(feature = "engine")]
pub use agent::{Agent, AgentBuilder, AgentStream, BuildError};
#[cfg(feature = "engine")]
pub use into::{IntoProvider, IntoTool};
#[cfg(feature = "providers")]
pub use provider::{anthropic_from_env, openai_from_env};
pub use text::{RunEnded, TextDeltas, text_delta};
#[cfg(feature = "tools")]
pub use typed::{ToolError, Typed, TypedTool};
#[cfg(feature = "tools")]
pub use typed_output::TypedRunError;

/// The names most programs need: `use agentloop::prelude::*;`.
pub mod prelude {
    #[cfg(feature = "engine")]
    pub use crate::{Agent, AgentStream, BuildError};
    pub use crate::{LoopEvent, LoopResult, LoopStatus, Message, Tool, ToolContext, text_delta};
    #[cfg(feature = "tools")]
    pub use crate::{ToolError, TypedRunError, TypedTool};
    pub use futures::StreamExt as _;
}

/// The README's Rust blocks, compiled as doctests so the README cannot drift
/// from the API.
#[cfg(all(doctest, feature = "engine", feature = "providers", feature = "tools"))]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

/// This crate's README, compiled likewise.
#[cfg(all(doctest, feature = "mcp", feature = "providers", feature = "tools"))]
#[doc = include_str!("../README.md")]
pub struct CrateReadmeDoctests;
