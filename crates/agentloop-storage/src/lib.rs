//! Storage of agentloop: projects, chats (minion chats included), messages,
//! attachments, per-project files, checkpoints, loop runs with their event
//! logs, seed 004's tasks, agent runs and conversations, and the users of a
//! server with the hashes of their bearer tokens.
//!
//! The traits in [`store`] come in two groups: [`RuntimeStore`], what the
//! runtime runs chats over (chats, messages, runs, event logs), and
//! [`ProductStore`], the server's product (projects, tasks, users,
//! webhooks); [`Store`] is both. They are implemented by three backends:
//! [`MemoryStore`], [`SqliteStore`] (the embedded default: a file or
//! `:memory:`) and [`PostgresStore`] (many server instances on one
//! database). The SQL backends apply their embedded migrations on connect.
//! [`open_store`] picks a backend from one configuration string.
//! [`export_project`] and [`import_project`] move a whole project between
//! stores as one JSON document. [`ProjectFiles`] serves a project's files
//! as a [`Vfs`](agentloop_types::Vfs), and [`StoredMemories`] a scope's
//! memories as the memory tool's files; [`StoreAttachmentLoader`] (and each
//! backend itself) implements the [`AttachmentLoader`] port.
//!
//! ```
//! use agentloop_storage::{ChatStore, MemoryStore, ProjectStore, model::{Chat, Project}};
//! use agentloop_types::Message;
//!
//! # futures::executor::block_on(async {
//! let store = MemoryStore::new();
//! store.create_project(&Project {
//!     id: "p1".into(), name: "demo".into(), settings: serde_json::json!({}),
//!     approval_mode: None, created_at: 0, updated_at: 0,
//! }).await?;
//! store.create_chat(&Chat {
//!     id: "c1".into(), project_id: "p1".into(), title: "hello".into(),
//!     settings: serde_json::json!({}), totals: Default::default(), minion: None,
//!     created_at: 0, updated_at: 0,
//! }).await?;
//! let seq = store.save_message("c1", &Message::user_text("m1", "hi")).await?;
//! assert_eq!(seq, 0);
//! assert_eq!(store.list_messages("c1").await?[0].message.text(), "hi");
//! # Ok::<(), agentloop_storage::StorageError>(())
//! # }).unwrap();
//! ```
//!
//! # Cargo features
//!
//! None: the in-memory, SQLite and PostgreSQL backends are always built.

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod budgets;
pub mod codec;
pub mod error;
pub mod export;
pub mod files;
mod group_commit;
pub mod members;
pub mod memories;
pub mod memory;
pub mod memory_extraction;
mod message_cache;
pub mod model;
mod open;
pub mod postgres;
pub mod schedules;
mod sql;
pub mod sqlite;
pub mod steps;
pub mod store;
pub mod time;

pub use budgets::BudgetsStore;
pub use error::{StorageError, StorageResult};
pub use export::{
    ChatExport, EXPORT_FORMAT_VERSION, ProjectExport, export_project, import_project,
};
pub use files::ProjectFiles;
pub use members::{MembersStore, ProjectMember, ProjectRole};
pub use memories::{MemoryRecall, StoredMemories};
pub use memory::MemoryStore;
pub use memory_extraction::MemoryExtraction;
pub use open::open_store;
pub use postgres::PostgresStore;
pub use schedules::SchedulesStore;
pub use sqlite::SqliteStore;
pub use steps::{RunStep, StepRetention, StepStore};
pub use store::{
    AppendWatch, AttachmentStore, AuditStore, ChatStore, FileStore, InboxStore, MemoriesStore,
    ProductStore, ProjectSettingsStore, ProjectStore, RevocationWatch, RunStore, RuntimeStore,
    Store, TaskStore, UserStore, WEBHOOK_DELIVERIES_KEPT, WebhookStore, folders_overlap,
};

use agentloop_types::{AttachmentError, AttachmentLoader, LoadedAttachment};

/// Loads an attachment through [`AttachmentStore`], mapping errors to the
/// port's.
async fn load_attachment<S: AttachmentStore + ?Sized>(
    store: &S,
    id: &str,
) -> Result<LoadedAttachment, AttachmentError> {
    match store.get_attachment(id).await {
        Ok(attachment) => Ok(LoadedAttachment {
            media_type: attachment.meta.media_type,
            data: attachment.data,
        }),
        Err(StorageError::NotFound { .. }) => Err(AttachmentError::NotFound(id.to_owned())),
        Err(other) => Err(AttachmentError::Store(other.to_string())),
    }
}

macro_rules! attachment_loader {
    ($($store:ty),*) => {$(
        #[async_trait::async_trait]
        impl AttachmentLoader for $store {
            async fn load(&self, id: &str) -> Result<LoadedAttachment, AttachmentError> {
                load_attachment(self, id).await
            }
        }
    )*};
}

attachment_loader!(MemoryStore, SqliteStore, PostgresStore);

/// The [`AttachmentLoader`] port over any shared [`AttachmentStore`]
/// (including `dyn Store`).
pub struct StoreAttachmentLoader<S: ?Sized>(pub std::sync::Arc<S>);

#[async_trait::async_trait]
impl<S: AttachmentStore + ?Sized> AttachmentLoader for StoreAttachmentLoader<S> {
    async fn load(&self, id: &str) -> Result<LoadedAttachment, AttachmentError> {
        load_attachment(&*self.0, id).await
    }
}
