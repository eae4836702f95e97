//! Export of a whole project to one serde document, and import of that
//! document into a store that does not hold the project.

use serde::{Deserialize, Serialize};

use crate::error::{StorageError, StorageResult};
use crate::model::{Attachment, Chat, Checkpoint, FileRecord, Project, StoredMessage};
use crate::store::Store;

/// Version of the [`ProjectExport`] shape.
pub const EXPORT_FORMAT_VERSION: u32 = 1;

/// A chat with its messages and checkpoints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatExport {
    /// The chat (a minion chat has its link set).
    pub chat: Chat,
    /// Its messages, in seq order.
    pub messages: Vec<StoredMessage>,
    /// Its checkpoints, oldest first.
    pub checkpoints: Vec<Checkpoint>,
}

/// Everything a project holds that belongs to its content: chats (minion
/// chats included, each after its parent), messages, checkpoints,
/// attachments with their bytes, and files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectExport {
    /// Always [`EXPORT_FORMAT_VERSION`] when written by this version.
    pub format_version: u32,
    /// The project.
    pub project: Project,
    /// Chats, parents before their minion chats.
    pub chats: Vec<ChatExport>,
    /// Attachments, oldest first.
    pub attachments: Vec<Attachment>,
    /// File tree entries, sorted by path.
    pub files: Vec<FileRecord>,
}

/// Reads a whole project out of a store.
pub async fn export_project<S: Store + ?Sized>(
    store: &S,
    project_id: &str,
) -> StorageResult<ProjectExport> {
    let project = store.get_project(project_id).await?;
    let mut pending = store.list_chats(project_id).await?;
    let mut ordered: Vec<Chat> = Vec::with_capacity(pending.len());
    // Parents first: repeatedly take the chats whose parent is placed.
    while !pending.is_empty() {
        let before = pending.len();
        let (ready, rest): (Vec<Chat>, Vec<Chat>) = pending.into_iter().partition(|chat| {
            chat.minion.as_ref().is_none_or(|link| {
                ordered
                    .iter()
                    .any(|placed| placed.id == link.parent_chat_id)
            })
        });
        ordered.extend(ready);
        pending = rest;
        if pending.len() == before {
            return Err(StorageError::Invalid(
                "minion chats whose parent is in another project".into(),
            ));
        }
    }
    let mut chats = Vec::with_capacity(ordered.len());
    for chat in ordered {
        let messages = store.list_messages(&chat.id).await?;
        let checkpoints = store.list_checkpoints(&chat.id).await?;
        chats.push(ChatExport {
            chat,
            messages,
            checkpoints,
        });
    }
    let mut attachments = Vec::new();
    for meta in store.list_attachments(project_id).await? {
        attachments.push(store.get_attachment(&meta.id).await?);
    }
    let files = store.list_files(project_id, "/").await?;
    Ok(ProjectExport {
        format_version: EXPORT_FORMAT_VERSION,
        project,
        chats,
        attachments,
        files,
    })
}

/// Writes an exported project into a store that does not hold it. Ids,
/// seqs and timestamps are kept, so exporting again gives the same document.
/// If any record cannot be written, the partly imported project is deleted
/// again and the error returned.
pub async fn import_project<S: Store + ?Sized>(
    store: &S,
    export: &ProjectExport,
) -> StorageResult<()> {
    if export.format_version != EXPORT_FORMAT_VERSION {
        return Err(StorageError::Invalid(format!(
            "unsupported export format {}",
            export.format_version
        )));
    }
    store.create_project(&export.project).await?;
    let written = import_content(store, export).await;
    if written.is_err() {
        // Leave nothing half-imported; the project's deletion cascades.
        let _ = store.delete_project(&export.project.id).await;
    }
    written
}

async fn import_content<S: Store + ?Sized>(store: &S, export: &ProjectExport) -> StorageResult<()> {
    for chat in &export.chats {
        store.create_chat(&chat.chat).await?;
        store
            .restore_messages(&chat.chat.id, &chat.messages)
            .await?;
        for checkpoint in &chat.checkpoints {
            store.create_checkpoint(checkpoint).await?;
        }
    }
    for attachment in &export.attachments {
        store.put_attachment(attachment).await?;
    }
    for file in &export.files {
        store.put_file(&export.project.id, file).await?;
    }
    Ok(())
}
