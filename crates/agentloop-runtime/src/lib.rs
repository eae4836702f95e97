//! The consumer side of the agentloop loop (seed 000's `useChat`, seed
//! 001's `ChatService`).
//!
//! [`ChatRuntime`] sends a user message to a stored chat: it builds flat
//! [`LoopOptions`](agentloop_types::LoopOptions) from the project's and
//! chat's [settings], loads the history, runs the loop through an injected
//! [`LoopStrategy`](agentloop_engine::LoopStrategy) (native by default) with
//! the injected provider and tools, and persists what the run yields before
//! reading the next event: messages, token totals, the run's event log, its
//! state after every step (strategy phase included), its end. Child runs
//! (minions, skills) get minion chats keyed by their event path. Suspended
//! runs are resumed with [`ChatRuntime::resume`]; runs a crash interrupted
//! are found and repaired by [`ChatRuntime::recover`] and continued from
//! their stored state through
//! [`agentloop_engine::resume`] by [`ChatRuntime::continue_chat`].
//!
//! The runtime runs over a
//! [`RuntimeStore`](agentloop_storage::RuntimeStore): chats, messages,
//! checkpoints, runs with their leases and event logs, attachments, and
//! the settings chats inherit from their project. It names nothing of the
//! server's product (projects' other parts, tasks, users, webhooks): the
//! host creates projects, and a backend that serves only chats implements
//! the runtime's store alone.
//!
//! ```
//! use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
//! use agentloop_runtime::{ChatRuntime, ChatSettings, ProjectSettings};
//! use agentloop_storage::{ChatStore, MemoryStore, ProjectStore, model::Project};
//! use agentloop_types::Message;
//! use std::sync::Arc;
//!
//! # futures::executor::block_on(async {
//! let store = Arc::new(MemoryStore::new());
//! let project = Project {
//!     id: "p1".into(), name: "demo".into(),
//!     settings: serde_json::to_value(ProjectSettings::default())?,
//!     approval_mode: None, created_at: 0, updated_at: 0,
//! };
//! store.create_project(&project).await?;
//! let provider = ScriptedProvider::new([ScriptedTurn::new().text("Hi!").usage(5, 2)]);
//! let runtime = ChatRuntime::new(store, provider);
//! let chat = runtime.create_chat(&project.id, "hello", &ChatSettings::default()).await?;
//! let outcome = runtime.send(&chat.id, Message::user_text("u1", "Hello")).await?.outcome().await?;
//! assert_eq!(outcome.result.final_text().as_deref(), Some("Hi!"));
//! assert_eq!(runtime.store().list_messages(&chat.id).await?.len(), 2);
//! assert_eq!(runtime.store().get_chat(&chat.id).await?.totals.input_tokens, 5);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # Cargo features
//!
//! None.

#![cfg_attr(docsrs, feature(doc_cfg))]

mod chat_run;
pub mod ending;
pub mod error;
pub mod fork;
mod forked;
mod gate;
pub mod heartbeat;
mod host;
pub mod ids;
mod inbox;
mod lifecycle;
pub mod log;
mod persist;
pub mod recovery;
mod runtime;
pub mod settings;
mod stored;
mod submit;

pub use chat_run::{ChatRun, RunOutcome};
pub use ending::{Decided, RunEnding};
pub use error::{RuntimeError, RuntimeResult};
pub use fork::{ForkPlan, Forked};
pub use heartbeat::{Heartbeat, LeaseWatcher, Watched};
pub use host::{Hosted, HostedRun, Written};
pub use log::RunLog;
pub use persist::minion_chat_id;
pub use recovery::{ClosedCall, RecoveredRun, RecoveryMode};
pub use runtime::{ChatRuntime, DEFAULT_LEASE_MS};
pub use settings::{ChatSettings, LoopSettings, ProjectSettings, build_loop_options};
pub use submit::Submitted;
