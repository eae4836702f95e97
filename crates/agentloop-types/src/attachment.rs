//! Where an attachment's bytes live: the one piece of message content that
//! render blocks show as it is.

use serde::{Deserialize, Serialize};

/// Where an attachment's bytes come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AttachmentSource {
    /// Stored by the application; resolved through the
    /// [`AttachmentLoader`](crate::ports::AttachmentLoader) port before each
    /// provider request.
    Stored {
        /// Attachment id in the application's store.
        id: String,
    },
    /// Inline bytes, base64-encoded.
    Base64 {
        /// IANA media type, e.g. `image/png`.
        media_type: String,
        /// Base64 (standard alphabet, padded) of the bytes.
        data: String,
    },
    /// A URL the provider fetches itself.
    Url {
        /// The address.
        url: String,
    },
}
