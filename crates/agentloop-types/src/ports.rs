//! Port traits implemented by other layers: the model provider and the
//! attachment loader. (The tool port is in [`crate::tool`].)

use std::sync::Arc;

use futures::stream::BoxStream;

use crate::error::ProviderError;
use crate::message::ApiKind;
use crate::options::{RequestOptions, ResponseFormat};
use crate::shared_history::History;
use crate::stream::ModelChunk;
use crate::tool::ToolDefinition;

/// One model turn to request.
#[derive(Clone)]
pub struct ModelRequest {
    /// What the run's requests carry (model, sampling, reasoning, web
    /// search ...): the request part of its
    /// [`LoopOptions`](crate::LoopOptions), never the loop's policy.
    pub options: RequestOptions,
    /// The schema to enforce with the API's structured-output field, when
    /// the engine decided this run's answer is asked for natively (see
    /// [`OutputSchema::uses_tool`](crate::OutputSchema::uses_tool)); `None`
    /// sends none. Shared between a run's requests, not copied.
    pub response_format: Option<Arc<ResponseFormat>>,
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
            .field("response_format", &self.response_format)
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

    /// The wire API the provider speaks, when it is one of [`ApiKind`]. The
    /// engine reads it once per run to decide how an output schema is asked
    /// for: through the request's [`ResponseFormat`] where the API has that
    /// field, else through the `final_output` tool. The default, `None`,
    /// names no API, and a run asks through the tool, which any provider
    /// that offers tools can honour.
    fn api(&self) -> Option<ApiKind> {
        None
    }
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
