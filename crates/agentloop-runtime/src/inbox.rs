//! Messages sent to a chat's run while it goes on: the chat's inbox in the
//! store, read by the run at each step boundary
//! ([`agentloop_types::Inbox`]), and marked delivered by the run's
//! persister once a stored state holds them.

use std::sync::Arc;

use agentloop_storage::RuntimeStore;
use agentloop_types::{Inbox, Message, Role};
use futures::future::BoxFuture;

/// The inbox of one chat, as a run of it reads it.
pub(crate) struct StoreInbox {
    pub(crate) store: Arc<dyn RuntimeStore>,
    pub(crate) chat_id: String,
}

impl Inbox for StoreInbox {
    fn queued(&self) -> BoxFuture<'_, Result<Vec<Message>, String>> {
        Box::pin(async move {
            let queued = self
                .store
                .queued_messages(&self.chat_id)
                .await
                .map_err(|e| e.to_string())?;
            Ok(queued.into_iter().map(|q| q.message).collect())
        })
    }
}

/// Whether `message` can be a person's message sent to a run: a user
/// message with no tool calls or results.
pub(crate) fn is_persons(message: &Message) -> bool {
    message.role == Role::User
        && message.tool_uses().next().is_none()
        && message.tool_results().next().is_none()
}
