//! Chats, their messages and the points they roll back to.

use agentloop_types::{Message, SteerStrategy, TokenTotals};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The tool call that started a minion chat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MinionLink {
    /// The chat whose run made the call.
    pub parent_chat_id: String,
    /// The `tool_use` id of the call.
    pub tool_use_id: String,
}

/// A chat: an ordered list of messages with settings and token totals.
/// A minion chat is a chat with a [`MinionLink`]; it is deleted with its
/// parent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chat {
    /// Id.
    pub id: String,
    /// Owning project.
    pub project_id: String,
    /// Display title.
    pub title: String,
    /// Free-form settings (model, system prompt, tools ...).
    pub settings: Value,
    /// Tokens and cost spent in this chat.
    pub totals: TokenTotals,
    /// Set for minion chats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minion: Option<MinionLink>,
    /// Creation time (Unix ms).
    pub created_at: i64,
    /// Last update time (Unix ms).
    pub updated_at: i64,
}

/// A message with its position in its chat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredMessage {
    /// Position: strictly increasing in append order within the chat.
    pub seq: u64,
    /// The message.
    pub message: Message,
}

/// A named point a chat can roll back to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The chat.
    pub chat_id: String,
    /// Name, unique within the chat.
    pub name: String,
    /// Seq of the last message kept on rollback; `None` keeps none.
    pub message_seq: Option<u64>,
    /// The chat's totals at this point, restored on rollback.
    pub totals: TokenTotals,
    /// Creation time (Unix ms).
    pub created_at: i64,
}

/// A message sent to a chat's run while it goes on, waiting in the chat's
/// inbox for the run to take it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueuedMessage {
    /// The message.
    pub message: Message,
    /// How it was sent: `enqueue` (for the run's next step) or `interrupt`
    /// (the step then in flight was asked to stop for it).
    pub strategy: SteerStrategy,
    /// When it arrived (Unix ms).
    pub queued_at: i64,
}
