//! A backend that serves only chats implements the runtime's store
//! (`RuntimeStore`, its inbox included) and nothing of the server's product: no projects,
//! tasks, users, webhooks or files. The runtime runs chats over it end to
//! end: a turn with a tool call, a checkpoint and its rollback, a person's
//! answer to a suspended run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_runtime::{ChatRuntime, ChatSettings};
use agentloop_storage::model::{
    Attachment, AttachmentMeta, Chat, Checkpoint, LeaseRenewal, Project, RunRecord, RunStatus,
    StoredMessage,
};
use agentloop_storage::{
    AttachmentStore, ChatStore, InboxStore, MemoryStore, ProjectSettingsStore, ProjectStore,
    RunStep, RunStore, RuntimeStore, StepStore, StorageResult,
};
use agentloop_types::{
    Decision, LoopEvent, LoopStatus, Message, Role, TokenTotals, Tool, ToolContext, ToolResult,
    ToolStream, single_result,
};
use async_trait::async_trait;
use serde_json::{Value, json};

use common::{Counter, drain};

/// Chats kept in memory, with no projects: every project's chats inherit
/// the same settings. It delegates to a [`MemoryStore`], whose project rows
/// it fills in itself (the memory backend files chats under projects);
/// the runtime sees none of that.
struct ChatsOnly {
    inner: MemoryStore,
    /// What every project's chats inherit.
    defaults: Value,
}

impl ChatsOnly {
    fn new(defaults: Value) -> Self {
        Self {
            inner: MemoryStore::new(),
            defaults,
        }
    }
}

#[async_trait]
impl ProjectSettingsStore for ChatsOnly {
    async fn project_settings(&self, _project_id: &str) -> StorageResult<Value> {
        Ok(self.defaults.clone())
    }
}

#[async_trait]
impl InboxStore for ChatsOnly {
    async fn enqueue_message(
        &self,
        chat_id: &str,
        message: &Message,
        strategy: agentloop_types::SteerStrategy,
        now: i64,
    ) -> StorageResult<()> {
        self.inner
            .enqueue_message(chat_id, message, strategy, now)
            .await
    }
    async fn queued_messages(
        &self,
        chat_id: &str,
    ) -> StorageResult<Vec<agentloop_storage::model::QueuedMessage>> {
        self.inner.queued_messages(chat_id).await
    }
    async fn mark_delivered(&self, chat_id: &str, ids: &[String], now: i64) -> StorageResult<u64> {
        self.inner.mark_delivered(chat_id, ids, now).await
    }
}

#[async_trait]
impl ChatStore for ChatsOnly {
    async fn create_chat(&self, chat: &Chat) -> StorageResult<()> {
        if self.inner.get_project(&chat.project_id).await.is_err() {
            let row = Project {
                id: chat.project_id.clone(),
                name: chat.project_id.clone(),
                settings: json!({}),
                approval_mode: None,
                created_at: 0,
                updated_at: 0,
            };
            self.inner.create_project(&row).await?;
        }
        self.inner.create_chat(chat).await
    }
    async fn get_chat(&self, id: &str) -> StorageResult<Chat> {
        self.inner.get_chat(id).await
    }
    async fn list_chats(&self, project_id: &str) -> StorageResult<Vec<Chat>> {
        self.inner.list_chats(project_id).await
    }
    async fn list_minion_chats(&self, parent_chat_id: &str) -> StorageResult<Vec<Chat>> {
        self.inner.list_minion_chats(parent_chat_id).await
    }
    async fn update_chat(&self, chat: &Chat) -> StorageResult<()> {
        self.inner.update_chat(chat).await
    }
    async fn add_chat_totals(
        &self,
        chat_id: &str,
        delta: TokenTotals,
        updated_at: i64,
    ) -> StorageResult<TokenTotals> {
        self.inner.add_chat_totals(chat_id, delta, updated_at).await
    }
    async fn delete_chat(&self, id: &str) -> StorageResult<()> {
        self.inner.delete_chat(id).await
    }
    async fn save_message(&self, chat_id: &str, message: &Message) -> StorageResult<u64> {
        self.inner.save_message(chat_id, message).await
    }
    async fn list_messages(&self, chat_id: &str) -> StorageResult<Vec<StoredMessage>> {
        self.inner.list_messages(chat_id).await
    }
    async fn get_message(&self, chat_id: &str, message_id: &str) -> StorageResult<StoredMessage> {
        self.inner.get_message(chat_id, message_id).await
    }
    async fn truncate_messages(&self, chat_id: &str, after_seq: Option<u64>) -> StorageResult<u64> {
        self.inner.truncate_messages(chat_id, after_seq).await
    }
    async fn restore_messages(
        &self,
        chat_id: &str,
        messages: &[StoredMessage],
    ) -> StorageResult<()> {
        self.inner.restore_messages(chat_id, messages).await
    }
    async fn create_checkpoint(&self, checkpoint: &Checkpoint) -> StorageResult<()> {
        self.inner.create_checkpoint(checkpoint).await
    }
    async fn list_checkpoints(&self, chat_id: &str) -> StorageResult<Vec<Checkpoint>> {
        self.inner.list_checkpoints(chat_id).await
    }
    async fn delete_checkpoint(&self, chat_id: &str, name: &str) -> StorageResult<()> {
        self.inner.delete_checkpoint(chat_id, name).await
    }
    async fn rollback_to_checkpoint(&self, chat_id: &str, name: &str) -> StorageResult<Checkpoint> {
        self.inner.rollback_to_checkpoint(chat_id, name).await
    }
}

#[async_trait]
impl StepStore for ChatsOnly {
    async fn keep_step(&self, step: &RunStep, keep: Option<u32>) -> StorageResult<()> {
        self.inner.keep_step(step, keep).await
    }
    async fn update_run_keeping_step(
        &self,
        run: &RunRecord,
        step: &RunStep,
        keep: Option<u32>,
    ) -> StorageResult<()> {
        self.inner.update_run_keeping_step(run, step, keep).await
    }
    async fn list_steps(&self, run_id: &str) -> StorageResult<Vec<RunStep>> {
        self.inner.list_steps(run_id).await
    }
    async fn get_step(&self, run_id: &str, seq: u64) -> StorageResult<RunStep> {
        self.inner.get_step(run_id, seq).await
    }
}

#[async_trait]
impl RunStore for ChatsOnly {
    async fn create_run(&self, run: &RunRecord) -> StorageResult<()> {
        self.inner.create_run(run).await
    }
    async fn get_run(&self, id: &str) -> StorageResult<RunRecord> {
        self.inner.get_run(id).await
    }
    async fn list_runs(&self, chat_id: &str) -> StorageResult<Vec<RunRecord>> {
        self.inner.list_runs(chat_id).await
    }
    async fn list_claimable_runs(&self, now: i64, limit: u32) -> StorageResult<Vec<RunRecord>> {
        self.inner.list_claimable_runs(now, limit).await
    }
    async fn update_run(&self, run: &RunRecord) -> StorageResult<()> {
        self.inner.update_run(run).await
    }
    async fn resume_run(&self, run_id: &str, now: i64) -> StorageResult<bool> {
        self.inner.resume_run(run_id, now).await
    }
    async fn acquire_lease(
        &self,
        run_id: &str,
        owner: &str,
        now: i64,
        expires_at: i64,
    ) -> StorageResult<bool> {
        self.inner
            .acquire_lease(run_id, owner, now, expires_at)
            .await
    }
    async fn renew_leases(
        &self,
        owner: &str,
        run_ids: &[String],
        expires_at: i64,
    ) -> StorageResult<Vec<LeaseRenewal>> {
        self.inner.renew_leases(owner, run_ids, expires_at).await
    }
    async fn release_lease(&self, run_id: &str, owner: &str) -> StorageResult<bool> {
        self.inner.release_lease(run_id, owner).await
    }
    async fn append_events(&self, run_id: &str, events: &[LoopEvent]) -> StorageResult<()> {
        self.inner.append_events(run_id, events).await
    }
    async fn list_events(
        &self,
        run_id: &str,
        after: Option<u64>,
        limit: u32,
    ) -> StorageResult<Vec<LoopEvent>> {
        self.inner.list_events(run_id, after, limit).await
    }
}

#[async_trait]
impl AttachmentStore for ChatsOnly {
    async fn put_attachment(&self, attachment: &Attachment) -> StorageResult<()> {
        self.inner.put_attachment(attachment).await
    }
    async fn get_attachment(&self, id: &str) -> StorageResult<Attachment> {
        self.inner.get_attachment(id).await
    }
    async fn list_attachments(&self, project_id: &str) -> StorageResult<Vec<AttachmentMeta>> {
        self.inner.list_attachments(project_id).await
    }
    async fn delete_attachment(&self, id: &str) -> StorageResult<()> {
        self.inner.delete_attachment(id).await
    }
}

/// The runtime's store, as the runtime takes it: the chat-only backend
/// alone.
fn chats_only(defaults: Value) -> Arc<dyn RuntimeStore> {
    Arc::new(ChatsOnly::new(defaults))
}

struct Ask;

impl Tool for Ask {
    fn name(&self) -> &str {
        "ask"
    }
    fn description(&self) -> &str {
        "Asks the user."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn execute(self: Arc<Self>, _: Value, _: ToolContext) -> ToolStream {
        single_result(async { ToolResult::suspend("What colour?") })
    }
}

#[tokio::test]
async fn a_chat_runs_end_to_end_over_a_store_of_chats_alone() {
    let store = chats_only(json!({"system_prompt": "Be brief.", "model": "default-model"}));
    let counter = Counter::new("count");
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .text("Counting.")
            .tool_call("t1", "count", json!({}))
            .usage(10, 2),
        ScriptedTurn::new().text("Done.").usage(20, 3),
    ]);
    let runtime = ChatRuntime::new(store.clone(), provider.clone())
        .with_tools([counter.clone() as Arc<dyn Tool>]);
    let chat = runtime
        .create_chat("anywhere", "chat", &ChatSettings::default())
        .await
        .unwrap();

    let run = runtime
        .send(&chat.id, Message::user_text("u1", "count"))
        .await
        .unwrap();
    let (events, result) = drain(run).await;
    assert!(matches!(result.status, LoopStatus::Complete { .. }));
    assert_eq!(counter.calls.load(Ordering::SeqCst), 1);
    // The project's settings came from the chat-only store.
    let request = &provider.requests()[0];
    assert_eq!(request.options.model, "default-model");
    assert_eq!(request.options.system_prompt.as_deref(), Some("Be brief."));
    let stored: Vec<Message> = store
        .list_messages(&chat.id)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.message)
        .collect();
    assert_eq!(stored, result.messages);
    assert_eq!(stored.len(), 4);
    assert_eq!(
        store.get_chat(&chat.id).await.unwrap().totals.input_tokens,
        30
    );
    let runs = store.list_runs(&chat.id).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, RunStatus::Completed);
    assert_eq!(runs[0].lease_owner, None);
    let log = store.list_events(&runs[0].id, None, 10_000).await.unwrap();
    assert_eq!(log.len(), events.len(), "every event is in the log");
    assert_eq!(log.last().map(|e| e.kind.name()), Some("finished"));

    // A checkpoint, a turn after it, and the rollback that undoes it.
    runtime.create_checkpoint(&chat.id, "before").await.unwrap();
    let again = ChatRuntime::new(
        store.clone(),
        ScriptedProvider::new([ScriptedTurn::new().text("Again.").usage(1, 1)]),
    );
    let (_, result) = drain(
        again
            .send(&chat.id, Message::user_text("u2", "again"))
            .await
            .unwrap(),
    )
    .await;
    assert!(matches!(result.status, LoopStatus::Complete { .. }));
    assert_eq!(store.list_messages(&chat.id).await.unwrap().len(), 6);
    again.rollback(&chat.id, "before").await.unwrap();
    assert_eq!(store.list_messages(&chat.id).await.unwrap().len(), 4);
}

#[tokio::test]
async fn a_suspended_run_is_answered_over_a_store_of_chats_alone() {
    let store = chats_only(json!({}));
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("q1", "ask", json!({})),
        ScriptedTurn::new().text("Blue it is."),
    ]);
    let runtime =
        ChatRuntime::new(store.clone(), provider.clone()).with_tools([Arc::new(Ask) as _]);
    let chat = runtime
        .create_chat("anywhere", "chat", &ChatSettings::default())
        .await
        .unwrap();
    let (_, result) = drain(
        runtime
            .send(&chat.id, Message::user_text("u1", "pick"))
            .await
            .unwrap(),
    )
    .await;
    assert!(matches!(result.status, LoopStatus::Suspended { .. }));
    assert_eq!(runtime.pending(&chat.id).await.unwrap().len(), 1);

    let decisions = [(
        "q1".to_owned(),
        Decision::Answer {
            text: "blue".into(),
        },
    )]
    .into();
    let (_, result) = drain(runtime.resume(&chat.id, decisions).await.unwrap()).await;
    assert_eq!(result.final_text().as_deref(), Some("Blue it is."));
    let runs = store.list_runs(&chat.id).await.unwrap();
    assert_eq!(runs.len(), 1, "the resumed run goes on in its record");
    assert_eq!(runs[0].status, RunStatus::Completed);
    let last = store.list_messages(&chat.id).await.unwrap();
    assert_eq!(last.last().map(|m| m.message.role), Some(Role::Assistant));
}
