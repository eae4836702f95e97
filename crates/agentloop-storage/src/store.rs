//! The storage traits. Each backend implements all of them, in two
//! groups, each a sum implemented automatically:
//!
//! - [`RuntimeStore`], what the runtime runs chats over: chats with their
//!   messages and checkpoints ([`ChatStore`]), runs with their leases and
//!   event logs ([`RunStore`]), the steps kept of runs ([`StepStore`]),
//!   the attachments messages point at ([`AttachmentStore`]) and the
//!   settings chats inherit from their project ([`ProjectSettingsStore`]).
//!   It knows nothing of tasks, agent runs, users or webhooks: a backend
//!   that only serves chats implements these and nothing else.
//! - [`ProductStore`], the server's product: projects ([`ProjectStore`])
//!   and their members ([`MembersStore`](crate::MembersStore)),
//!   their files ([`FileStore`]), tasks and agent runs ([`TaskStore`]),
//!   users ([`UserStore`]), webhook deliveries ([`WebhookStore`]) and the
//!   audit log ([`AuditStore`]).
//!
//! A third, narrow trait stands beside them: [`MemoriesStore`], the
//! memories runs keep from one run to the next (per user, project or
//! agent), which the memory tool reads and writes through
//! [`StoredMemories`](crate::memories::StoredMemories). Another,
//! [`SchedulesStore`], keeps the server's schedules, whose ticks it lets
//! exactly one instance claim.
//!
//! [`Store`] is the sum of all four, what the backends, the server and the
//! CLI hold.

use agentloop_types::{LoopEvent, Message, SteerStrategy, TokenTotals};
use async_trait::async_trait;
use serde_json::Value;

use crate::error::StorageResult;
use crate::model::{
    AgentRun, AgentRunDecision, AgentRunStart, AgentRunStatus, Attachment, AttachmentMeta,
    AuditEntry, AuditFilter, ChainEnd, Chat, Checkpoint, Conversation, EndReason, FileRecord,
    LeaseRenewal, MemoryRecord, MemoryScope, Project, QueuedMessage, RunRecord, RunStatus,
    StoredMessage, Task, User, UserToken, WebhookDelivery,
};
use crate::schedules::SchedulesStore;
use crate::steps::StepStore;

/// Projects. Deleting a project deletes everything it owns.
#[async_trait]
pub trait ProjectStore: Send + Sync {
    /// Creates a project; fails with `AlreadyExists` if the id is taken.
    async fn create_project(&self, project: &Project) -> StorageResult<()>;
    /// Reads a project.
    async fn get_project(&self, id: &str) -> StorageResult<Project>;
    /// All projects, oldest first.
    async fn list_projects(&self) -> StorageResult<Vec<Project>>;
    /// Replaces a project's name, settings, approval mode and `updated_at`.
    async fn update_project(&self, project: &Project) -> StorageResult<()>;
    /// Deletes a project with its chats, attachments, files, runs and tasks.
    async fn delete_project(&self, id: &str) -> StorageResult<()>;
    /// Creates a project that owns `folder` (a normalised absolute path
    /// without a trailing separator). In one transaction, no two projects'
    /// folders may be equal or lie one inside the other: such a folder
    /// fails with `FolderTaken`. The folder is freed when the project is
    /// deleted.
    async fn create_project_in_folder(&self, project: &Project, folder: &str) -> StorageResult<()>;
}

/// Whether two normalised absolute folders are equal or nested.
pub fn folders_overlap(a: &str, b: &str) -> bool {
    fn inside(inner: &str, outer: &str) -> bool {
        let outer = outer.trim_end_matches('/');
        inner
            .strip_prefix(outer)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    }
    inside(a, b) || inside(b, a)
}

/// The event a run logged a message with: its `message_created`, event
/// `seq` of run `run_id`'s log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoggedEvent<'a> {
    /// The run whose log holds the event.
    pub run_id: &'a str,
    /// The event's seq in that log.
    pub seq: u64,
}

/// Chats (minion chats included), their messages and checkpoints.
#[async_trait]
pub trait ChatStore: Send + Sync {
    /// Creates a chat. A minion chat's parent must exist in the same project.
    async fn create_chat(&self, chat: &Chat) -> StorageResult<()>;
    /// Reads a chat.
    async fn get_chat(&self, id: &str) -> StorageResult<Chat>;
    /// Every chat of a project, minion chats included, oldest first.
    async fn list_chats(&self, project_id: &str) -> StorageResult<Vec<Chat>>;
    /// The minion chats started from a chat, oldest first.
    async fn list_minion_chats(&self, parent_chat_id: &str) -> StorageResult<Vec<Chat>>;
    /// Replaces a chat's title, settings, totals and `updated_at`.
    async fn update_chat(&self, chat: &Chat) -> StorageResult<()>;
    /// Adds `delta` to a chat's totals atomically (concurrent callers lose
    /// nothing), sets `updated_at`, and returns the new totals.
    async fn add_chat_totals(
        &self,
        chat_id: &str,
        delta: TokenTotals,
        updated_at: i64,
    ) -> StorageResult<TokenTotals>;
    /// Deletes a chat with its messages, checkpoints, attachments, runs and
    /// (recursively) minion chats.
    async fn delete_chat(&self, id: &str) -> StorageResult<()>;

    /// Saves a message: a new id is appended with the next seq; a known id
    /// (a pending tool-result message becoming final) is replaced in place.
    /// Returns the message's seq.
    async fn save_message(&self, chat_id: &str, message: &Message) -> StorageResult<u64>;
    /// Saves a message a run logged, as [`save_message`](Self::save_message)
    /// does. `logged` is its `message_created` event, which must be stored
    /// already: a backend may keep the message only there (the SQL ones
    /// do), so a run's message is stored once.
    async fn save_logged_message(
        &self,
        chat_id: &str,
        message: &Message,
        _logged: LoggedEvent<'_>,
    ) -> StorageResult<u64> {
        self.save_message(chat_id, message).await
    }
    /// A chat's messages in seq order.
    async fn list_messages(&self, chat_id: &str) -> StorageResult<Vec<StoredMessage>>;
    /// One message by id.
    async fn get_message(&self, chat_id: &str, message_id: &str) -> StorageResult<StoredMessage>;
    /// Deletes the messages after `seq` (all of them for `None`); returns how
    /// many were deleted.
    async fn truncate_messages(&self, chat_id: &str, after_seq: Option<u64>) -> StorageResult<u64>;
    /// Inserts messages with the given seqs into a chat that has none
    /// (import); later appends continue after the highest seq.
    async fn restore_messages(
        &self,
        chat_id: &str,
        messages: &[StoredMessage],
    ) -> StorageResult<()>;

    /// Creates a checkpoint; fails with `AlreadyExists` if the chat has one
    /// with that name.
    async fn create_checkpoint(&self, checkpoint: &Checkpoint) -> StorageResult<()>;
    /// A chat's checkpoints, oldest first.
    async fn list_checkpoints(&self, chat_id: &str) -> StorageResult<Vec<Checkpoint>>;
    /// Deletes a checkpoint.
    async fn delete_checkpoint(&self, chat_id: &str, name: &str) -> StorageResult<()>;
    /// Rolls a chat back to a checkpoint, atomically: deletes the messages
    /// after it and the checkpoints that point past it, and restores the
    /// chat's totals. Returns the checkpoint.
    async fn rollback_to_checkpoint(&self, chat_id: &str, name: &str) -> StorageResult<Checkpoint>;
}

/// Attachment bytes and metadata.
#[async_trait]
pub trait AttachmentStore: Send + Sync {
    /// Stores an attachment (`meta.size` is taken from the data); fails with
    /// `AlreadyExists` if the id is taken.
    async fn put_attachment(&self, attachment: &Attachment) -> StorageResult<()>;
    /// Reads an attachment with its bytes.
    async fn get_attachment(&self, id: &str) -> StorageResult<Attachment>;
    /// A project's attachments (metadata only), oldest first.
    async fn list_attachments(&self, project_id: &str) -> StorageResult<Vec<AttachmentMeta>>;
    /// Deletes an attachment.
    async fn delete_attachment(&self, id: &str) -> StorageResult<()>;
}

/// Per-project file trees, as flat records keyed by normalised path. The
/// [`ProjectFiles`](crate::files::ProjectFiles) adapter turns them into a
/// [`Vfs`](agentloop_types::Vfs).
#[async_trait]
pub trait FileStore: Send + Sync {
    /// The entry at a normalised path.
    async fn get_file(&self, project_id: &str, path: &str) -> StorageResult<Option<FileRecord>>;
    /// Creates or replaces the entry at `record.path`.
    async fn put_file(&self, project_id: &str, record: &FileRecord) -> StorageResult<()>;
    /// Entries strictly below a directory (`/` for all), sorted by path.
    async fn list_files(&self, project_id: &str, under: &str) -> StorageResult<Vec<FileRecord>>;
    /// Deletes an entry and everything below it; returns how many went.
    async fn delete_file_tree(&self, project_id: &str, path: &str) -> StorageResult<u64>;
    /// Moves an entry and everything below it from `from` to `to`,
    /// atomically.
    async fn rename_file_tree(&self, project_id: &str, from: &str, to: &str) -> StorageResult<()>;
}

/// Ids of runs whose event logs grew, each announced after its append
/// committed, from every process sharing the database. Announcements may
/// be lost (a reconnect), so a reader still reads the log now and then.
pub type AppendWatch = futures::stream::BoxStream<'static, StorageResult<String>>;

/// One item per revocation announced (see
/// [`UserStore::watch_revocations`]); which tokens is not said, so a
/// holder looks its own up again. Announcements may be lost (a
/// reconnect): holders still look now and then.
pub type RevocationWatch = futures::stream::BoxStream<'static, StorageResult<()>>;

/// Loop runs with their lease, and each run's append-only event log.
#[async_trait]
pub trait RunStore: Send + Sync {
    /// Creates a run record.
    async fn create_run(&self, run: &RunRecord) -> StorageResult<()>;
    /// Reads a run record.
    async fn get_run(&self, id: &str) -> StorageResult<RunRecord>;
    /// The runs of a chat, oldest first.
    async fn list_runs(&self, chat_id: &str) -> StorageResult<Vec<RunRecord>>;
    /// The runs of a chat in one of `statuses`, oldest first. Backends
    /// override it so a chat with many finished runs is not read whole.
    async fn list_runs_in(
        &self,
        chat_id: &str,
        statuses: &[RunStatus],
    ) -> StorageResult<Vec<RunRecord>> {
        let mut runs = self.list_runs(chat_id).await?;
        runs.retain(|run| statuses.contains(&run.status));
        Ok(runs)
    }
    /// The chat's newest run (the last of [`list_runs`](Self::list_runs)).
    async fn last_run(&self, chat_id: &str) -> StorageResult<Option<RunRecord>> {
        Ok(self.list_runs(chat_id).await?.pop())
    }
    /// Runs a worker may take over: pending or running, with no lease or a
    /// lease expired at `now`; oldest first, at most `limit`.
    async fn list_claimable_runs(&self, now: i64, limit: u32) -> StorageResult<Vec<RunRecord>>;
    /// Replaces status, state, result, pending tool call, end reason and
    /// `updated_at` (the lease is left alone).
    async fn update_run(&self, run: &RunRecord) -> StorageResult<()>;
    /// Moves a `suspended` run back to `running` (claimable again) at
    /// `now`, in one conditional update: whether it did, so that of two
    /// wakes racing, one wins.
    async fn resume_run(&self, run_id: &str, now: i64) -> StorageResult<bool>;
    /// Takes or renews the lease for `owner` until `expires_at` if it is
    /// free, held by `owner`, or expired at `now`. Returns whether it did.
    async fn acquire_lease(
        &self,
        run_id: &str,
        owner: &str,
        now: i64,
        expires_at: i64,
    ) -> StorageResult<bool>;
    /// Renews, in one statement per batch, the leases `owner` holds on
    /// `run_ids` until `expires_at`: one [`LeaseRenewal`] per id, in the
    /// order given. A lease is renewed only while `owner` holds it (expired
    /// or not, as long as nobody took it); a released or taken lease is
    /// [`Lost`](LeaseRenewal::Lost), never taken back. One instance's
    /// heartbeat renews all the runs it executes with this.
    async fn renew_leases(
        &self,
        owner: &str,
        run_ids: &[String],
        expires_at: i64,
    ) -> StorageResult<Vec<LeaseRenewal>>;
    /// Releases the lease if `owner` holds it. Returns whether it did.
    async fn release_lease(&self, run_id: &str, owner: &str) -> StorageResult<bool>;
    /// Appends events to a run's log; each `seq` must be new for the run
    /// (`AlreadyExists` otherwise, and nothing is appended).
    async fn append_events(&self, run_id: &str, events: &[LoopEvent]) -> StorageResult<()>;
    /// Events with `seq > after` (all for `None`), in seq order, at most
    /// `limit`.
    async fn list_events(
        &self,
        run_id: &str,
        after: Option<u64>,
        limit: u32,
    ) -> StorageResult<Vec<LoopEvent>>;
    /// Announcements of committed appends ([`AppendWatch`]), or `None`
    /// when the backend cannot make them and readers of a log another
    /// process writes must poll.
    async fn watch_appends(&self) -> StorageResult<Option<AppendWatch>> {
        Ok(None)
    }
}

/// Tasks, agent runs and conversations (seed 004).
#[async_trait]
pub trait TaskStore: Send + Sync {
    /// Creates a task.
    async fn create_task(&self, task: &Task) -> StorageResult<()>;
    /// Reads a task.
    async fn get_task(&self, id: &str) -> StorageResult<Task>;
    /// Deletes a task with its agent runs (their records, event logs and
    /// decisions) and its conversations with their chats. Fails with
    /// `ActiveAgentRunExists`, deleting nothing, while one of its agent runs
    /// is running or waiting.
    async fn delete_task(&self, id: &str) -> StorageResult<()>;
    /// A project's tasks, oldest first.
    async fn list_tasks(&self, project_id: &str) -> StorageResult<Vec<Task>>;
    /// Sets `workflow_complete`. Setting it to true also force-completes
    /// every running or waiting agent run of the task (the recovery path):
    /// each ends `completed` with the reason
    /// [`EndReason::workflow_complete`]; those are returned.
    async fn set_workflow_complete(
        &self,
        task_id: &str,
        complete: bool,
        now: i64,
    ) -> StorageResult<Vec<AgentRun>>;
    /// Records that the task's current chain ended at a bound.
    async fn end_task_chain(&self, task_id: &str, end: &ChainEnd) -> StorageResult<()>;
    /// Creates an agent run. A running one fails with
    /// `ActiveAgentRunExists` when the task already has one running or
    /// waiting; the database enforces this.
    async fn create_agent_run(&self, run: &AgentRun) -> StorageResult<()>;
    /// Starts an agent run in one write: the agent run, its chat with the
    /// first message, its conversation and its run record are all stored,
    /// or (on any error) none is. Fails with `ActiveAgentRunExists` when
    /// the task already has a running or waiting agent run.
    async fn start_agent_run(&self, start: &AgentRunStart) -> StorageResult<()>;
    /// Reads an agent run.
    async fn get_agent_run(&self, id: &str) -> StorageResult<AgentRun>;
    /// A task's agent runs, oldest first.
    async fn list_agent_runs(&self, task_id: &str) -> StorageResult<Vec<AgentRun>>;
    /// The task's running or waiting agent run, if any.
    async fn active_agent_run(&self, task_id: &str) -> StorageResult<Option<AgentRun>>;
    /// Every running agent run, of all tasks, oldest first (for recovery
    /// when a server starts).
    async fn list_active_agent_runs(&self) -> StorageResult<Vec<AgentRun>>;
    /// The status of each agent run of `ids`, in the order given (`None`
    /// for one that does not exist), read in one statement per batch: how
    /// a server's heartbeat learns which of the runs it executes a person
    /// ended elsewhere.
    async fn agent_run_statuses(
        &self,
        ids: &[String],
    ) -> StorageResult<Vec<Option<AgentRunStatus>>>;
    /// A person's end of an agent run (a cancel): `status` at
    /// `completed_at` if it is still running or waiting, in one
    /// conditional update, so a run that ended meanwhile keeps its end.
    /// The agent run keeps this end whatever its record does next (see
    /// [`AgentRunStatus`]). Returns whether it did; `status` must not be
    /// `running` or `waiting`. Every other move of an agent run's status
    /// is its record's.
    async fn finish_agent_run(
        &self,
        id: &str,
        status: AgentRunStatus,
        completed_at: i64,
        reason: Option<&EndReason>,
    ) -> StorageResult<bool>;
    /// Records a decision on a call a waiting agent run waits on; `false`
    /// (and nothing stored) when that call already has one.
    async fn add_agent_run_decision(
        &self,
        agent_run_id: &str,
        decision: &AgentRunDecision,
    ) -> StorageResult<bool>;
    /// An agent run's recorded decisions, in the order they were made.
    async fn list_agent_run_decisions(
        &self,
        agent_run_id: &str,
    ) -> StorageResult<Vec<AgentRunDecision>>;
    /// Forgets an agent run's decisions (they were used).
    async fn clear_agent_run_decisions(&self, agent_run_id: &str) -> StorageResult<()>;
    /// Links an agent run to its conversation.
    async fn link_conversation(
        &self,
        agent_run_id: &str,
        conversation_id: &str,
    ) -> StorageResult<()>;
    /// Creates a conversation.
    async fn create_conversation(&self, conversation: &Conversation) -> StorageResult<()>;
    /// Reads a conversation.
    async fn get_conversation(&self, id: &str) -> StorageResult<Conversation>;
    /// A task's conversations, oldest first.
    async fn list_conversations(&self, task_id: &str) -> StorageResult<Vec<Conversation>>;
    /// Records the session id of a conversation.
    async fn set_conversation_session(&self, id: &str, session_id: &str) -> StorageResult<()>;
}

/// Users and the hashes of their bearer tokens. Users stand outside
/// projects: they are neither listed with nor exported with any project.
#[async_trait]
pub trait UserStore: Send + Sync {
    /// Creates a user; fails with `AlreadyExists` if the id is taken.
    async fn create_user(&self, user: &User) -> StorageResult<()>;
    /// Reads a user.
    async fn get_user(&self, id: &str) -> StorageResult<User>;
    /// All users, oldest first (ties by id).
    async fn list_users(&self) -> StorageResult<Vec<User>>;
    /// Adds a token hash to a user. Fails with `AlreadyExists` (kind
    /// `token`) if the hash is already stored, for this user or another,
    /// and with `Invalid` if the user does not exist.
    async fn add_token(&self, token: &UserToken) -> StorageResult<()>;
    /// The user a token hash belongs to; `NotFound` (kind `token`) for an
    /// unknown or revoked hash.
    async fn find_user_by_token(&self, token_hash: &str) -> StorageResult<User>;
    /// Removes a token hash; `NotFound` (kind `token`) if it is not stored.
    async fn revoke_token(&self, token_hash: &str) -> StorageResult<()>;
    /// The stored token of a hash with its user (expired ones included:
    /// the caller compares [`UserToken::expires_at`] with its clock);
    /// `NotFound` (kind `token`) for an unknown or revoked hash.
    async fn find_token(&self, token_hash: &str) -> StorageResult<(User, UserToken)>;
    /// A user's tokens, oldest first.
    async fn list_tokens(&self, user_id: &str) -> StorageResult<Vec<UserToken>>;
    /// Removes every token of a user; returns how many there were.
    async fn revoke_user_tokens(&self, user_id: &str) -> StorageResult<u64>;
    /// Deletes a user with its tokens; `NotFound` (kind `user`) if there is
    /// none.
    async fn delete_user(&self, id: &str) -> StorageResult<()>;
    /// Announcements that tokens were revoked (or their user deleted), by
    /// any process sharing the database, each after the revocation
    /// committed ([`RevocationWatch`]); `None` when the backend cannot
    /// make them and holders of a token must look it up again now and
    /// then.
    async fn watch_revocations(&self) -> StorageResult<Option<RevocationWatch>> {
        Ok(None)
    }
}

/// The webhook delivery log of each project: its last
/// [`WEBHOOK_DELIVERIES_KEPT`] deliveries, deleted with the project.
#[async_trait]
pub trait WebhookStore: Send + Sync {
    /// Stores a delivery as it stands now (created, or replacing the
    /// stored one of its id), dropping the project's deliveries beyond the
    /// newest [`WEBHOOK_DELIVERIES_KEPT`]. `Invalid` if the project does
    /// not exist.
    async fn save_webhook_delivery(&self, delivery: &WebhookDelivery) -> StorageResult<()>;
    /// The project's newest `limit` deliveries, oldest first (by creation
    /// time, then id).
    async fn list_webhook_deliveries(
        &self,
        project_id: &str,
        limit: u32,
    ) -> StorageResult<Vec<WebhookDelivery>>;
}

/// The server's audit log: append-only, kept apart from projects (an
/// entry outlives the project, task or user it names).
#[async_trait]
pub trait AuditStore: Send + Sync {
    /// Appends an entry; `AlreadyExists` (kind `audit entry`) if its id is
    /// taken.
    async fn append_audit(&self, entry: &AuditEntry) -> StorageResult<()>;
    /// The newest `filter.limit` entries `filter` admits, oldest first (by
    /// time, then id).
    async fn list_audit(&self, filter: &AuditFilter) -> StorageResult<Vec<AuditEntry>>;
}

/// Deliveries a project's log keeps.
pub const WEBHOOK_DELIVERIES_KEPT: u32 = 100;

/// Memories kept across runs, each under a path of its scope. A memory
/// whose `expires_at` is at or before the `now` a read is given is not
/// read (it is gone for the memory tool), though [`get_memory`]
/// (by id, for a person) still finds it until it is deleted.
///
/// [`get_memory`]: MemoriesStore::get_memory
#[async_trait]
pub trait MemoriesStore: Send + Sync {
    /// Creates the memory at `memory.scope` and `memory.path`, or replaces
    /// the one there: a replaced memory keeps its id and `created_at` and
    /// takes the rest (an expired one is replaced whole). Returns the
    /// memory as stored.
    async fn save_memory(&self, memory: &MemoryRecord) -> StorageResult<MemoryRecord>;
    /// A memory by id, expired or not; `NotFound` (kind `memory`).
    async fn get_memory(&self, id: &str) -> StorageResult<MemoryRecord>;
    /// The live memory at `path` of `scope`, if any.
    async fn find_memory(
        &self,
        scope: &MemoryScope,
        path: &str,
        now: i64,
    ) -> StorageResult<Option<MemoryRecord>>;
    /// The live memories of `scope` strictly below the folder `under` (`/`
    /// for all), sorted by path.
    async fn list_memories(
        &self,
        scope: &MemoryScope,
        under: &str,
        now: i64,
    ) -> StorageResult<Vec<MemoryRecord>>;
    /// The live memories of every one of `scopes`, those of the first
    /// scope first, each scope's sorted by path: what a recall ranks.
    async fn recall_memories(
        &self,
        scopes: &[MemoryScope],
        now: i64,
    ) -> StorageResult<Vec<MemoryRecord>> {
        let mut all = Vec::new();
        for scope in scopes {
            all.extend(self.list_memories(scope, "/", now).await?);
        }
        Ok(all)
    }
    /// Deletes a memory by id; `NotFound` (kind `memory`).
    async fn delete_memory(&self, id: &str) -> StorageResult<()>;
    /// Deletes the memory at `path` of `scope` and every memory below it;
    /// returns how many went (expired ones included).
    async fn delete_memory_tree(&self, scope: &MemoryScope, path: &str) -> StorageResult<u64>;
    /// Moves the memory at `from` and every memory below it to `to`,
    /// atomically, setting `updated_at` to `now`; `AlreadyExists` (kind
    /// `memory`, nothing moved) when a path it would take is used.
    async fn move_memory_tree(
        &self,
        scope: &MemoryScope,
        from: &str,
        to: &str,
        now: i64,
    ) -> StorageResult<()>;
}

/// The settings a project's chats inherit, read by the runtime to build a
/// run's options. A backend without projects answers every project with
/// its defaults (an empty object).
#[async_trait]
pub trait ProjectSettingsStore: Send + Sync {
    /// The stored settings object of project `project_id`.
    async fn project_settings(&self, project_id: &str) -> StorageResult<Value>;
}

/// Messages sent to a chat's run while it goes on, kept from their
/// arrival until a run's stored state holds them (see
/// [`agentloop_types::Inbox`]).
#[async_trait]
pub trait InboxStore: Send + Sync {
    /// Keeps `message`, sent with `strategy`, for the chat's run, after
    /// those waiting. An id the chat's inbox already holds is refused
    /// (`AlreadyExists`).
    async fn enqueue_message(
        &self,
        chat_id: &str,
        message: &Message,
        strategy: SteerStrategy,
        now: i64,
    ) -> StorageResult<()>;
    /// The chat's messages not yet delivered, oldest first.
    async fn queued_messages(&self, chat_id: &str) -> StorageResult<Vec<QueuedMessage>>;
    /// Marks those of `ids` still waiting in the chat's inbox delivered;
    /// returns how many were.
    async fn mark_delivered(&self, chat_id: &str, ids: &[String], now: i64) -> StorageResult<u64>;
}

/// What the runtime runs chats over: chats, messages and checkpoints,
/// messages waiting for a run, runs with their leases, event logs and
/// kept steps, attachments, and projects' settings. Nothing of the server's product
/// ([`ProductStore`]).
pub trait RuntimeStore:
    ChatStore + InboxStore + RunStore + StepStore + AttachmentStore + ProjectSettingsStore
{
}

impl<T> RuntimeStore for T where
    T: ChatStore
        + InboxStore
        + RunStore
        + StepStore
        + AttachmentStore
        + ProjectSettingsStore
        + ?Sized
{
}

/// The server's product: projects with their members and files, tasks with
/// their agent runs and conversations, users, webhook deliveries, the audit log.
pub trait ProductStore:
    ProjectStore + crate::MembersStore + FileStore + TaskStore + UserStore + WebhookStore + AuditStore
{
}

impl<T> ProductStore for T where
    T: ProjectStore
        + crate::MembersStore
        + FileStore
        + TaskStore
        + UserStore
        + WebhookStore
        + AuditStore
        + ?Sized
{
}

/// Everything a backend stores: the runtime's part, the product, the
/// memories, the schedules and the budgets.
pub trait Store:
    RuntimeStore + ProductStore + MemoriesStore + SchedulesStore + crate::BudgetsStore
{
}

impl<T> Store for T where
    T: RuntimeStore + ProductStore + MemoriesStore + SchedulesStore + crate::BudgetsStore + ?Sized
{
}

/// Serialises a JSON value for a text column.
pub(crate) fn json_text<T: serde::Serialize>(value: &T) -> StorageResult<String> {
    Ok(serde_json::to_string(value)?)
}

/// Parses a text column holding JSON.
pub(crate) fn from_json_text<T: serde::de::DeserializeOwned>(text: &str) -> StorageResult<T> {
    Ok(serde_json::from_str(text)?)
}

/// An empty settings object.
pub fn empty_settings() -> Value {
    Value::Object(serde_json::Map::new())
}
