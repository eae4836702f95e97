//! Projects, chats, messages and checkpoints of the in-memory backend.

use std::collections::{BTreeMap, HashMap};

use agentloop_types::{Message, SteerStrategy, TokenTotals};
use async_trait::async_trait;

use super::{ChatRow, MemoryStore, sort_by_created};
use crate::error::{StorageError, StorageResult};
use crate::model::{Chat, Checkpoint, Project, QueuedMessage, StoredMessage};
use crate::store::{ChatStore, InboxStore, ProjectSettingsStore, ProjectStore, folders_overlap};

#[async_trait]
impl InboxStore for MemoryStore {
    async fn enqueue_message(
        &self,
        chat_id: &str,
        message: &Message,
        strategy: SteerStrategy,
        now: i64,
    ) -> StorageResult<()> {
        let mut state = self.lock();
        let row = state
            .chats
            .get_mut(chat_id)
            .ok_or_else(|| StorageError::not_found("chat", chat_id))?;
        if row.inbox.iter().any(|(q, _)| q.message.id == message.id) {
            return Err(StorageError::exists("inbox message", &message.id));
        }
        let queued = QueuedMessage {
            message: message.clone(),
            strategy,
            queued_at: now,
        };
        row.inbox.push((queued, None));
        Ok(())
    }

    async fn queued_messages(&self, chat_id: &str) -> StorageResult<Vec<QueuedMessage>> {
        let state = self.lock();
        Ok(state
            .chats
            .get(chat_id)
            .map(|row| {
                row.inbox
                    .iter()
                    .filter(|(_, delivered)| delivered.is_none())
                    .map(|(q, _)| q.clone())
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn mark_delivered(&self, chat_id: &str, ids: &[String], now: i64) -> StorageResult<u64> {
        let mut state = self.lock();
        let Some(row) = state.chats.get_mut(chat_id) else {
            return Ok(0);
        };
        let mut marked = 0;
        for (queued, delivered) in &mut row.inbox {
            if delivered.is_none() && ids.contains(&queued.message.id) {
                *delivered = Some(now);
                marked += 1;
            }
        }
        Ok(marked)
    }
}

#[async_trait]
impl ProjectSettingsStore for MemoryStore {
    async fn project_settings(&self, project_id: &str) -> StorageResult<serde_json::Value> {
        self.lock()
            .projects
            .get(project_id)
            .map(|p| p.settings.clone())
            .ok_or_else(|| StorageError::not_found("project", project_id))
    }
}

#[async_trait]
impl ProjectStore for MemoryStore {
    async fn create_project(&self, project: &Project) -> StorageResult<()> {
        let mut state = self.lock();
        if state.projects.contains_key(&project.id) {
            return Err(StorageError::exists("project", &project.id));
        }
        state.projects.insert(project.id.clone(), project.clone());
        Ok(())
    }

    async fn get_project(&self, id: &str) -> StorageResult<Project> {
        self.lock()
            .projects
            .get(id)
            .cloned()
            .ok_or_else(|| StorageError::not_found("project", id))
    }

    async fn list_projects(&self) -> StorageResult<Vec<Project>> {
        let mut all: Vec<Project> = self.lock().projects.values().cloned().collect();
        sort_by_created(&mut all, |p| (p.created_at, &p.id));
        Ok(all)
    }

    async fn update_project(&self, project: &Project) -> StorageResult<()> {
        let mut state = self.lock();
        let stored = state
            .projects
            .get_mut(&project.id)
            .ok_or_else(|| StorageError::not_found("project", &project.id))?;
        stored.name.clone_from(&project.name);
        stored.settings.clone_from(&project.settings);
        stored.approval_mode = project.approval_mode;
        stored.updated_at = project.updated_at;
        Ok(())
    }

    async fn delete_project(&self, id: &str) -> StorageResult<()> {
        let mut state = self.lock();
        if !state.projects.contains_key(id) {
            return Err(StorageError::not_found("project", id));
        }
        state.remove_project(id);
        Ok(())
    }

    async fn create_project_in_folder(&self, project: &Project, folder: &str) -> StorageResult<()> {
        let mut state = self.lock();
        if state.projects.contains_key(&project.id) {
            return Err(StorageError::exists("project", &project.id));
        }
        if let Some((other, _)) = state
            .folders
            .iter()
            .find(|(_, taken)| folders_overlap(taken, folder))
        {
            return Err(StorageError::FolderTaken {
                folder: folder.to_owned(),
                project_id: other.clone(),
            });
        }
        state.projects.insert(project.id.clone(), project.clone());
        state.folders.insert(project.id.clone(), folder.to_owned());
        Ok(())
    }
}

#[async_trait]
impl ChatStore for MemoryStore {
    async fn create_chat(&self, chat: &Chat) -> StorageResult<()> {
        let mut state = self.lock();
        if !state.projects.contains_key(&chat.project_id) {
            return Err(StorageError::Invalid(format!(
                "project {} does not exist",
                chat.project_id
            )));
        }
        if let Some(link) = chat.minion.as_ref().filter(|l| {
            state
                .chats
                .get(&l.parent_chat_id)
                .is_none_or(|parent| parent.chat.project_id != chat.project_id)
        }) {
            return Err(StorageError::Invalid(format!(
                "parent chat {} does not exist in project {}",
                link.parent_chat_id, chat.project_id
            )));
        }
        if state.chats.contains_key(&chat.id) {
            return Err(StorageError::exists("chat", &chat.id));
        }
        state.chats.insert(
            chat.id.clone(),
            ChatRow {
                chat: chat.clone(),
                next_seq: 0,
                messages: BTreeMap::new(),
                index: HashMap::new(),
                checkpoints: Vec::new(),
                inbox: Vec::new(),
            },
        );
        Ok(())
    }

    async fn get_chat(&self, id: &str) -> StorageResult<Chat> {
        self.lock()
            .chats
            .get(id)
            .map(|row| row.chat.clone())
            .ok_or_else(|| StorageError::not_found("chat", id))
    }

    async fn list_chats(&self, project_id: &str) -> StorageResult<Vec<Chat>> {
        let mut all: Vec<Chat> = self
            .lock()
            .chats
            .values()
            .filter(|row| row.chat.project_id == project_id)
            .map(|row| row.chat.clone())
            .collect();
        sort_by_created(&mut all, |c| (c.created_at, &c.id));
        Ok(all)
    }

    async fn list_minion_chats(&self, parent_chat_id: &str) -> StorageResult<Vec<Chat>> {
        let mut all: Vec<Chat> = self
            .lock()
            .chats
            .values()
            .filter(|row| {
                row.chat
                    .minion
                    .as_ref()
                    .is_some_and(|m| m.parent_chat_id == parent_chat_id)
            })
            .map(|row| row.chat.clone())
            .collect();
        sort_by_created(&mut all, |c| (c.created_at, &c.id));
        Ok(all)
    }

    async fn update_chat(&self, chat: &Chat) -> StorageResult<()> {
        let mut state = self.lock();
        let row = state
            .chats
            .get_mut(&chat.id)
            .ok_or_else(|| StorageError::not_found("chat", &chat.id))?;
        row.chat.title.clone_from(&chat.title);
        row.chat.settings.clone_from(&chat.settings);
        row.chat.totals = chat.totals;
        row.chat.updated_at = chat.updated_at;
        Ok(())
    }

    async fn add_chat_totals(
        &self,
        chat_id: &str,
        delta: TokenTotals,
        updated_at: i64,
    ) -> StorageResult<TokenTotals> {
        let mut state = self.lock();
        let row = state
            .chats
            .get_mut(chat_id)
            .ok_or_else(|| StorageError::not_found("chat", chat_id))?;
        row.chat.totals += delta;
        row.chat.updated_at = updated_at;
        Ok(row.chat.totals)
    }

    async fn delete_chat(&self, id: &str) -> StorageResult<()> {
        let mut state = self.lock();
        if !state.chats.contains_key(id) {
            return Err(StorageError::not_found("chat", id));
        }
        state.remove_chat(id);
        Ok(())
    }

    async fn save_message(&self, chat_id: &str, message: &Message) -> StorageResult<u64> {
        let mut state = self.lock();
        let row = state
            .chats
            .get_mut(chat_id)
            .ok_or_else(|| StorageError::not_found("chat", chat_id))?;
        if let Some(&seq) = row.index.get(&message.id) {
            row.messages.insert(seq, message.clone());
            return Ok(seq);
        }
        let seq = row.next_seq;
        row.next_seq += 1;
        row.index.insert(message.id.clone(), seq);
        row.messages.insert(seq, message.clone());
        Ok(seq)
    }

    async fn list_messages(&self, chat_id: &str) -> StorageResult<Vec<StoredMessage>> {
        let state = self.lock();
        let row = state
            .chats
            .get(chat_id)
            .ok_or_else(|| StorageError::not_found("chat", chat_id))?;
        Ok(row
            .messages
            .iter()
            .map(|(&seq, message)| StoredMessage {
                seq,
                message: message.clone(),
            })
            .collect())
    }

    async fn get_message(&self, chat_id: &str, message_id: &str) -> StorageResult<StoredMessage> {
        let state = self.lock();
        let row = state
            .chats
            .get(chat_id)
            .ok_or_else(|| StorageError::not_found("chat", chat_id))?;
        let seq = *row
            .index
            .get(message_id)
            .ok_or_else(|| StorageError::not_found("message", message_id))?;
        let message = row
            .messages
            .get(&seq)
            .cloned()
            .ok_or_else(|| StorageError::not_found("message", message_id))?;
        Ok(StoredMessage { seq, message })
    }

    async fn truncate_messages(&self, chat_id: &str, after_seq: Option<u64>) -> StorageResult<u64> {
        let mut state = self.lock();
        let row = state
            .chats
            .get_mut(chat_id)
            .ok_or_else(|| StorageError::not_found("chat", chat_id))?;
        Ok(truncate(row, after_seq))
    }

    async fn restore_messages(
        &self,
        chat_id: &str,
        messages: &[StoredMessage],
    ) -> StorageResult<()> {
        let mut state = self.lock();
        let row = state
            .chats
            .get_mut(chat_id)
            .ok_or_else(|| StorageError::not_found("chat", chat_id))?;
        if !row.messages.is_empty() {
            return Err(StorageError::Invalid(format!(
                "chat {chat_id} has messages"
            )));
        }
        let mut staged = BTreeMap::new();
        let mut index = HashMap::new();
        for stored in messages {
            if staged.contains_key(&stored.seq) || index.contains_key(&stored.message.id) {
                return Err(StorageError::exists("message", &stored.message.id));
            }
            staged.insert(stored.seq, stored.message.clone());
            index.insert(stored.message.id.clone(), stored.seq);
        }
        let next = staged.keys().next_back().map_or(0, |s| s + 1);
        row.messages = staged;
        row.index = index;
        row.next_seq = row.next_seq.max(next);
        Ok(())
    }

    async fn create_checkpoint(&self, checkpoint: &Checkpoint) -> StorageResult<()> {
        let mut state = self.lock();
        let row = state
            .chats
            .get_mut(&checkpoint.chat_id)
            .ok_or_else(|| StorageError::not_found("chat", &checkpoint.chat_id))?;
        if row.checkpoints.iter().any(|c| c.name == checkpoint.name) {
            return Err(StorageError::exists("checkpoint", &checkpoint.name));
        }
        row.checkpoints.push(checkpoint.clone());
        Ok(())
    }

    async fn list_checkpoints(&self, chat_id: &str) -> StorageResult<Vec<Checkpoint>> {
        let state = self.lock();
        let row = state
            .chats
            .get(chat_id)
            .ok_or_else(|| StorageError::not_found("chat", chat_id))?;
        let mut all = row.checkpoints.clone();
        sort_by_created(&mut all, |c| (c.created_at, &c.name));
        Ok(all)
    }

    async fn delete_checkpoint(&self, chat_id: &str, name: &str) -> StorageResult<()> {
        let mut state = self.lock();
        let row = state
            .chats
            .get_mut(chat_id)
            .ok_or_else(|| StorageError::not_found("chat", chat_id))?;
        let before = row.checkpoints.len();
        row.checkpoints.retain(|c| c.name != name);
        if row.checkpoints.len() == before {
            return Err(StorageError::not_found("checkpoint", name));
        }
        Ok(())
    }

    async fn rollback_to_checkpoint(&self, chat_id: &str, name: &str) -> StorageResult<Checkpoint> {
        let mut state = self.lock();
        let row = state
            .chats
            .get_mut(chat_id)
            .ok_or_else(|| StorageError::not_found("chat", chat_id))?;
        let checkpoint = row
            .checkpoints
            .iter()
            .find(|c| c.name == name)
            .cloned()
            .ok_or_else(|| StorageError::not_found("checkpoint", name))?;
        truncate(row, checkpoint.message_seq);
        let keep = checkpoint.message_seq;
        row.checkpoints
            .retain(|c| c.message_seq.is_none_or(|s| keep.is_some_and(|k| s <= k)));
        row.chat.totals = checkpoint.totals;
        Ok(checkpoint)
    }
}

fn truncate(row: &mut ChatRow, after_seq: Option<u64>) -> u64 {
    let removed: Vec<u64> = row
        .messages
        .keys()
        .copied()
        .filter(|&s| after_seq.is_none_or(|after| s > after))
        .collect();
    for seq in &removed {
        if let Some(message) = row.messages.remove(seq) {
            row.index.remove(&message.id);
        }
    }
    removed.len() as u64
}
