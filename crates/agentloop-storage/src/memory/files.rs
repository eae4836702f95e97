//! Attachments and project files of the in-memory backend.

use agentloop_types::vfs::is_within;
use async_trait::async_trait;

use super::{MemoryStore, sort_by_created};
use crate::error::{StorageError, StorageResult};
use crate::model::{Attachment, AttachmentMeta, FileRecord};
use crate::store::{AttachmentStore, FileStore};

#[async_trait]
impl AttachmentStore for MemoryStore {
    async fn put_attachment(&self, attachment: &Attachment) -> StorageResult<()> {
        let mut state = self.lock();
        let meta = &attachment.meta;
        if !state.projects.contains_key(&meta.project_id) {
            return Err(StorageError::Invalid(format!(
                "project {} does not exist",
                meta.project_id
            )));
        }
        if let Some(chat) = meta.chat_id.as_ref().filter(|c| {
            state
                .chats
                .get(*c)
                .is_none_or(|row| row.chat.project_id != meta.project_id)
        }) {
            return Err(StorageError::Invalid(format!(
                "chat {chat} does not exist in project {}",
                meta.project_id
            )));
        }
        if state.attachments.contains_key(&meta.id) {
            return Err(StorageError::exists("attachment", &meta.id));
        }
        let mut stored = attachment.clone();
        stored.meta.size = attachment.data.len() as u64;
        state.attachments.insert(meta.id.clone(), stored);
        Ok(())
    }

    async fn get_attachment(&self, id: &str) -> StorageResult<Attachment> {
        self.lock()
            .attachments
            .get(id)
            .cloned()
            .ok_or_else(|| StorageError::not_found("attachment", id))
    }

    async fn list_attachments(&self, project_id: &str) -> StorageResult<Vec<AttachmentMeta>> {
        let mut all: Vec<AttachmentMeta> = self
            .lock()
            .attachments
            .values()
            .filter(|a| a.meta.project_id == project_id)
            .map(|a| a.meta.clone())
            .collect();
        sort_by_created(&mut all, |a| (a.created_at, &a.id));
        Ok(all)
    }

    async fn delete_attachment(&self, id: &str) -> StorageResult<()> {
        self.lock()
            .attachments
            .remove(id)
            .map(|_| ())
            .ok_or_else(|| StorageError::not_found("attachment", id))
    }
}

#[async_trait]
impl FileStore for MemoryStore {
    async fn get_file(&self, project_id: &str, path: &str) -> StorageResult<Option<FileRecord>> {
        Ok(self
            .lock()
            .files
            .get(&(project_id.to_owned(), path.to_owned()))
            .cloned())
    }

    async fn put_file(&self, project_id: &str, record: &FileRecord) -> StorageResult<()> {
        let mut state = self.lock();
        if !state.projects.contains_key(project_id) {
            return Err(StorageError::Invalid(format!(
                "project {project_id} does not exist"
            )));
        }
        state
            .files
            .insert((project_id.to_owned(), record.path.clone()), record.clone());
        Ok(())
    }

    async fn list_files(&self, project_id: &str, under: &str) -> StorageResult<Vec<FileRecord>> {
        let state = self.lock();
        let mut all: Vec<FileRecord> = state
            .files
            .iter()
            .filter(|((project, path), _)| {
                project == project_id && path != under && is_within(path, under)
            })
            .map(|(_, record)| record.clone())
            .collect();
        all.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(all)
    }

    async fn delete_file_tree(&self, project_id: &str, path: &str) -> StorageResult<u64> {
        let mut state = self.lock();
        let before = state.files.len();
        state
            .files
            .retain(|(project, p), _| !(project == project_id && is_within(p, path)));
        Ok((before - state.files.len()) as u64)
    }

    async fn rename_file_tree(&self, project_id: &str, from: &str, to: &str) -> StorageResult<()> {
        let mut state = self.lock();
        let moving: Vec<(String, String)> = state
            .files
            .keys()
            .filter(|(project, p)| project == project_id && is_within(p, from))
            .cloned()
            .collect();
        for key in moving {
            if let Some(mut record) = state.files.remove(&key) {
                record.path = format!("{to}{}", &key.1[from.len()..]);
                state
                    .files
                    .insert((project_id.to_owned(), record.path.clone()), record);
            }
        }
        Ok(())
    }
}
