//! The PostgreSQL backend: many server instances share one database.

use sqlx::Postgres as Db;
use sqlx::postgres::PgPoolOptions;

use crate::error::{StorageError, StorageResult};
use crate::sql::{db_err, migrator};

type DbRow = sqlx::postgres::PgRow;
type SqlStore = PostgresStore;

/// How long a pooled connection may sit idle and still be handed out
/// without a ping.
const IDLE_BEFORE_PING: std::time::Duration = std::time::Duration::from_secs(1);

/// A write's turn, given at once: transactions begin on a pooled
/// connection.
struct WriteTurn;

impl WriteTurn {
    /// PostgreSQL takes a start as one statement, no transaction sent
    /// whole (see `sqlite::Writer::write_whole`).
    fn whole(&mut self) -> Option<&mut Unwritten> {
        None
    }

    async fn begin(
        &mut self,
        pool: &sqlx::PgPool,
    ) -> Result<sqlx::Transaction<'static, Db>, sqlx::Error> {
        pool.begin().await
    }
}

/// What no PostgreSQL write turn has: a transaction sent whole.
enum Unwritten {}

impl Unwritten {
    async fn write_whole(
        &mut self,
        _query: sqlx::query::Query<'_, Db, sqlx::postgres::PgArguments>,
    ) -> Result<(), sqlx::Error> {
        match *self {}
    }
}

/// PostgreSQL writes a start in one statement on any pooled connection,
/// side by side with others: starts are not batched (`None`: the caller
/// writes it alone).
async fn start_in_batch(
    _store: &PostgresStore,
    _start: &crate::model::AgentRunStart,
    _body: &str,
) -> Option<StorageResult<()>> {
    None
}

/// A store in one PostgreSQL database.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: sqlx::Pool<Db>,
    /// Decoded copies of recently read chats.
    message_cache: std::sync::Arc<crate::message_cache::MessageCache>,
    /// Batches concurrent event-log appends into shared transactions.
    writer: crate::group_commit::GroupCommit<crate::group_commit::Append>,
}

impl PostgresStore {
    /// Connects to `url` (`postgres://user@host:port/db`) and applies the
    /// embedded migrations.
    pub async fn connect(url: &str) -> StorageResult<Self> {
        let pool = PgPoolOptions::new()
            .max_connections(16)
            // The pool pings every connection as it comes back, so one
            // handed out again at once is known to answer: pinging it again
            // before each use was one more round trip to the database per
            // call. One that sat idle for a while (the server may have
            // restarted meanwhile) is pinged first, and replaced if it does
            // not answer.
            .test_before_acquire(false)
            .before_acquire(|connection, meta| {
                Box::pin(async move {
                    if meta.idle_for > IDLE_BEFORE_PING {
                        sqlx::Connection::ping(connection).await?;
                    }
                    Ok(true)
                })
            })
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
            include_str!("../migrations/postgres/0006_project_approval_mode.sql"),
            include_str!("../migrations/postgres/0007_webhook_deliveries.sql"),
            include_str!("../migrations/postgres/0008_memories.sql"),
            include_str!("../migrations/postgres/0009_one_run_status.sql"),
            include_str!("../migrations/postgres/0010_chains_tokens_audit.sql"),
            include_str!("../migrations/postgres/0011_inbox.sql"),
            include_str!("../migrations/postgres/0012_schedules.sql"),
            include_str!("../migrations/postgres/0013_budgets.sql"),
            include_str!("../migrations/postgres/0014_run_steps.sql"),
            include_str!("../migrations/postgres/0015_schedule_budgets.sql"),
            include_str!("../migrations/postgres/0016_project_members.sql"),
            include_str!("../migrations/postgres/0017_messages_from_events.sql"),
            include_str!("../migrations/postgres/0018_inbox_strategy.sql"),
        ])
        .run(&pool)
        .await
        .map_err(|e| StorageError::Migration(e.to_string()))?;
        Ok(Self {
            pool,
            message_cache: Default::default(),
            writer: Default::default(),
        })
    }

    /// The connection pool.
    pub fn pool(&self) -> &sqlx::PgPool {
        &self.pool
    }

    /// PostgreSQL locks rows, not the whole database: its writers take no
    /// turns (see `SqliteStore::write_turn`).
    async fn write_turn(&self) -> WriteTurn {
        WriteTurn
    }

    /// Closes the pool.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// The channel on which committed appends name their run (`NOTIFY`), so
/// followers on every instance read a log when it grows instead of polling.
pub const EVENTS_CHANNEL: &str = "agentloop_run_events";

/// Announces the runs whose logs `tx` appends to; PostgreSQL delivers the
/// notifications when (and only if) `tx` commits.
async fn announce_appends(
    tx: &mut sqlx::Transaction<'_, Db>,
    runs: &[&str],
) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT pg_notify($1, run_id) FROM unnest($2::text[]) AS run_id")
        .bind(EVENTS_CHANNEL)
        .bind(runs)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Listens on [`EVENTS_CHANNEL`] with a connection of its own.
async fn watch_appends(pool: &sqlx::PgPool) -> StorageResult<Option<crate::store::AppendWatch>> {
    use futures::StreamExt;
    let mut listener = sqlx::postgres::PgListener::connect_with(pool)
        .await
        .map_err(db_err)?;
    listener.listen(EVENTS_CHANNEL).await.map_err(db_err)?;
    let runs = listener
        .into_stream()
        .map(|notification| notification.map(|n| n.payload().to_owned()).map_err(db_err));
    Ok(Some(runs.boxed()))
}

/// The channel on which revocations of tokens are announced (`NOTIFY`),
/// so open streams on every instance end at once.
pub const REVOCATIONS_CHANNEL: &str = "agentloop_token_revocations";

/// Announces that tokens were revoked. A lost announcement only delays
/// the end of a stream to its next look-up, so a failure is not the
/// revocation's.
async fn announce_revocation(pool: &sqlx::PgPool) {
    let _ = sqlx::query("SELECT pg_notify($1, '')")
        .bind(REVOCATIONS_CHANNEL)
        .execute(pool)
        .await;
}

/// Listens on [`REVOCATIONS_CHANNEL`] with a connection of its own.
async fn watch_revocations(
    pool: &sqlx::PgPool,
) -> StorageResult<Option<crate::store::RevocationWatch>> {
    use futures::StreamExt;
    let mut listener = sqlx::postgres::PgListener::connect_with(pool)
        .await
        .map_err(db_err)?;
    listener.listen(REVOCATIONS_CHANNEL).await.map_err(db_err)?;
    let revoked = listener
        .into_stream()
        .map(|notification| notification.map(|_| ()).map_err(db_err));
    Ok(Some(revoked.boxed()))
}

/// Whether one query may hold several statements (see
/// `sql_tasks::START_QUERY`): PostgreSQL takes one statement a query that has arguments.
const SEVERAL_STATEMENTS_A_QUERY: bool = false;

/// A `messages` row's message as JSON text: its body, or for a message
/// a run logged, the message of the event it names (see
/// `migrations/postgres/0017_messages_from_events.sql`). An event that is gone
/// reads as `null`, which fails to parse: never a message silently missing.
const MESSAGE_BODY: &str = "CASE WHEN messages.event_run_id IS NULL THEN messages.body \
     ELSE COALESCE((SELECT (e.body::json -> 'message')::text FROM run_events e \
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
