//! The storage error type.

/// Why a storage operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StorageError {
    /// No record of that kind has that id.
    #[error("{kind} {id} not found")]
    NotFound {
        /// Record kind (`project`, `chat`, ...).
        kind: &'static str,
        /// The id looked up.
        id: String,
    },
    /// A record of that kind with that id already exists.
    #[error("{kind} {id} already exists")]
    AlreadyExists {
        /// Record kind.
        kind: &'static str,
        /// The id.
        id: String,
    },
    /// The task already has a running agent run; at most one may run.
    #[error("an agent run is already running for task {task_id}")]
    ActiveAgentRunExists {
        /// The task.
        task_id: String,
    },
    /// Another project already owns this folder, or one inside or around
    /// it.
    #[error("the folder {folder} overlaps the folder of project {project_id}")]
    FolderTaken {
        /// The folder asked for.
        folder: String,
        /// The project whose folder it overlaps.
        project_id: String,
    },
    /// The record refers to a record that does not exist, or the request
    /// breaks another rule of the store.
    #[error("invalid request: {0}")]
    Invalid(String),
    /// A stored value could not be encoded or decoded.
    #[error("serialization failed: {0}")]
    Serialization(String),
    /// Applying the embedded schema migrations failed.
    #[error("migration failed: {0}")]
    Migration(String),
    /// The database failed (connection, I/O, driver).
    #[error("database error: {0}")]
    Database(String),
}

impl StorageError {
    /// A [`StorageError::NotFound`].
    pub fn not_found(kind: &'static str, id: impl Into<String>) -> Self {
        Self::NotFound {
            kind,
            id: id.into(),
        }
    }

    /// A [`StorageError::AlreadyExists`].
    pub fn exists(kind: &'static str, id: impl Into<String>) -> Self {
        Self::AlreadyExists {
            kind,
            id: id.into(),
        }
    }
}

impl From<serde_json::Error> for StorageError {
    fn from(err: serde_json::Error) -> Self {
        Self::Serialization(err.to_string())
    }
}

/// Result of a storage operation.
pub type StorageResult<T> = Result<T, StorageError>;
