//! The consumer of one run: persists what the loop yields, event by event,
//! under the run's lease, and writes the run's one end.
//!
//! Order of writes per event (each awaited before the stream is polled
//! again):
//! - every event is numbered to continue the run's log and goes to it
//!   (batched; the batch is written before any commit point below);
//! - `message_created` → the lease is checked (a worker that lost it stops
//!   before committing anything), then the message is saved (root: the
//!   chat; a child path: that path's minion chat, created on first use);
//! - `tokens_consumed` → added to the chat's totals (and the minion chat's);
//! - a checkpoint (the run's [`RunState`] between two steps, written by the
//!   built-in strategies before the step's I/O) → the log is written, then
//!   the state is stored with the run: what recovery resumes from. For a
//!   strategy that writes no checkpoints, `pending_tool_result` (root)
//!   stores the tool-call intent instead: a state with phase `run_tools`;
//! - `tool_start` → the log holding it is written, then the call is
//!   released ([`Gate`]);
//! - the root `finished` → the run ends ([`Persister::finish`]): the host
//!   decides the result, the log with the terminal event is written, then
//!   the record, then the host's own record (see [`crate::ending`]).
//!
//! Every other event waits in the log batch.

use agentloop_types::ContextCompactedEvent;
use agentloop_types::{
    AgentCompletionEvent, AgentErrorEvent, AgentObserveEvent, AgentReasonEvent,
    AgentRequestInputEvent, AgentStartEvent, AgentToolCompleteEvent, AgentToolStartEvent,
    AgentTurnStartEvent, FinishedEvent, MessageCreatedEvent, PendingToolResultEvent,
    StreamingChunkEvent, StreamingEndEvent, StreamingStartEvent, TokensConsumedEvent,
    ToolBlockUpdateEvent, ToolEndEvent, ToolStartEvent,
};
use std::collections::HashMap;
use std::sync::Arc;

use agentloop_storage::model::{Chat, MinionLink, RunRecord, RunStatus, now_millis};
use agentloop_storage::{RuntimeStore, StorageError};
use agentloop_types::{
    EventKind, LoopEvent, LoopResult, LoopStatus, Message, Role, RunPath, RunPhase, RunState,
    TokenTotals,
};

use crate::ending::{Decided, RunEnding};
use crate::error::{RuntimeError, RuntimeResult};
use crate::gate::Gate;

/// Events buffered before the log is written regardless of commit points.
/// Small: a slowly streaming run holds its buffer (hundreds of bytes an
/// event) between writes, and concurrent writes are committed together
/// anyway.
const LOG_BATCH: usize = 8;

/// Persists one run's events.
pub(crate) struct Persister {
    pub(crate) store: Arc<dyn RuntimeStore>,
    pub(crate) chat: Chat,
    pub(crate) run: RunRecord,
    pub(crate) gate: Gate,
    pub(crate) owner: String,
    pub(crate) lease_ms: i64,
    /// Messages of the context the run started from.
    pub(crate) context_len: usize,
    log: Vec<LoopEvent>,
    minion_chats: HashMap<RunPath, String>,
    last_assistant: Option<Message>,
    totals: TokenTotals,
    result: Option<LoopResult>,
    /// Whether the run writes checkpoints.
    checkpointed: bool,
    /// The seq the next event gets: the log continues across attempts.
    next_seq: u64,
    /// The host's part in the run's end, if a host records more.
    ending: Option<Arc<dyn RunEnding>>,
    /// Events buffered before the log is written.
    log_batch: usize,
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
            run,
            gate,
            owner,
            lease_ms,
            context_len,
            log: Vec::new(),
            minion_chats: HashMap::new(),
            last_assistant: None,
            totals: TokenTotals::default(),
            result: None,
            checkpointed: false,
            next_seq: 0,
            ending: None,
            log_batch: LOG_BATCH,
        }
    }

    /// Numbers events from `next_seq`, continuing the run's log.
    pub(crate) fn continuing_at(mut self: Box<Self>, next_seq: u64) -> Box<Self> {
        self.next_seq = next_seq;
        self
    }

    /// Lets a host take part in the run's end. A hosted run's log is
    /// written event by event: its host's followers (other instances
    /// included) read the log, so each event is durable before it is
    /// yielded. (Concurrent runs' appends are committed together by the
    /// store.)
    pub(crate) fn with_ending(
        mut self: Box<Self>,
        ending: Option<Arc<dyn RunEnding>>,
    ) -> Box<Self> {
        if ending.is_some() {
            self.log_batch = 1;
        }
        self.ending = ending;
        self
    }

    /// Whether the run ended (its terminal event and record are written).
    pub(crate) fn has_ended(&self) -> bool {
        self.result.is_some()
    }

    /// How the run ended, once it has (a suspension included, which its
    /// log does not count as an end).
    pub(crate) fn ended_with(&self) -> Option<&LoopResult> {
        self.result.as_ref()
    }

    /// Stores the run's state between two steps.
    pub(crate) async fn checkpoint(&mut self, state: RunState) -> RuntimeResult<()> {
        // After the end (a suspended run's last state) the record is final:
        // `finish` stored that state and released the lease.
        if self.result.is_some() {
            return Ok(());
        }
        self.checkpointed = true;
        self.flush().await?;
        self.run.state = Some(state);
        self.run.updated_at = now_millis();
        self.store.update_run(&self.run).await?;
        Ok(())
    }

    /// Handles one event: numbers it, stores it and what it commits, and
    /// returns it as stored (a root `finished` event carries the result
    /// the run ended with, which its host may have decided).
    pub(crate) async fn handle(&mut self, mut event: LoopEvent) -> RuntimeResult<LoopEvent> {
        event.seq = self.next_seq;
        self.next_seq += 1;
        let root = event.path.is_root();
        if root && let EventKind::Finished(FinishedEvent { result }) = &mut event.kind {
            // A worker that lost the run must not write its end.
            self.renew_lease().await?;
            if let LoopStatus::Suspended { pending, .. } = &result.status {
                // The wait is stored (the host's record, then the run's)
                // before the event announcing it is logged or relayed.
                if let Some(ending) = &self.ending {
                    ending
                        .waits(pending, true)
                        .await
                        .map_err(|message| self.host_error(message))?;
                }
                let decided = Decided {
                    status: RunStatus::Suspended,
                    result: LoopResult::clone(result),
                };
                self.write_record(&decided).await?;
                self.log.push(event.clone());
                self.flush().await?;
                self.release().await?;
                self.result = Some(decided.result);
                return Ok(event);
            }
            let decided = self.decide(LoopResult::clone(result)).await?;
            **result = decided.result.clone();
            self.log.push(event.clone());
            self.flush().await?;
            self.finish(decided).await?;
            return Ok(event);
        }
        if root && matches!(event.kind, EventKind::MessageCreated(_)) {
            // A worker that lost the run commits nothing more of it.
            self.renew_lease().await?;
        }
        self.log.push(event.clone());
        match &event.kind {
            EventKind::MessageCreated(MessageCreatedEvent { message }) => {
                self.flush().await?;
                if root {
                    self.store.save_message(&self.chat.id, message).await?;
                    if message.role == Role::Assistant {
                        self.last_assistant = Some(message.clone());
                    }
                } else {
                    let chat_id = self.minion_chat(&event.path).await?;
                    self.store.save_message(&chat_id, message).await?;
                }
            }
            EventKind::TokensConsumed(TokensConsumedEvent { tokens }) => {
                let now = now_millis();
                self.store
                    .add_chat_totals(&self.chat.id, *tokens, now)
                    .await?;
                if root {
                    self.totals += *tokens;
                } else {
                    let chat_id = self.minion_chat(&event.path).await?;
                    self.store.add_chat_totals(&chat_id, *tokens, now).await?;
                }
            }
            EventKind::PendingToolResult(PendingToolResultEvent { message_id, blocks }) => {
                if root && !self.checkpointed {
                    self.record_intent(message_id, blocks).await?;
                } else {
                    self.flush_when_full().await?;
                }
            }
            EventKind::ToolStart(ToolStartEvent { tool_use_id, .. }) => {
                self.flush().await?;
                self.gate.open(tool_use_id);
            }
            EventKind::Finished(FinishedEvent { .. }) => self.flush_when_full().await?,
            EventKind::StreamingStart(StreamingStartEvent { .. })
            | EventKind::FirstChunk
            | EventKind::StreamingChunk(StreamingChunkEvent { .. })
            | EventKind::StreamingEnd(StreamingEndEvent { .. })
            | EventKind::ToolBlockUpdate(ToolBlockUpdateEvent { .. })
            | EventKind::ToolEnd(ToolEndEvent { .. })
            | EventKind::AgentStart(AgentStartEvent { .. })
            | EventKind::AgentTurnStart(AgentTurnStartEvent { .. })
            | EventKind::AgentReason(AgentReasonEvent { .. })
            | EventKind::AgentRequestInput(AgentRequestInputEvent { .. })
            | EventKind::ApprovalRequested(_)
            | EventKind::AgentToolStart(AgentToolStartEvent { .. })
            | EventKind::AgentToolComplete(AgentToolCompleteEvent { .. })
            | EventKind::AgentObserve(AgentObserveEvent { .. })
            | EventKind::AgentCompletion(AgentCompletionEvent { .. })
            | EventKind::AgentError(AgentErrorEvent { .. })
            | EventKind::Hook(_)
            | EventKind::Handoff(_)
            | EventKind::ContextCompacted(ContextCompactedEvent { .. }) => {
                self.flush_when_full().await?
            }
        }
        Ok(event)
    }

    /// The tool-call intent of a run that writes no checkpoints: a state
    /// with phase `run_tools` holding the pending calls.
    async fn record_intent(
        &mut self,
        message_id: &str,
        blocks: &[agentloop_types::ToolResultRenderBlock],
    ) -> RuntimeResult<()> {
        let calls = self
            .last_assistant
            .iter()
            .flat_map(|m| m.tool_uses())
            .filter(|c| blocks.iter().any(|b| b.tool_use_id == c.id))
            .cloned()
            .collect();
        let mut state = RunState::new(self.run.id.clone(), Vec::new());
        state.totals = self.totals;
        state.phase = RunPhase::RunTools {
            result_message_id: message_id.to_owned(),
            calls,
        };
        self.run.state = Some(state);
        self.run.updated_at = now_millis();
        self.flush().await?;
        self.store.update_run(&self.run).await?;
        Ok(())
    }

    async fn flush_when_full(&mut self) -> RuntimeResult<()> {
        if self.log.len() >= self.log_batch {
            self.flush().await?;
        }
        Ok(())
    }

    /// Writes the buffered events and renews the lease when half spent.
    pub(crate) async fn flush(&mut self) -> RuntimeResult<()> {
        if !self.log.is_empty() {
            self.store.append_events(&self.run.id, &self.log).await?;
            self.log.clear();
        }
        if self
            .run
            .lease_expires_at
            .is_none_or(|expires| expires - now_millis() < self.lease_ms / 2)
        {
            self.renew_lease().await?;
        }
        Ok(())
    }

    /// Takes the lease for another `lease_ms`; `LeaseLost` when another
    /// worker holds it.
    async fn renew_lease(&mut self) -> RuntimeResult<()> {
        let now = now_millis();
        let expires = now + self.lease_ms;
        if !self
            .store
            .acquire_lease(&self.run.id, &self.owner, now, expires)
            .await?
        {
            return Err(RuntimeError::LeaseLost {
                run_id: self.run.id.clone(),
            });
        }
        self.run.lease_owner = Some(self.owner.clone());
        self.run.lease_expires_at = Some(expires);
        Ok(())
    }

    /// The end of a run whose loop finished with `result`: the host's, or
    /// the status the result itself asks for.
    async fn decide(&self, result: LoopResult) -> RuntimeResult<Decided> {
        match &self.ending {
            Some(ending) if !matches!(result.status, LoopStatus::Suspended { .. }) => ending
                .decide(result)
                .await
                .map_err(|message| self.host_error(message)),
            _ => Ok(Decided {
                status: run_status(&result.status),
                result,
            }),
        }
    }

    fn host_error(&self, message: String) -> RuntimeError {
        RuntimeError::Host {
            run_id: self.run.id.clone(),
            message,
        }
    }

    /// Ends a run whose log already holds its end (`result`), written by
    /// an attempt that stopped before it recorded it.
    pub(crate) async fn finish_logged(&mut self, result: LoopResult) -> RuntimeResult<LoopResult> {
        self.renew_lease().await?;
        let decided = self.decide(result).await?;
        let result = decided.result.clone();
        self.finish(decided).await?;
        Ok(result)
    }

    /// Records the run's end, its terminal event written (see
    /// [`write_record`](Self::write_record)); the host commits it; then the
    /// lease is released.
    async fn finish(&mut self, decided: Decided) -> RuntimeResult<()> {
        self.write_record(&decided).await?;
        // The host commits while the lease is still held: a host that
        // watches its leases gives up a run whose lease is gone, and must
        // not do so between the record and the commit.
        if let Some(ending) = &self.ending
            && !matches!(decided.result.status, LoopStatus::Suspended { .. })
        {
            ending
                .commit(&decided)
                .await
                .map_err(|message| self.host_error(message))?;
        }
        self.release().await?;
        self.result = Some(decided.result);
        Ok(())
    }

    /// Gives the run's lease up.
    pub(crate) async fn release(&mut self) -> RuntimeResult<()> {
        self.store.release_lease(&self.run.id, &self.owner).await?;
        self.run.lease_owner = None;
        self.run.lease_expires_at = None;
        Ok(())
    }

    /// Writes the record of a run that ended or waits as `decided` says:
    /// status, result (its last answer only: the chat holds the messages,
    /// see [`crate::stored`]), pending call and the state it waits in.
    async fn write_record(&mut self, decided: &Decided) -> RuntimeResult<()> {
        let result = &decided.result;
        // A suspended run's state is kept as the run's state, not twice.
        let mut status = result.status.clone();
        let waiting = match &mut status {
            LoopStatus::Suspended { state, .. } => state.take(),
            _ => None,
        };
        let own = crate::stored::record_result(
            &LoopResult {
                status,
                ..LoopResult::clone(result)
            },
            self.context_len,
        );
        self.run.status = decided.status;
        self.run.pending_tool_call = match &result.status {
            LoopStatus::Suspended { pending, .. } => pending.first().map(|p| p.call.clone()),
            _ => None,
        };
        if let Some(state) = waiting {
            self.run.state = Some(*state);
        } else if let Some(state) = self.run.state.as_mut() {
            crate::stored::finished_state(state, result);
        }
        self.run.result = Some(serde_json::to_value(&own).map_err(|e| {
            crate::error::RuntimeError::CorruptRun {
                run_id: self.run.id.clone(),
                message: e.to_string(),
            }
        })?);
        self.run.updated_at = now_millis();
        self.store.update_run(&self.run).await?;
        Ok(())
    }

    /// Ends a run whose stream stopped without a result, or whose
    /// persistence failed. A run whose lease was lost is left as it is:
    /// it belongs to the worker that holds it now.
    pub(crate) async fn abandon(&mut self, error: &RuntimeError) {
        if matches!(error, RuntimeError::LeaseLost { .. }) {
            return;
        }
        let why = error.to_string();
        let _ = self.flush().await;
        self.run.status = RunStatus::Failed;
        self.run.result = Some(serde_json::json!({ "status": "error", "error": why }));
        self.run.updated_at = now_millis();
        let _ = self.store.update_run(&self.run).await;
        let _ = self.store.release_lease(&self.run.id, &self.owner).await;
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

/// The stored status of a run that ended with `status`.
pub(crate) fn run_status(status: &LoopStatus) -> RunStatus {
    match status {
        LoopStatus::Complete { .. }
        | LoopStatus::MaxIterations
        | LoopStatus::LimitExceeded { .. } => RunStatus::Completed,
        LoopStatus::Suspended { .. } => RunStatus::Suspended,
        LoopStatus::Error { .. } => RunStatus::Failed,
        LoopStatus::Cancelled => RunStatus::Cancelled,
    }
}
