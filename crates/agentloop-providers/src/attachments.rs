//! Resolving attachment sources before a request is built.
//!
//! Stored attachments are loaded through the request's
//! [`AttachmentLoader`](agentloop_types::AttachmentLoader) and base64-encoded
//! once, so the body builders stay synchronous and pure.

use std::cell::Cell;
use std::collections::HashMap;

use agentloop_types::{
    AttachmentSource, ContentBlock, LoadedAttachment, ModelRequest, ProviderError,
};
use base64::Engine;

use crate::error;

/// An attachment ready to put into a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resolved {
    /// Inline bytes.
    Base64 {
        /// IANA media type.
        media_type: String,
        /// Standard base64 of the bytes.
        data: String,
    },
    /// A URL the provider fetches.
    Url(String),
}

impl Resolved {
    /// A `data:` URL for inline bytes, or the URL itself.
    pub(crate) fn to_url(&self) -> String {
        match self {
            Self::Base64 { media_type, data } => format!("data:{media_type};base64,{data}"),
            Self::Url(url) => url.clone(),
        }
    }

    /// The bytes as text, when they are a `text/*` document.
    pub(crate) fn as_text(&self) -> Option<String> {
        match self {
            Self::Base64 { media_type, data } if media_type.starts_with("text/") => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(data)
                    .ok()?;
                String::from_utf8(bytes).ok()
            }
            _ => None,
        }
    }
}

/// Stored attachments of a request, loaded and encoded.
#[derive(Debug, Clone, Default)]
pub(crate) struct Attachments {
    stored: HashMap<String, LoadedAttachment>,
    /// Whether only the messages from some index on were read (those the
    /// body's wire cache has not written yet).
    partial: bool,
    /// Set when a partial load was asked for an attachment it skipped.
    missed: Cell<bool>,
}

impl Attachments {
    /// Loads every stored attachment the request's messages from index
    /// `from` on reference. Messages before it were written into an
    /// earlier body already (see `WireCache`), so reading only the new
    /// ones keeps a step's cost from growing with the history; a body
    /// that still needs an earlier one says so through
    /// [`missed`](Self::missed), and its builder loads them all.
    pub(crate) async fn load(request: &ModelRequest, from: usize) -> Result<Self, ProviderError> {
        let mut stored = HashMap::new();
        for message in request.messages.iter().skip(from) {
            for block in &message.content {
                let source = match block {
                    ContentBlock::Image { source } | ContentBlock::Document { source, .. } => {
                        source
                    }
                    _ => continue,
                };
                let AttachmentSource::Stored { id } = source else {
                    continue;
                };
                if stored.contains_key(id) {
                    continue;
                }
                let Some(loader) = &request.attachments else {
                    return Err(error::invalid_request(format!(
                        "message references stored attachment {id} but the request has no attachment loader"
                    )));
                };
                let loaded = loader
                    .load(id)
                    .await
                    .map_err(|e| error::invalid_request(format!("cannot load attachment: {e}")))?;
                stored.insert(id.clone(), loaded);
            }
        }
        Ok(Self {
            stored,
            partial: from > 0,
            missed: Cell::new(false),
        })
    }

    /// Whether the body asked for an attachment this partial load skipped.
    pub(crate) fn missed(&self) -> bool {
        self.missed.get()
    }

    /// Resolves one source.
    pub(crate) fn resolve(&self, source: &AttachmentSource) -> Result<Resolved, ProviderError> {
        match source {
            AttachmentSource::Base64 { media_type, data } => Ok(Resolved::Base64 {
                media_type: media_type.clone(),
                data: data.clone(),
            }),
            AttachmentSource::Url { url } => Ok(Resolved::Url(url.clone())),
            AttachmentSource::Stored { id } => {
                let loaded = self.stored.get(id).ok_or_else(|| {
                    self.missed.set(self.partial);
                    error::invalid_request(format!("attachment {id} was not loaded"))
                })?;
                Ok(Resolved::Base64 {
                    media_type: loaded.media_type.clone(),
                    data: base64::engine::general_purpose::STANDARD.encode(&loaded.data),
                })
            }
        }
    }
}
