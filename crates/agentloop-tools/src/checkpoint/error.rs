//! What can go wrong with a checkpoint.

use std::path::PathBuf;

/// A checkpoint that could not be taken, read, restored or compared.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// A file or folder could not be read or written.
    #[error("{action} {}: {source}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// Where.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The folder walk failed.
    #[error("cannot walk {}: {message}", root.display())]
    Walk {
        /// The folder.
        root: PathBuf,
        /// Why.
        message: String,
    },
    /// No checkpoint has this id in the store.
    #[error("no file checkpoint {id} in {}", store.display())]
    Unknown {
        /// The id.
        id: String,
        /// The store folder.
        store: PathBuf,
    },
    /// A text that is not a checkpoint id.
    #[error("{0:?} is not a file checkpoint id (64 hexadecimal digits)")]
    BadId(String),
    /// A stored tree or content that is not what the store wrote.
    #[error("file checkpoint {id} is damaged: {message}")]
    Damaged {
        /// The checkpoint, or the content's hash.
        id: String,
        /// What is wrong.
        message: String,
    },
}

impl CheckpointError {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io {
            action,
            path,
            source,
        }
    }
}
