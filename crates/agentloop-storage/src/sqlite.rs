//! The SQLite backend: the embedded default, in a file (WAL mode) or in
//! memory.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::ConnectOptions;
use sqlx::Sqlite as Db;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous,
};

use crate::error::{StorageError, StorageResult};
use crate::group_commit::{Append, Batched, CommitBatch, GroupCommit, QueuedStart};
use crate::sql::{db_err, migrator, numbered_in_turn};

type DbRow = sqlx::sqlite::SqliteRow;
type SqlStore = SqliteStore;

/// A store in one SQLite database.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: sqlx::Pool<Db>,
    /// Decoded copies of recently read chats.
    message_cache: std::sync::Arc<crate::message_cache::MessageCache>,
    /// Batches concurrent event-log appends into shared transactions.
    writer: GroupCommit<Append>,
    /// Batches concurrent starts of agent runs into shared transactions,
    /// when the store has a writing connection (see [`start_in_batch`]).
    starts: Option<GroupCommit<QueuedStart>>,
    /// Whose turn it is to write (see [`write_turn`](Self::write_turn)),
    /// and the connection writes begin their transactions on.
    write_turns: std::sync::Arc<tokio::sync::Mutex<Writer>>,
}

/// The connection a file store writes through (none when the pool was
/// given), and whether a transaction sent whole may have been left open.
#[derive(Debug)]
struct Writer {
    connection: Option<SqliteConnection>,
    /// Set while a [`write_whole`](Self::write_whole) is in flight: a
    /// caller dropped before its answer came may have left the
    /// transaction it began open, which the next turn rolls back.
    unsettled: bool,
}

impl Writer {
    /// Runs `query`, statements that begin a transaction, write and
    /// commit it, in one exchange with the connection's thread (where
    /// `BEGIN`, the statements and `COMMIT` apart are three). On a failure
    /// the transaction is rolled back, so nothing of it is written.
    async fn write_whole<'q>(
        &mut self,
        query: sqlx::query::Query<'q, Db, sqlx::sqlite::SqliteArguments<'q>>,
    ) -> Result<(), sqlx::Error> {
        let Some(connection) = self.connection.as_mut() else {
            return Err(sqlx::Error::PoolClosed);
        };
        self.unsettled = true;
        let written = query.execute(&mut *connection).await;
        if written.is_err() {
            rollback(connection).await;
        }
        self.unsettled = false;
        written.map(drop)
    }

    /// Rolls back what a dropped [`write_whole`](Self::write_whole) may
    /// have left open.
    async fn settle(&mut self) {
        if let (true, Some(connection)) = (self.unsettled, self.connection.as_mut()) {
            rollback(connection).await;
            self.unsettled = false;
        }
    }
}

/// Rolls back the connection's transaction, if one is open. Its error is
/// not looked at: SQLite refuses a `ROLLBACK` only when no transaction is
/// open (the `BEGIN` failed, the transaction committed, or a failure
/// already rolled it back), which is the state wanted.
async fn rollback(connection: &mut SqliteConnection) {
    let _ = sqlx::query("ROLLBACK").execute(connection).await;
}

/// A store's turn to write (see [`SqliteStore::write_turn`]).
struct WriteTurn<'a>(tokio::sync::MutexGuard<'a, Writer>);

impl WriteTurn<'_> {
    /// Begins a transaction on the store's writing connection, or on a
    /// pooled one when it has none.
    async fn begin<'t>(
        &'t mut self,
        pool: &sqlx::SqlitePool,
    ) -> Result<sqlx::Transaction<'t, Db>, sqlx::Error> {
        match self.0.connection.as_mut() {
            Some(writer) => sqlx::Connection::begin(writer).await,
            None => pool.begin().await,
        }
    }

    /// The writing connection, when the store has one, to send a
    /// transaction to whole.
    fn whole(&mut self) -> Option<&mut Writer> {
        self.0.connection.is_some().then_some(&mut *self.0)
    }
}

impl SqliteStore {
    /// Opens (creating if missing) the database file at `path`, in WAL mode,
    /// and applies the embedded migrations.
    pub async fn open(path: impl AsRef<Path>) -> StorageResult<Self> {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(30))
            .foreign_keys(true)
            // Each connection keeps more pages: a long chat is read from
            // memory instead of page by page. Reads copy pages through
            // read(2) rather than mapping the file: with a file that grows
            // with every append, a server starting and streaming 10,000
            // runs spent its time in the kernel unmapping and remapping it
            // for each of the pool's connections, and started runs 1.2x
            // slower, for a first read of a 10,000-message chat 1.2x
            // faster (`docs/benchmarks.md`).
            .pragma("mmap_size", "0")
            .pragma("cache_size", "-16384");
        // Transactions that write begin on a connection of their own: it
        // is not handed out and back by the pool for each (with a ping on
        // the way back), and as no other connection writes through it, the
        // pages it reads stay in its cache between writes.
        let writer = options.connect().await.map_err(db_err)?;
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            // A connection to a file cannot drop as a network one can, so
            // it is not pinged each time the pool hands it out: the ping
            // was one more trip to the connection's thread per statement.
            .test_before_acquire(false)
            .connect_with(options)
            .await
            .map_err(db_err)?;
        Self::with_writer(pool, Some(writer)).await
    }

    /// A private in-memory database, gone when the store is dropped.
    pub async fn memory() -> StorageResult<Self> {
        let options = SqliteConnectOptions::from_str("sqlite::memory:")
            .map_err(db_err)?
            .foreign_keys(true);
        // One connection that never closes: each connection to `:memory:`
        // would otherwise see its own empty database.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .test_before_acquire(false)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await
            .map_err(db_err)?;
        Self::from_pool(pool).await
    }

    /// Opens `:memory:` or a file path (an optional `sqlite://` prefix is
    /// accepted).
    pub async fn connect(target: &str) -> StorageResult<Self> {
        let path = target
            .strip_prefix("sqlite://")
            .or_else(|| target.strip_prefix("sqlite:"))
            .unwrap_or(target);
        if path == ":memory:" || path.is_empty() {
            Self::memory().await
        } else {
            Self::open(path).await
        }
    }

    /// Uses an existing pool (foreign keys must be on) and applies the
    /// embedded migrations.
    pub async fn from_pool(pool: sqlx::SqlitePool) -> StorageResult<Self> {
        Self::with_writer(pool, None).await
    }

    async fn with_writer(
        pool: sqlx::SqlitePool,
        writer: Option<SqliteConnection>,
    ) -> StorageResult<Self> {
        migrator([
            include_str!("../migrations/sqlite/0001_init.sql"),
            include_str!("../migrations/sqlite/0002_users.sql"),
            include_str!("../migrations/sqlite/0003_folders_and_end_reasons.sql"),
            include_str!("../migrations/sqlite/0004_waiting_agent_runs.sql"),
            include_str!("../migrations/sqlite/0005_message_revisions.sql"),
            include_str!("../migrations/sqlite/0006_project_approval_mode.sql"),
            include_str!("../migrations/sqlite/0007_webhook_deliveries.sql"),
            include_str!("../migrations/sqlite/0008_memories.sql"),
            include_str!("../migrations/sqlite/0009_one_run_status.sql"),
            include_str!("../migrations/sqlite/0010_chains_tokens_audit.sql"),
            include_str!("../migrations/sqlite/0011_inbox.sql"),
            include_str!("../migrations/sqlite/0012_schedules.sql"),
            include_str!("../migrations/sqlite/0013_budgets.sql"),
            include_str!("../migrations/sqlite/0014_run_steps.sql"),
            include_str!("../migrations/sqlite/0015_schedule_budgets.sql"),
            include_str!("../migrations/sqlite/0016_project_members.sql"),
            include_str!("../migrations/sqlite/0017_messages_from_events.sql"),
            include_str!("../migrations/sqlite/0018_inbox_strategy.sql"),
        ])
        .run(&pool)
        .await
        .map_err(|e| StorageError::Migration(e.to_string()))?;
        Ok(Self {
            pool,
            message_cache: Default::default(),
            writer: Default::default(),
            starts: writer.is_some().then(GroupCommit::default),
            write_turns: std::sync::Arc::new(tokio::sync::Mutex::new(Writer {
                connection: writer,
                unsettled: false,
            })),
        })
    }

    /// Waits for this store's turn to write, held until the write commits.
    /// SQLite lets one connection write at a time, and a connection that
    /// finds the database locked sleeps and retries (1 ms, 2 ms, 5 ms … up
    /// to 100 ms a try): with writers from many runs at once, those sleeps
    /// were most of a write's wait. Queued here instead, in order, each
    /// writer starts the moment the previous one commits. (Writers in other
    /// processes still meet the lock and its retries.)
    async fn write_turn(&self) -> WriteTurn<'_> {
        let mut writer = self.write_turns.lock().await;
        writer.settle().await;
        WriteTurn(writer)
    }

    /// The connection pool.
    pub fn pool(&self) -> &sqlx::SqlitePool {
        &self.pool
    }

    /// Closes the pool and the writing connection: later calls fail.
    pub async fn close(&self) {
        self.pool.close().await;
        // Without its writer, a write begins on the closed pool and fails.
        if let Some(writer) = self.write_turns.lock().await.connection.take() {
            // Closing only says goodbye to SQLite: nothing is lost if it fails.
            let _ = sqlx::Connection::close(writer).await;
        }
    }
}

/// Starts of agent runs queue to be written in batches: each start is a
/// few short inserts, and SQLite takes one writer at a time, so written
/// one by one a start's own work was the smaller part of its turn (the
/// trips to the connection's thread and back, and the wait for the async
/// task holding the turn to be polled again). A batch is one transaction
/// sent whole, so a dropped caller leaves it whole or absent, as a lone
/// start. Without a writing connection (a pool given), each start is
/// written alone (`None`: the caller writes it).
async fn start_in_batch(
    store: &SqliteStore,
    start: &crate::model::AgentRunStart,
    body: &str,
) -> Option<StorageResult<()>> {
    let starts = store.starts.as_ref()?;
    let queued = QueuedStart {
        start: start.clone(),
        body: body.to_owned(),
    };
    Some(starts.write(store, queued).await)
}

/// `BEGIN`, the statements of a start once for each of `count` starts
/// (their arguments bound one start after the other) and `COMMIT`: a batch
/// of starts in one transaction, sent whole. Built once for each size.
fn start_batch_sql(count: usize) -> &'static str {
    static BATCHES: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(|| {
        (0..=QueuedStart::MAX_WEIGHT)
            .map(|count| {
                let statements = sql_tasks::START_STATEMENTS.repeat(count);
                format!(
                    "BEGIN;\n{};\nCOMMIT",
                    numbered_in_turn(&statements).join(";\n")
                )
            })
            .collect()
    });
    BATCHES
        .get(count)
        .or(BATCHES.last())
        .map_or("", String::as_str)
}

#[async_trait::async_trait]
impl CommitBatch<QueuedStart> for SqliteStore {
    async fn commit_batch(&self, batch: &[QueuedStart]) -> StorageResult<()> {
        let mut query = sqlx::query(start_batch_sql(batch.len()));
        for queued in batch {
            query = sql_tasks::bind_start(query, &queued.start, &queued.body)?;
        }
        let mut turn = self.write_turn().await;
        let Some(writer) = turn.whole() else {
            return Err(db_err(sqlx::Error::PoolClosed));
        };
        writer.write_whole(query).await.map_err(db_err)
    }

    async fn commit_one(&self, queued: &QueuedStart) -> StorageResult<()> {
        sql_tasks::write_start(self, &queued.start, &queued.body).await
    }
}

/// SQLite cannot tell other processes about an append: their followers
/// poll.
async fn announce_appends(
    _tx: &mut sqlx::Transaction<'_, Db>,
    _runs: &[&str],
) -> Result<(), sqlx::Error> {
    Ok(())
}

/// See [`announce_appends`].
async fn watch_appends(
    _pool: &sqlx::SqlitePool,
) -> StorageResult<Option<crate::store::AppendWatch>> {
    Ok(None)
}

/// SQLite announces nothing: holders of a token look it up again now and
/// then (see [`watch_revocations`]).
async fn announce_revocation(_pool: &sqlx::SqlitePool) {}

/// No announcements across processes on SQLite.
async fn watch_revocations(
    _pool: &sqlx::SqlitePool,
) -> StorageResult<Option<crate::store::RevocationWatch>> {
    Ok(None)
}

/// Whether one query may hold several statements (see
/// `sql_tasks::START_QUERY`): SQLite runs the statements of one query one after the other.
const SEVERAL_STATEMENTS_A_QUERY: bool = true;

/// A `messages` row's message as JSON text: its body, or for a message
/// a run logged, the message of the event it names (see
/// `migrations/sqlite/0017_messages_from_events.sql`). An event that is gone
/// reads as `null`, which fails to parse: never a message silently missing.
const MESSAGE_BODY: &str = "CASE WHEN messages.event_run_id IS NULL THEN messages.body \
     ELSE COALESCE((SELECT json_extract(e.body, '$.message') FROM run_events e \
     WHERE e.run_id = messages.event_run_id AND e.seq = messages.event_seq), 'null') END";

include!("sql/records.rs");
include!("sql/chats.rs");
include!("sql/inbox.rs");
include!("sql/projects.rs");
include!("sql/files.rs");
include!("sql/runs.rs");
include!("sql/tasks.rs");
include!("sql/users.rs");
include!("sql/webhooks.rs");
include!("sql/memories.rs");
include!("sql/audit.rs");
include!("sql/schedules.rs");
include!("sql/steps.rs");
include!("sql/budgets.rs");
include!("sql/members.rs");
