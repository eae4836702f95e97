//! What starting or running the server fails with ([`ServerError`]); the
//! HTTP answer to a failed request is [`crate::http::error::ApiError`].

use agentloop_storage::StorageError;

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The store failed.
    #[error("storage: {0}")]
    Storage(#[from] StorageError),
    /// Binding or serving the socket failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The configuration is unusable.
    #[error("configuration: {0}")]
    Config(String),
}
