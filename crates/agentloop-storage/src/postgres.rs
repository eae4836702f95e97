//! The PostgreSQL backend: many server instances share one database.

use sqlx::Postgres as Db;
use sqlx::postgres::PgPoolOptions;

use crate::error::{StorageError, StorageResult};
use crate::sql::{db_err, migrator};

type DbRow = sqlx::postgres::PgRow;
type SqlStore = PostgresStore;

/// A store in one PostgreSQL database.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: sqlx::Pool<Db>,
    /// Decoded copies of recently read chats.
    message_cache: std::sync::Arc<crate::message_cache::MessageCache>,
}

impl PostgresStore {
    /// Connects to `url` (`postgres://user@host:port/db`) and applies the
    /// embedded migrations.
    pub async fn connect(url: &str) -> StorageResult<Self> {
        let pool = PgPoolOptions::new()
            .max_connections(16)
            .connect(url)
            .await
            .map_err(db_err)?;
        Self::from_pool(pool).await
    }

    /// Uses an existing pool and applies the embedded migrations.
    pub async fn from_pool(pool: sqlx::PgPool) -> StorageResult<Self> {
        migrator([
            include_str!("../migrations/postgres/0001_init.sql"),
            include_str!("../migrations/postgres/0002_users.sql"),
            include_str!("../migrations/postgres/0003_folders_and_end_reasons.sql"),
            include_str!("../migrations/postgres/0004_waiting_agent_runs.sql"),
            include_str!("../migrations/postgres/0005_message_revisions.sql"),
        ])
        .run(&pool)
        .await
        .map_err(|e| StorageError::Migration(e.to_string()))?;
        Ok(Self {
            pool,
            message_cache: Default::default(),
        })
    }

    /// The connection pool.
    pub fn pool(&self) -> &sqlx::PgPool {
        &self.pool
    }

    /// Closes the pool.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

include!("sql/records.rs");
include!("sql/chats.rs");
include!("sql/files.rs");
include!("sql/runs.rs");
include!("sql/users.rs");
