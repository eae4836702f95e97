//! Port traits implemented by other layers: the model provider and the
//! attachment loader. (The tool port is in [`crate::tool`].)

use std::sync::Arc;

use futures::stream::BoxStream;

use crate::error::ProviderError;
use crate::options::LoopOptions;
use crate::shared_history::History;
use crate::stream::ModelChunk;
use crate::tool::ToolDefinition;

/// One model turn to request.
#[derive(Clone)]
pub struct ModelRequest {
    /// The run's options (model, sampling, reasoning, web search ...).
    pub options: LoopOptions,
    /// History to send, system messages included; thinking already trimmed
    /// per `thinking_keep_turns`. Shared with the run's state, not copied.
    pub messages: History,
    /// Tools offered to the model; shared between a run's requests, not
    /// copied.
    pub tools: Arc<[ToolDefinition]>,
    /// Resolves stored attachments referenced by the messages.
    pub attachments: Option<Arc<dyn AttachmentLoader>>,
}

impl std::fmt::Debug for ModelRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelRequest")
            .field("options", &self.options)
            .field("messages", &self.messages)
            .field("tools", &self.tools)
            .field("attachments", &self.attachments.is_some())
            .finish()
    }
}

/// A model turn in progress: deltas, then one [`ModelChunk::Finish`].
/// An `Err` item ends the turn. Dropping the stream aborts the request.
pub type ModelStream = BoxStream<'static, Result<ModelChunk, ProviderError>>;

/// Something that runs model turns.
pub trait ModelProvider: Send + Sync {
    /// Starts one model turn.
    fn stream(&self, request: ModelRequest) -> ModelStream;
}

/// Bytes and type of a stored attachment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedAttachment {
    /// IANA media type.
    pub media_type: String,
    /// The bytes.
    pub data: Vec<u8>,
}

/// Why an attachment could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttachmentError {
    /// No attachment has that id.
    #[error("attachment {0} not found")]
    NotFound(String),
    /// The store failed.
    #[error("attachment store failed: {0}")]
    Store(String),
}

/// Reads attachments the application stored (seed 000's `getAttachments`).
#[async_trait::async_trait]
pub trait AttachmentLoader: Send + Sync {
    /// Loads one attachment by id.
    async fn load(&self, id: &str) -> Result<LoadedAttachment, AttachmentError>;
}
