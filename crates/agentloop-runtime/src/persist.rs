//! The driver of a run's [`Lifecycle`]: it feeds the machine each event
//! and checkpoint of the run with the time, and performs what the machine
//! asks, in order, before the stream is polled again (see
//! [`crate::lifecycle`] for what each input asks for): appends to the
//! run's log, its lease, its messages and totals (a child path's go to its
//! minion chat, created on first use), its record, the gate that releases
//! tool calls, and the host's part in its end ([`RunEnding`]). It stops at
//! the first effect that fails.

use std::collections::HashMap;
use std::sync::Arc;

use agentloop_storage::model::{Chat, MinionLink, RunRecord, now_millis};
use agentloop_storage::store::LoggedEvent;
use agentloop_storage::{RuntimeStore, StorageError};
use agentloop_types::{
    EventKind, LoopEvent, LoopResult, MessageCreatedEvent, RunPath, RunState, TokenTotals,
};

use crate::ending::RunEnding;
use crate::error::{RuntimeError, RuntimeResult};
use crate::gate::Gate;
use crate::lifecycle::{Effect, Lifecycle};

/// Persists one run's events.
pub(crate) struct Persister {
    pub(crate) store: Arc<dyn RuntimeStore>,
    pub(crate) chat: Chat,
    pub(crate) gate: Gate,
    pub(crate) owner: String,
    lifecycle: Lifecycle,
    minion_chats: HashMap<RunPath, String>,
    /// The host's part in the run's end, if a host records more.
    ending: Option<Arc<dyn RunEnding>>,
    /// Ids of persons' messages the run took since its state was last
    /// stored: marked delivered in the chat's inbox once a stored state
    /// holds them (see [`crate::inbox`]).
    taken: Vec<String>,
}

impl Persister {
    /// A persister for `run` in `chat`.
    pub(crate) fn new(
        store: Arc<dyn RuntimeStore>,
        chat: Chat,
        run: RunRecord,
        gate: Gate,
        owner: String,
        lease_ms: i64,
        context_len: usize,
    ) -> Self {
        Self {
            store,
            chat,
            gate,
            lifecycle: Lifecycle::new(run, owner.clone(), lease_ms, context_len),
            owner,
            minion_chats: HashMap::new(),
            ending: None,
            taken: Vec::new(),
        }
    }

    /// Numbers events from `next_seq`, continuing the run's log.
    pub(crate) fn continuing_at(mut self: Box<Self>, next_seq: u64) -> Box<Self> {
        self.lifecycle.continuing_at(next_seq);
        self
    }

    /// Keeps the run's latest `keep` steps (`None`: all, `Some(0)`:
    /// none).
    pub(crate) fn keeping_steps(mut self: Box<Self>, keep: Option<u32>) -> Box<Self> {
        self.lifecycle.keeping_steps(keep);
        self
    }

    /// Lets a host take part in the run's end (see
    /// [`Lifecycle::hosted`]).
    pub(crate) fn with_ending(
        mut self: Box<Self>,
        ending: Option<Arc<dyn RunEnding>>,
    ) -> Box<Self> {
        if ending.is_some() {
            self.lifecycle.hosted();
        }
        self.ending = ending;
        self
    }

    /// The run's record as it stands.
    pub(crate) fn run(&self) -> &RunRecord {
        self.lifecycle.record()
    }

    /// Whether the run ended (its terminal event and record are written).
    pub(crate) fn has_ended(&self) -> bool {
        self.lifecycle.ended_with().is_some()
    }

    /// How the run ended, once it has (a suspension included, which its
    /// log does not count as an end).
    pub(crate) fn ended_with(&self) -> Option<&LoopResult> {
        self.lifecycle.ended_with()
    }

    /// Stores the run's state between two steps.
    pub(crate) async fn checkpoint(&mut self, state: RunState) -> RuntimeResult<()> {
        self.lifecycle.checkpoint(state, now_millis());
        self.perform().await?;
        self.mark_taken().await
    }

    /// Marks the inbox messages the stored state now holds delivered. A
    /// stop before this leaves them queued: the run, continued from that
    /// state, finds them in its history and does not take them again.
    async fn mark_taken(&mut self) -> RuntimeResult<()> {
        if self.taken.is_empty() {
            return Ok(());
        }
        let taken = std::mem::take(&mut self.taken);
        self.store
            .mark_delivered(&self.chat.id, &taken, now_millis())
            .await?;
        Ok(())
    }

    /// Handles one event: numbers it, stores it and what it commits, and
    /// returns it as stored (a root `finished` event carries the result
    /// the run ended with, which its host may have decided).
    pub(crate) async fn handle(&mut self, event: LoopEvent) -> RuntimeResult<LoopEvent> {
        if event.path.is_root()
            && let EventKind::MessageCreated(MessageCreatedEvent { message }) = &event.kind
            && crate::inbox::is_persons(message)
        {
            self.taken.push(message.id.clone());
        }
        self.lifecycle.event(event, now_millis());
        self.perform().await?;
        if self.has_ended() {
            self.mark_taken().await?;
        }
        self.lifecycle
            .poll_stored()
            .ok_or_else(|| RuntimeError::CorruptRun {
                run_id: self.run().id.clone(),
                message: "an event was handled but not stored".to_owned(),
            })
    }

    /// Appends the events waiting in the batch and renews the lease when
    /// half spent.
    pub(crate) async fn flush(&mut self) -> RuntimeResult<()> {
        self.lifecycle.append(now_millis());
        self.perform().await
    }

    /// Ends a run whose log already holds its end (`result`), written by
    /// an attempt that stopped before it recorded it.
    pub(crate) async fn finish_logged(&mut self, result: LoopResult) -> RuntimeResult<LoopResult> {
        self.lifecycle.finish_logged(result, now_millis());
        self.perform().await?;
        self.lifecycle
            .ended_with()
            .cloned()
            .ok_or_else(|| RuntimeError::CorruptRun {
                run_id: self.run().id.clone(),
                message: "a logged end was not recorded".to_owned(),
            })
    }

    /// Gives the run's lease up.
    pub(crate) async fn release(&mut self) -> RuntimeResult<()> {
        self.lifecycle.release();
        self.perform().await
    }

    /// Ends a run whose stream stopped without a result, or whose
    /// persistence failed, with one terminal event saying why (see
    /// [`Lifecycle::abandon`]), as far as the store lets it. A run whose
    /// lease was lost is left as it is: it belongs to the worker that
    /// holds it now.
    pub(crate) async fn abandon(&mut self, error: &RuntimeError) {
        if matches!(error, RuntimeError::LeaseLost { .. }) {
            return;
        }
        self.lifecycle.abandon(error.to_string(), now_millis());
        // Each step is tried even when one before it failed: the record
        // says the run failed and the lease is freed whatever the log
        // could take.
        while let Some(effect) = self.lifecycle.poll_effect() {
            let lost = matches!(effect, Effect::TakeLease { .. });
            if let Err(error) = self.perform_one(effect).await
                && lost
                && matches!(error, RuntimeError::LeaseLost { .. })
            {
                return;
            }
        }
    }

    /// Performs every effect the machine asks for, in order; stops at the
    /// first that fails.
    async fn perform(&mut self) -> RuntimeResult<()> {
        while let Some(effect) = self.lifecycle.poll_effect() {
            self.perform_one(effect).await?;
        }
        Ok(())
    }

    async fn perform_one(&mut self, effect: Effect) -> RuntimeResult<()> {
        let run_id = self.run().id.clone();
        let host_error = |message| RuntimeError::Host {
            run_id: run_id.clone(),
            message,
        };
        match effect {
            Effect::Append(events) => self.store.append_events(&run_id, &events).await?,
            Effect::TakeLease { now, expires } => {
                if !self
                    .store
                    .acquire_lease(&run_id, &self.owner, now, expires)
                    .await?
                {
                    return Err(RuntimeError::LeaseLost { run_id });
                }
            }
            Effect::ReleaseLease => {
                self.store.release_lease(&run_id, &self.owner).await?;
            }
            Effect::SaveMessage { path, message, seq } => {
                let chat_id = self.minion_chat(&path).await?;
                let logged = LoggedEvent {
                    run_id: &run_id,
                    seq,
                };
                self.store
                    .save_logged_message(&chat_id, &message, logged)
                    .await?;
            }
            Effect::AddTotals { path, tokens, now } => {
                self.store
                    .add_chat_totals(&self.chat.id, tokens, now)
                    .await?;
                if !path.is_root() {
                    let chat_id = self.minion_chat(&path).await?;
                    self.store.add_chat_totals(&chat_id, tokens, now).await?;
                }
            }
            Effect::StoreRecord(record) => self.store.update_run(&record).await?,
            Effect::StoreRecordKeeping { record, step, keep } => {
                self.store
                    .update_run_keeping_step(&record, &step, keep)
                    .await?;
            }
            Effect::OpenGate(tool_use_id) => self.gate.open(&tool_use_id),
            Effect::HostWaits { pending, fresh } => {
                if let Some(ending) = &self.ending {
                    ending.waits(&pending, fresh).await.map_err(host_error)?;
                }
            }
            Effect::HostDecides(result) => {
                let decided = match &self.ending {
                    Some(ending) => ending.decide(*result).await.map_err(host_error)?,
                    None => crate::lifecycle::unhosted(*result),
                };
                self.lifecycle.decided(decided, now_millis());
            }
            Effect::HostCommits(decided) => {
                if let Some(ending) = &self.ending {
                    ending.commit(&decided).await.map_err(host_error)?;
                }
            }
        }
        Ok(())
    }

    /// The minion chat of a child path, created on first use: linked to the
    /// chat of the parent path and the call that started it.
    async fn minion_chat(&mut self, path: &RunPath) -> RuntimeResult<String> {
        if let Some(id) = self.minion_chats.get(path) {
            return Ok(id.clone());
        }
        let (parent_chat_id, tool_use_id) = match path.0.split_last() {
            Some((last, rest)) if !rest.is_empty() => {
                let parent = Box::pin(self.minion_chat(&RunPath(rest.to_vec()))).await?;
                (parent, last.clone())
            }
            Some((last, _)) => (self.chat.id.clone(), last.clone()),
            None => return Ok(self.chat.id.clone()),
        };
        let id = minion_chat_id(&parent_chat_id, &tool_use_id);
        match self.store.get_chat(&id).await {
            Ok(_) => {}
            Err(StorageError::NotFound { .. }) => {
                let now = now_millis();
                self.store
                    .create_chat(&Chat {
                        id: id.clone(),
                        project_id: self.chat.project_id.clone(),
                        title: format!("minion {tool_use_id}"),
                        settings: agentloop_storage::store::empty_settings(),
                        totals: TokenTotals::default(),
                        minion: Some(MinionLink {
                            parent_chat_id,
                            tool_use_id,
                        }),
                        created_at: now,
                        updated_at: now,
                    })
                    .await?;
            }
            Err(e) => return Err(e.into()),
        }
        self.minion_chats.insert(path.clone(), id.clone());
        Ok(id)
    }
}

/// The id of the minion chat started by call `tool_use_id` in `parent`.
pub fn minion_chat_id(parent_chat_id: &str, tool_use_id: &str) -> String {
    format!("{parent_chat_id}/{tool_use_id}")
}
