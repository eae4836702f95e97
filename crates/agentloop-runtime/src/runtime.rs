//! [`ChatRuntime`]: sends messages to stored chats through the loop.

use std::sync::Arc;

use agentloop_engine::strategy::NativeStrategy;
use agentloop_engine::{CheckpointedRun, Handoffs, Interrupt, LoopStrategy, RunDeps, RunStream};
use agentloop_storage::model::{
    Chat, Checkpoint, Project, QueuedMessage, RunRecord, RunStatus, now_millis,
};
use agentloop_storage::{RuntimeStore, StepRetention, StorageError, StoreAttachmentLoader};
use agentloop_types::{
    Budget, CancellationToken, DecisionError, Decisions, Hooks, LoopOptions, Message,
    ModelProvider, PendingCall, Role, RunState, SteerStrategy, Tool,
};

use crate::chat_run::ChatRun;
use crate::error::{RuntimeError, RuntimeResult};
use crate::gate::{Gate, GatedTool};
use crate::ids::new_id;
use crate::inbox::{StoreInbox, is_persons};
use crate::log::RunLog;
use crate::persist::Persister;
use crate::settings::{ChatSettings, ProjectSettings, build_loop_options};

/// Default lease of a running run: renewed while events flow.
pub const DEFAULT_LEASE_MS: i64 = 30_000;

/// Runs the loop for stored chats (seed 000's `useChat`, seed 001's
/// `ChatService`): provider, tools and strategy are injected.
#[derive(Clone)]
pub struct ChatRuntime {
    pub(crate) store: Arc<dyn RuntimeStore>,
    provider: Arc<dyn ModelProvider>,
    tools: Vec<Arc<dyn Tool>>,
    strategy: Arc<dyn LoopStrategy>,
    pub(crate) owner: String,
    pub(crate) lease_ms: i64,
    cancel: CancellationToken,
    /// The agents runs hand off between, when they do.
    pub(crate) handoffs: Option<Arc<Handoffs>>,
    /// Lifecycle hooks every run asks.
    hooks: Hooks,
    /// Interrupts the step in flight of this runtime's runs.
    interrupt: Option<Interrupt>,
    /// How many steps each run keeps.
    step_retention: StepRetention,
    /// Reserves each model call's spend of this runtime's runs.
    budget: Option<Arc<dyn Budget>>,
}

impl ChatRuntime {
    /// A runtime over `store` calling `provider`, with no tools and the
    /// native strategy. Any backend's whole store upcasts to the
    /// [`RuntimeStore`] it needs; a backend that
    /// only serves chats implements that alone.
    pub fn new(store: Arc<dyn RuntimeStore>, provider: Arc<dyn ModelProvider>) -> Self {
        Self {
            store,
            provider,
            tools: Vec::new(),
            strategy: Arc::new(NativeStrategy::default()),
            owner: new_id("worker"),
            lease_ms: DEFAULT_LEASE_MS,
            cancel: CancellationToken::new(),
            handoffs: None,
            hooks: Hooks::default(),
            interrupt: None,
            step_retention: StepRetention::default(),
            budget: None,
        }
    }

    /// How many steps each run keeps (all by default; see
    /// [`StepRetention`]): a step is a run's state between two steps,
    /// stored without its messages, which a run can be forked at.
    pub fn with_step_retention(mut self, retention: StepRetention) -> Self {
        self.step_retention = retention;
        self
    }

    /// Reserves each model call of this runtime's runs with `budget`
    /// before it goes out, and settles it after (see [`Budget`]): a
    /// refusal ends the run `limit_exceeded` (limit `budget`).
    pub fn with_budget(mut self, budget: Arc<dyn Budget>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Lifecycle hooks every run asks (see [`agentloop_types::hook`]);
    /// their decisions are stored with each run's state and events, so a
    /// resumed run never asks again for one it has.
    pub fn with_hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// Lets runs hand the conversation between the agents of `handoffs`
    /// (the runtime's provider, options and tools are the root agent's).
    /// A run recovered or resumed goes on with the agent that was
    /// speaking.
    pub fn with_handoffs(mut self, handoffs: Handoffs) -> Self {
        self.handoffs = Some(Arc::new(handoffs));
        self
    }

    /// Adds tools offered to runs.
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Replaces the loop strategy.
    pub fn with_strategy(mut self, strategy: Arc<dyn LoopStrategy>) -> Self {
        self.strategy = strategy;
        self
    }

    /// Sets the lease owner name of this worker and the lease length.
    pub fn with_lease(mut self, owner: impl Into<String>, lease_ms: i64) -> Self {
        self.owner = owner.into();
        self.lease_ms = lease_ms.max(1);
        self
    }

    /// Sets the token that cancels this runtime's runs.
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Sets the signal that interrupts the step this runtime's runs have
    /// in flight, so they go on with the messages of their chat's inbox
    /// (see [`Interrupt`]).
    pub fn with_interrupt(mut self, interrupt: Interrupt) -> Self {
        self.interrupt = Some(interrupt);
        self
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn RuntimeStore> {
        &self.store
    }

    /// Creates a chat in a project with `settings`.
    pub async fn create_chat(
        &self,
        project_id: &str,
        title: &str,
        settings: &ChatSettings,
    ) -> RuntimeResult<Chat> {
        let now = now_millis();
        let chat = Chat {
            id: new_id("chat"),
            project_id: project_id.to_owned(),
            title: title.to_owned(),
            settings: to_value(settings)?,
            totals: Default::default(),
            minion: None,
            created_at: now,
            updated_at: now,
        };
        self.store.create_chat(&chat).await?;
        Ok(chat)
    }

    /// Sends a user message: stores it and starts a run of the loop over
    /// the chat's history. Reading the returned [`ChatRun`] drives the run
    /// and stores what it yields; [`ChatRun::outcome`] reads it to its end.
    pub async fn send(&self, chat_id: &str, user_message: Message) -> RuntimeResult<ChatRun> {
        self.ensure_idle(chat_id).await?;
        self.supersede_interrupted(chat_id).await?;
        self.store.save_message(chat_id, &user_message).await?;
        self.run_history(chat_id).await
    }

    /// Keeps `message` in the chat's inbox for the run going on: the run
    /// takes it at its next step boundary, as a user message after those
    /// that came before it; one that ends first leaves it to the chat's
    /// next run ([`continue_chat`](Self::continue_chat) starts one).
    /// Stored before this returns, so a process that stops in between
    /// loses nothing. Only a person's message (no tool calls or results)
    /// is taken.
    pub async fn enqueue(&self, chat_id: &str, message: Message) -> RuntimeResult<()> {
        if !is_persons(&message) {
            return Err(RuntimeError::UnsupportedInput {
                what: "a message to a run that is not a person's",
            });
        }
        self.store.get_chat(chat_id).await?;
        self.store
            .enqueue_message(chat_id, &message, SteerStrategy::Enqueue, now_millis())
            .await?;
        Ok(())
    }

    /// The messages of the chat's inbox no run took yet, oldest first.
    pub async fn queued(&self, chat_id: &str) -> RuntimeResult<Vec<QueuedMessage>> {
        Ok(self.store.queued_messages(chat_id).await?)
    }

    /// What the chat's suspended run waits for: calls that need approval
    /// and questions, nested runs' included. Empty when it waits for
    /// nothing.
    pub async fn pending(&self, chat_id: &str) -> RuntimeResult<Vec<PendingCall>> {
        match self.suspended_run(chat_id).await? {
            Some((_, state)) => {
                let machine = agentloop_engine::Machine::new(state, LoopOptions::default());
                Ok(machine.pending().to_vec())
            }
            None => Ok(Vec::new()),
        }
    }

    /// Resumes the chat's suspended run in place with a person's
    /// decisions, one per pending call (see [`pending`](Self::pending)):
    /// approved calls run, rejected ones and answers become results. The
    /// decisions are checked before anything is stored or run.
    pub async fn resume(&self, chat_id: &str, decisions: Decisions) -> RuntimeResult<ChatRun> {
        let (run, state) = self.claim_suspended(chat_id).await?;
        Box::pin(
            self.continue_record(run, state, None, |options, state, deps| {
                agentloop_engine::decide(options, state, decisions, deps)
            }),
        )
        .await
    }

    /// Cancels the chat's suspended run: every call it waits on is answered
    /// as cancelled and the run is stored `cancelled`.
    pub async fn cancel_suspended(&self, chat_id: &str) -> RuntimeResult<ChatRun> {
        let (run, state) = self.claim_suspended(chat_id).await?;
        Box::pin(self.continue_record(run, state, None, agentloop_engine::cancel_waiting)).await
    }

    /// Continues the run of `record`, held under this worker's lease, from
    /// `state` in the same record: `start` turns the state into the loop,
    /// whose events continue the record's log.
    pub(crate) async fn continue_record(
        &self,
        mut record: RunRecord,
        state: RunState,
        ending: Option<Arc<dyn crate::ending::RunEnding>>,
        start: impl FnOnce(LoopOptions, RunState, RunDeps) -> Result<RunStream, DecisionError>,
    ) -> RuntimeResult<ChatRun> {
        let chat_id = record.chat_id.clone().unwrap_or_default();
        let chat = self.store.get_chat(&chat_id).await?;
        let options = self.loop_options(&chat).await?;
        let log = RunLog::read(&*self.store, &record.id).await?;
        let gate = Gate::default();
        let context_len = state.messages.len();
        let deps = self.deps(&gate, &chat_id).with_run_id(record.id.clone());
        let stream = start(options, state, deps)
            .map_err(RuntimeError::Decisions)?
            .with_checkpoints();
        record.status = RunStatus::Running;
        record.updated_at = now_millis();
        self.store.update_run(&record).await?;
        let persister = self
            .persister(chat, record, gate, context_len)
            .continuing_at(log.next_seq)
            .with_ending(ending);
        self.start(persister, stream).await
    }

    /// The chat's suspended run and the state it resumes from.
    async fn suspended_run(&self, chat_id: &str) -> RuntimeResult<Option<(RunRecord, RunState)>> {
        let runs = self
            .store
            .list_runs_in(chat_id, &[RunStatus::Suspended])
            .await?;
        let Some(run) = runs.into_iter().next_back() else {
            return Ok(None);
        };
        match run.state.clone() {
            Some(state) => Ok(Some((run, state))),
            None => Err(RuntimeError::CorruptRun {
                run_id: run.id,
                message: "a suspended run without the state it resumes from".to_owned(),
            }),
        }
    }

    /// Takes the chat's suspended run for one resumer: its lease is taken
    /// and the record read again, so two resumers never both go on.
    async fn claim_suspended(&self, chat_id: &str) -> RuntimeResult<(RunRecord, RunState)> {
        let not_suspended = || RuntimeError::NotSuspended {
            chat_id: chat_id.to_owned(),
        };
        let (run, _) = self
            .suspended_run(chat_id)
            .await?
            .ok_or_else(not_suspended)?;
        let now = now_millis();
        if !self
            .store
            .acquire_lease(&run.id, &self.owner, now, now + self.lease_ms)
            .await?
        {
            return Err(RuntimeError::RunInProgress {
                chat_id: chat_id.to_owned(),
                run_id: run.id,
            });
        }
        let run = self.store.get_run(&run.id).await?;
        match (run.status, run.state.clone()) {
            (RunStatus::Suspended, Some(state)) => Ok((run, state)),
            _ => Err(not_suspended()),
        }
    }

    /// Seed 003's resend: drops every message after `message_id` (a user
    /// message) and runs again from there.
    pub async fn resend_from(&self, chat_id: &str, message_id: &str) -> RuntimeResult<ChatRun> {
        let stored = self.store.get_message(chat_id, message_id).await?;
        if stored.message.role != Role::User || stored.message.tool_results().next().is_some() {
            return Err(RuntimeError::NotResendable {
                message_id: message_id.to_owned(),
                reason: "only a user's own message can be resent".to_owned(),
            });
        }
        self.ensure_idle_or_suspended(chat_id, true).await?;
        self.supersede_interrupted(chat_id).await?;
        self.store
            .truncate_messages(chat_id, Some(stored.seq))
            .await?;
        self.run_history(chat_id).await
    }

    /// Continues a chat after [`recover`](Self::recover) (interrupted runs
    /// found on the way are recovered first). An interrupted run of a
    /// built-in strategy continues through
    /// [`agentloop_engine::resume`] from its stored state, in the strategy
    /// and phase it was in; otherwise the chat continues from its last
    /// committed message. `None` when the last message is a finished answer
    /// and there is nothing to continue.
    pub async fn continue_chat(&self, chat_id: &str) -> RuntimeResult<Option<ChatRun>> {
        // Boxed: these steps' futures would otherwise stay inline in this
        // one for as long as the run goes on.
        if let Some(last) = self.store.last_run(chat_id).await?
            && crate::forked::is_unstarted_fork(&last)
        {
            return Box::pin(self.run_fork(&last.id)).await.map(Some);
        }
        Box::pin(self.ensure_idle(chat_id)).await?;
        if let Some(state) = Box::pin(self.resumable_run(chat_id)).await? {
            return Box::pin(self.run_state(chat_id, state)).await.map(Some);
        }
        let messages = self.store.list_messages(chat_id).await?;
        match messages.last() {
            None => return Ok(None),
            Some(last)
                if last.message.role == Role::Assistant
                    && last.message.tool_uses().next().is_none()
                    && self.store.queued_messages(chat_id).await?.is_empty() =>
            {
                return Ok(None);
            }
            Some(_) => {}
        }
        self.run_history(chat_id).await.map(Some)
    }

    /// Creates a checkpoint at the chat's last message with its totals.
    pub async fn create_checkpoint(&self, chat_id: &str, name: &str) -> RuntimeResult<Checkpoint> {
        let chat = self.store.get_chat(chat_id).await?;
        let messages = self.store.list_messages(chat_id).await?;
        let checkpoint = Checkpoint {
            chat_id: chat_id.to_owned(),
            name: name.to_owned(),
            message_seq: messages.last().map(|m| m.seq),
            totals: chat.totals,
            created_at: now_millis(),
        };
        self.store.create_checkpoint(&checkpoint).await?;
        Ok(checkpoint)
    }

    /// The chat's checkpoints, oldest first.
    pub async fn list_checkpoints(&self, chat_id: &str) -> RuntimeResult<Vec<Checkpoint>> {
        Ok(self.store.list_checkpoints(chat_id).await?)
    }

    /// Rolls the chat back to a checkpoint (messages after it, later
    /// checkpoints and the totals since are undone). Not while a run is
    /// going on.
    pub async fn rollback(&self, chat_id: &str, name: &str) -> RuntimeResult<Checkpoint> {
        self.ensure_idle_or_suspended(chat_id, true).await?;
        self.supersede_interrupted(chat_id).await?;
        Ok(self.store.rollback_to_checkpoint(chat_id, name).await?)
    }

    /// Fails when the chat has a live or suspended run; recovers an
    /// interrupted one first.
    pub(crate) async fn ensure_idle(&self, chat_id: &str) -> RuntimeResult<()> {
        self.ensure_idle_or_suspended(chat_id, false).await
    }

    async fn ensure_idle_or_suspended(
        &self,
        chat_id: &str,
        drop_suspended: bool,
    ) -> RuntimeResult<()> {
        let now = now_millis();
        // Finished runs are not read: their stored states hold whole
        // histories, and a long chat has many.
        let open = [RunStatus::Running, RunStatus::Pending, RunStatus::Suspended];
        for mut run in self.store.list_runs_in(chat_id, &open).await? {
            match run.status {
                RunStatus::Running | RunStatus::Pending => {
                    if run.lease_expires_at.is_some_and(|at| at > now) {
                        return Err(RuntimeError::RunInProgress {
                            chat_id: chat_id.to_owned(),
                            run_id: run.id,
                        });
                    }
                    self.recover_run(&run, now).await?;
                }
                RunStatus::Suspended if drop_suspended => {
                    run.status = RunStatus::Cancelled;
                    run.updated_at = now;
                    self.store.update_run(&run).await?;
                }
                RunStatus::Suspended => {
                    return Err(RuntimeError::Suspended {
                        chat_id: chat_id.to_owned(),
                        run_id: run.id,
                    });
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Runs the loop over the chat's stored history as a new run.
    async fn run_history(&self, chat_id: &str) -> RuntimeResult<ChatRun> {
        let record = self.create_run_record(chat_id, None).await?;
        self.run_history_in(record, 0, None).await
    }

    /// Runs the loop over the chat's stored history in the run of
    /// `record`, its events numbered from `next_seq`.
    pub(crate) async fn run_history_in(
        &self,
        record: RunRecord,
        next_seq: u64,
        ending: Option<Arc<dyn crate::ending::RunEnding>>,
    ) -> RuntimeResult<ChatRun> {
        let (chat, options, context) = Box::pin(async {
            let chat_id = record.chat_id.clone().unwrap_or_default();
            let chat = self.store.get_chat(&chat_id).await?;
            let options = self.loop_options(&chat).await?;
            let context: Vec<Message> = self
                .store
                .list_messages(&chat_id)
                .await?
                .into_iter()
                .map(|m| m.message)
                .collect();
            Ok::<_, RuntimeError>((chat, options, context))
        })
        .await?;
        self.run_messages_in(chat, options, context, record, next_seq, ending)
            .await
    }

    /// Runs the loop over `context`, the messages of `chat`, in the run of
    /// `record`, its events numbered from `next_seq`.
    pub(crate) async fn run_messages_in(
        &self,
        chat: Chat,
        options: LoopOptions,
        context: Vec<Message>,
        record: RunRecord,
        next_seq: u64,
        ending: Option<Arc<dyn crate::ending::RunEnding>>,
    ) -> RuntimeResult<ChatRun> {
        let gate = Gate::default();
        let deps = self.deps(&gate, &chat.id).with_run_id(record.id.clone());
        let context_len = context.len();
        let stream = self.strategy.run(options, context, deps).with_checkpoints();
        let persister = self
            .persister(chat, record, gate, context_len)
            .continuing_at(next_seq)
            .with_ending(ending);
        self.start(persister, stream).await
    }

    /// Continues a stored run state through the engine, as a new run record
    /// of the chat, and persists it.
    pub(crate) async fn run_state(&self, chat_id: &str, state: RunState) -> RuntimeResult<ChatRun> {
        let (persister, stream) = Box::pin(async {
            let chat = self.store.get_chat(chat_id).await?;
            let options = self.loop_options(&chat).await?;
            let run = self.create_run_record(chat_id, Some(state.clone())).await?;
            let gate = Gate::default();
            let context_len = state.messages.len();
            let stream = agentloop_engine::resume(options, state, self.deps(&gate, chat_id))
                .with_checkpoints();
            Ok::<_, RuntimeError>((self.persister(chat, run, gate, context_len), stream))
        })
        .await?;
        self.start(persister, stream).await
    }

    /// The loop options of a chat, from its project's and its own settings.
    pub(crate) async fn loop_options(&self, chat: &Chat) -> RuntimeResult<LoopOptions> {
        let settings = self.store.project_settings(&chat.project_id).await?;
        Self::options_in(&chat.project_id, &settings, chat)
    }

    /// The loop options of `chat` in `project`.
    pub(crate) fn options_of(project: &Project, chat: &Chat) -> RuntimeResult<LoopOptions> {
        Self::options_in(&project.id, &project.settings, chat)
    }

    /// The loop options of `chat` in the project `project_id` whose stored
    /// settings are `project_settings`.
    fn options_in(
        project_id: &str,
        project_settings: &serde_json::Value,
        chat: &Chat,
    ) -> RuntimeResult<LoopOptions> {
        Ok(build_loop_options(
            project_id,
            Some(&chat.id),
            &ProjectSettings::from_value(project_id, project_settings)?,
            &ChatSettings::from_value(&chat.id, &chat.settings)?,
        ))
    }

    /// The tools runs are offered, as a machine sees them.
    pub(crate) fn offered_tools(&self) -> Vec<agentloop_engine::OfferedTool> {
        self.tools
            .iter()
            .map(|t| agentloop_engine::OfferedTool::of(t.as_ref()))
            .collect()
    }

    async fn create_run_record(
        &self,
        chat_id: &str,
        state: Option<RunState>,
    ) -> RuntimeResult<RunRecord> {
        let now = now_millis();
        let run = RunRecord {
            id: new_id("run"),
            chat_id: Some(chat_id.to_owned()),
            status: RunStatus::Running,
            state,
            result: None,
            pending_tool_call: None,
            end_reason: None,
            lease_owner: None,
            lease_expires_at: None,
            created_at: now,
            updated_at: now,
        };
        self.store.create_run(&run).await?;
        Ok(run)
    }

    /// What a run of chat `chat_id` calls out to: among it, the chat's
    /// inbox, read at each step boundary.
    fn deps(&self, gate: &Gate, chat_id: &str) -> RunDeps {
        let inbox = StoreInbox {
            store: Arc::clone(&self.store),
            chat_id: chat_id.to_owned(),
        };
        let deps = RunDeps::new(Arc::clone(&self.provider))
            .with_tools(GatedTool::wrap_all(&self.tools, gate))
            .with_cancel(self.cancel.child_token())
            .with_inbox(Arc::new(inbox));
        RunDeps {
            attachments: Some(Arc::new(StoreAttachmentLoader(Arc::clone(&self.store)))),
            // The other agents' tools wait at the same gate as the run's:
            // no call takes effect before its start is stored.
            handoffs: self
                .handoffs
                .as_ref()
                .map(|h| Arc::new(h.map_tools(|tools| GatedTool::wrap_all(tools, gate)))),
            hooks: self.hooks.clone(),
            interrupt: self.interrupt.clone(),
            budget: self.budget.clone(),
            ..deps
        }
    }

    /// The persister of `run`, boxed. Each run's preparation happens in
    /// a future of its own, boxed and dropped before [`drive`](Self::drive)
    /// starts, which holds only this pointer: a server keeps one drive
    /// future per run it executes, for as long as the run goes on.
    pub(crate) fn persister(
        &self,
        chat: Chat,
        run: RunRecord,
        gate: Gate,
        context_len: usize,
    ) -> Box<Persister> {
        Box::new(Persister::new(
            Arc::clone(&self.store),
            chat,
            run,
            gate,
            self.owner.clone(),
            self.lease_ms,
            context_len,
        ))
        .keeping_steps(self.step_retention.keep())
    }

    /// Takes the run's lease and hands its stream to a [`ChatRun`], which
    /// persists each event and checkpoint before the next is read.
    async fn start(
        &self,
        mut persister: Box<Persister>,
        stream: CheckpointedRun,
    ) -> RuntimeResult<ChatRun> {
        if let Err(error) = persister.flush().await {
            persister.abandon(&error).await;
            return Err(error);
        }
        Ok(ChatRun::new(persister, stream))
    }
}

fn to_value<T: serde::Serialize>(value: &T) -> RuntimeResult<serde_json::Value> {
    serde_json::to_value(value).map_err(|e| StorageError::Serialization(e.to_string()).into())
}
