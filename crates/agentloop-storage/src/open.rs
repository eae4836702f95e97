//! Choosing a backend from one configuration string.

use std::sync::Arc;

use crate::error::StorageResult;
use crate::memory::MemoryStore;
use crate::postgres::PostgresStore;
use crate::sqlite::SqliteStore;
use crate::store::Store;

/// Opens the store a configuration string names:
/// - `memory` or `memory:` — a fresh [`MemoryStore`];
/// - `postgres://…` or `postgresql://…` — a [`PostgresStore`];
/// - `:memory:`, `sqlite::memory:`, `sqlite://path`, `sqlite:path` or a
///   plain file path — a [`SqliteStore`].
pub async fn open_store(target: &str) -> StorageResult<Arc<dyn Store>> {
    if target == "memory" || target == "memory:" {
        return Ok(Arc::new(MemoryStore::new()));
    }
    if target.starts_with("postgres://") || target.starts_with("postgresql://") {
        return Ok(Arc::new(PostgresStore::connect(target).await?));
    }
    Ok(Arc::new(SqliteStore::connect(target).await?))
}
