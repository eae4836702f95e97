//! The port through which the minion tool reads earlier minion chats, and an
//! in-memory implementation.
//!
//! The loop never writes storage: the minion's messages reach consumers as
//! `message_created` events under the call's path, and whoever stores them
//! (the runtime, a storage backend) implements [`MinionChats`] so a later
//! call can continue the chat.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use agentloop_types::Message;

/// Why a minion chat could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MinionChatError {
    /// No minion chat has that id.
    #[error("minion chat `{0}` not found")]
    NotFound(String),
    /// The store failed.
    #[error("minion chat store failed: {0}")]
    Store(String),
}

/// Reads the history of an earlier minion chat.
#[async_trait::async_trait]
pub trait MinionChats: Send + Sync {
    /// Every message of the chat, oldest first.
    async fn load(&self, chat_id: &str) -> Result<Vec<Message>, MinionChatError>;
}

/// Minion chats held in memory: for tests, demos and single-process use.
#[derive(Debug, Default)]
pub struct MemoryMinionChats {
    chats: Mutex<HashMap<String, Vec<Message>>>,
}

impl MemoryMinionChats {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a message to a chat, creating the chat if needed.
    pub fn append(&self, chat_id: &str, message: Message) {
        self.lock()
            .entry(chat_id.to_owned())
            .or_default()
            .push(message);
    }

    /// Ids of the stored chats, sorted.
    pub fn chat_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.lock().keys().cloned().collect();
        ids.sort();
        ids
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Vec<Message>>> {
        // A poisoned lock means a thread panicked mid-push; the map is intact.
        self.chats.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait::async_trait]
impl MinionChats for MemoryMinionChats {
    async fn load(&self, chat_id: &str) -> Result<Vec<Message>, MinionChatError> {
        self.lock()
            .get(chat_id)
            .cloned()
            .ok_or_else(|| MinionChatError::NotFound(chat_id.to_owned()))
    }
}
