//! The agentloop loop: the engine that runs an LLM agent (model turns, tool
//! calls, their results back to the model) until it is done.
//!
//! A run is a sans-IO [`Machine`] (what happens next) driven by one thin
//! async driver (calls the provider, runs tools concurrently, retrieves,
//! emits events). Every built-in strategy is such a machine over one shared
//! run core, so any run can be stored between steps and continued with
//! [`resume`]. The public shape is seed 000's generator: [`run`] returns a [`RunStream`] of
//! events that ends with the result; dropping it cancels the run, and
//! [`collect`] drains it to the [`LoopResult`](agentloop_types::LoopResult).
//!
//! Around that loop:
//! - [`strategy`]: interchangeable ways to run an agent ([`LoopStrategy`]:
//!   `native`, `react`, `llm-only`, `tool-first`, `plan-and-execute`),
//!   chosen by name through a [`StrategyRegistry`];
//! - [`skills`]: prompts the model calls like tools, each a child cycle of
//!   the loop with scoped tools and sub-skills;
//! - [`retrieval`]: an in-memory [`Retriever`](agentloop_types::Retriever)
//!   and the cited form passages take in front of the model;
//! - [`SessionRuns`]: one live run per session key; a new run cancels the
//!   one it supersedes.
//!
//! ```
//! use agentloop_engine::{RunDeps, collect, run, scripted::{ScriptedProvider, ScriptedTurn}};
//! use agentloop_types::{LoopOptions, LoopStatus, Message};
//!
//! # futures::executor::block_on(async {
//! let provider = ScriptedProvider::new([ScriptedTurn::new().text("Hello!").usage(12, 3)]);
//! let result = collect(run(
//!     LoopOptions::default(),
//!     vec![Message::user_text("u1", "Say hello")],
//!     RunDeps::new(provider),
//! ))
//! .await;
//! assert!(matches!(result.status, LoopStatus::Complete { .. }));
//! assert_eq!(result.final_text().as_deref(), Some("Hello!"));
//! assert_eq!(result.tokens.input_tokens, 12);
//! # });
//! ```
//!
//! # Cargo features
//!
//! None: the whole crate is always built.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod cancel;
mod clock;
mod driver;
mod handoff;
mod interrupt;
pub mod machine;
mod model_turn;
pub mod retrieval;
mod run_stream;
pub mod scripted;
mod sent_request;
mod session;
pub mod skills;
pub mod strategy;
pub mod telemetry;
mod tool_call;
mod tool_exec;

pub use clock::{Clock, SystemClock};
pub use driver::{
    RunDeps, Settled, cancel_waiting, decide, resume, run, settle, settle_handing_off,
};
pub use handoff::{AgentProfile, Handoffs};
pub use interrupt::Interrupt;
pub use machine::{
    Awaiting, Input, Machine, OfferedTool, Output, Step, StepError, ToolCall, ToolOutcome,
    check_output_schema,
};
pub use run_stream::{CheckpointedRun, RunItem, RunStream, collect};
pub use session::SessionRuns;
pub use strategy::{LoopStrategy, StrategyError, StrategyRegistry};

/// The message of a caught panic.
pub(crate) fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-text payload".to_owned()
    }
}
