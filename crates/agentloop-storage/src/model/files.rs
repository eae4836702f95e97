//! A project's files and attachments.

use agentloop_types::EntryKind;
use serde::{Deserialize, Serialize};

use crate::codec::base64_bytes;

/// Metadata of a stored attachment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachmentMeta {
    /// Id, referenced by `AttachmentSource::Stored`.
    pub id: String,
    /// Owning project.
    pub project_id: String,
    /// The chat it belongs to; the attachment is deleted with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<String>,
    /// IANA media type.
    pub media_type: String,
    /// Original file name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Size in bytes; set by the store from the data.
    pub size: u64,
    /// Creation time (Unix ms).
    pub created_at: i64,
}

/// An attachment: metadata and bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// Metadata.
    #[serde(flatten)]
    pub meta: AttachmentMeta,
    /// The bytes (base64 in JSON).
    #[serde(with = "base64_bytes")]
    pub data: Vec<u8>,
}

/// One entry of a project's file tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRecord {
    /// Normalised absolute path (`/a/b.txt`).
    pub path: String,
    /// File or directory.
    pub kind: EntryKind,
    /// Content (empty for directories; base64 in JSON).
    #[serde(with = "base64_bytes")]
    pub data: Vec<u8>,
    /// Last write time (Unix ms).
    pub modified_at: i64,
}
