//! Finding and repairing runs a crash interrupted, and continuing them.
//!
//! A run is interrupted when its record says `running` but nobody holds a
//! live lease on it (or, in single-process mode, any `running` run at
//! startup). Every message it committed is in the chat already, and its
//! last checkpoint ([`RunState`], strategy phase included) is stored with
//! it.
//!
//! A run of a built-in strategy is repaired through the engine: the calls
//! of its pending tool step that had started (their `tool_start` is in the
//! run's event log: they may have taken effect) are marked interrupted in
//! its state, and [`agentloop_engine::settle`] takes it — without any I/O —
//! to the step where it needs the model or a tool: the interrupted calls
//! get their results from the core, which are committed to the chat. The record is marked failed
//! (`interrupted`, resumable) and keeps the advanced state;
//! [`ChatRuntime::continue_chat`] then continues it with
//! [`agentloop_engine::resume`] from that state, in the strategy and phase
//! it was in. No tool whose result was committed runs again, and no call
//! that had started runs again.
//!
//! A run with no checkpoint (a custom strategy) is repaired from its
//! messages: the dangling calls of its last assistant message get
//! synthesised results, and the chat is continued from its last message.

use std::collections::HashSet;
use std::sync::Arc;

use agentloop_storage::model::{RunRecord, RunStatus, now_millis};
use agentloop_types::{
    ContentBlock, LoopEvent, LoopResult, Message, RunPath, RunPhase, RunState, close_dangling_calls,
};
use serde::{Deserialize, Serialize};

use crate::ending::RunEnding;
use crate::error::RuntimeResult;
use crate::gate::Gate;
use crate::ids::new_id;
use crate::log::RunLog;
use crate::persist::Persister;
use crate::runtime::ChatRuntime;

/// Which runs count as interrupted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecoveryMode {
    /// Only one process uses the store: every `running` run is interrupted.
    SingleProcess,
    /// Many workers share the store: `running` runs whose lease expired.
    ExpiredLeases,
}

/// A call closed by recovery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClosedCall {
    /// The call.
    pub tool_use_id: String,
    /// Tool name.
    pub name: String,
    /// Whether the tool had started (its effects, if any, are unknown).
    pub started: bool,
}

/// A run recovery repaired.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveredRun {
    /// The run.
    pub run_id: String,
    /// Its chat.
    pub chat_id: String,
    /// The calls that got synthesised results.
    pub closed_calls: Vec<ClosedCall>,
}

impl ChatRuntime {
    /// Finds interrupted runs and repairs their chats (see the module docs).
    pub async fn recover(&self, mode: RecoveryMode) -> RuntimeResult<Vec<RecoveredRun>> {
        let now = now_millis();
        let seen_at = match mode {
            RecoveryMode::SingleProcess => i64::MAX,
            RecoveryMode::ExpiredLeases => now,
        };
        let mut recovered = Vec::new();
        let mut skipped = HashSet::new();
        loop {
            let runs = self.store.list_claimable_runs(seen_at, 100).await?;
            let fresh: Vec<RunRecord> = runs
                .into_iter()
                .filter(|r| {
                    r.status == RunStatus::Running
                        && r.chat_id.is_some()
                        && !skipped.contains(&r.id)
                })
                .collect();
            if fresh.is_empty() {
                return Ok(recovered);
            }
            for run in fresh {
                skipped.insert(run.id.clone());
                if let Some(done) = self.recover_run(&run, seen_at).await? {
                    recovered.push(done);
                }
            }
        }
    }

    /// Repairs one interrupted run if this worker wins its lease.
    pub(crate) async fn recover_run(
        &self,
        run: &RunRecord,
        seen_at: i64,
    ) -> RuntimeResult<Option<RecoveredRun>> {
        let Some(chat_id) = run.chat_id.clone() else {
            return Ok(None);
        };
        let now = now_millis();
        if !self
            .store
            .acquire_lease(&run.id, &self.owner, seen_at, now + self.lease_ms)
            .await?
        {
            return Ok(None);
        }
        let log = RunLog::read(&*self.store, &run.id).await?;
        let closed_calls = match run.state.clone().filter(is_resumable) {
            Some(state) => self.advance(&chat_id, run, state, &log).await?,
            None => {
                let closed_calls = self.repair_dangling(&chat_id, &log.started).await?;
                let mut record = run.clone();
                record.status = RunStatus::Failed;
                record.result = Some(serde_json::json!({
                    "status": "interrupted",
                    "closed_calls": &closed_calls,
                }));
                record.updated_at = now_millis();
                self.store.update_run(&record).await?;
                closed_calls
            }
        };
        self.store.release_lease(&run.id, &self.owner).await?;
        Ok(Some(RecoveredRun {
            run_id: run.id.clone(),
            chat_id,
            closed_calls,
        }))
    }

    /// Steps an interrupted run's machine up to its next I/O: its started
    /// calls are answered as interrupted and committed. The record keeps
    /// the advanced state for [`continue_chat`](ChatRuntime::continue_chat).
    async fn advance(
        &self,
        chat_id: &str,
        run: &RunRecord,
        state: RunState,
        log: &RunLog,
    ) -> RuntimeResult<Vec<ClosedCall>> {
        let settled = self
            .settle_interrupted(chat_id, run, state, log, None)
            .await?;
        if !settled.ended {
            let mut record = settled.record;
            record.status = RunStatus::Failed;
            record.result = Some(serde_json::json!({
                "status": "interrupted",
                "closed_calls": &settled.closed_calls,
                "resumable": true,
            }));
            record.state = Some(settled.state);
            record.updated_at = now_millis();
            self.store.update_run(&record).await?;
        }
        Ok(settled.closed_calls)
    }

    /// Answers the calls of an interrupted run that had started (their
    /// `tool_start` is logged) as interrupted, and steps its machine —
    /// without I/O — up to its next model request or tool run. The events
    /// go to the run's own log and chat; the run may end on the way (then
    /// `ending` takes part, as in any end).
    pub(crate) async fn settle_interrupted(
        &self,
        chat_id: &str,
        run: &RunRecord,
        mut state: RunState,
        log: &RunLog,
        ending: Option<Arc<dyn RunEnding>>,
    ) -> RuntimeResult<SettledRun> {
        let messages = self.chat_messages(chat_id).await?;
        let closed_calls: Vec<ClosedCall> = dangling_calls(&messages)
            .into_iter()
            .filter(|(id, _)| log.started.contains(id))
            .map(|(tool_use_id, name)| ClosedCall {
                tool_use_id,
                name,
                started: true,
            })
            .collect();
        state.interrupted_calls = closed_calls.iter().map(|c| c.tool_use_id.clone()).collect();
        let chat = self.store.get_chat(chat_id).await?;
        let options = self.loop_options(&chat).await?;
        // A finished state refuses to start: nothing is stepped.
        let settled = agentloop_engine::settle_handing_off(
            options,
            state,
            self.offered_tools(),
            self.handoffs.as_deref(),
        );
        let mut persister = Box::new(Persister::new(
            self.store.clone(),
            chat,
            run.clone(),
            Gate::default(),
            self.owner.clone(),
            self.lease_ms,
            messages.len(),
        ))
        .continuing_at(log.next_seq)
        .with_ending(ending);
        for kind in settled.events {
            let event = LoopEvent {
                seq: 0,
                path: RunPath::root(),
                kind,
            };
            persister.handle(event).await?;
        }
        persister.flush().await?;
        Ok(SettledRun {
            closed_calls,
            state: settled.state,
            ended: persister.has_ended(),
            result: persister.ended_with().cloned(),
            record: persister.run().clone(),
        })
    }

    /// Whether the chat's last run was interrupted and is waiting for
    /// [`continue_chat`](Self::continue_chat) (a new message would
    /// supersede it instead).
    /// A fork that has not started counts as one (see [`crate::fork`]).
    pub async fn has_interrupted_run(&self, chat_id: &str) -> RuntimeResult<bool> {
        if let Some(last) = self.store.last_run(chat_id).await?
            && crate::forked::is_unstarted_fork(&last)
        {
            return Ok(true);
        }
        Ok(self.resumable_run(chat_id).await?.is_some())
    }

    /// The state of the chat's latest run when it is an interrupted run
    /// that can be continued from it.
    pub(crate) async fn resumable_run(&self, chat_id: &str) -> RuntimeResult<Option<RunState>> {
        let Some(last) = self.store.last_run(chat_id).await? else {
            return Ok(None);
        };
        let marked = last.status == RunStatus::Failed
            && last.result.as_ref().is_some_and(|r| {
                r["status"] == "interrupted" && r["resumable"] == serde_json::Value::Bool(true)
            });
        Ok(last.state.clone().filter(|s| marked && is_resumable(s)))
    }

    /// A new message supersedes an interrupted run: it will not be
    /// continued, and its calls that never ran are closed.
    pub(crate) async fn supersede_interrupted(&self, chat_id: &str) -> RuntimeResult<()> {
        let Some(state) = self.resumable_run(chat_id).await? else {
            return Ok(());
        };
        let started: HashSet<String> = state.interrupted_calls.into_iter().collect();
        if let Some(mut last) = self.store.last_run(chat_id).await? {
            if let Some(result) = last.result.as_mut() {
                result["resumable"] = serde_json::Value::Bool(false);
            }
            last.updated_at = now_millis();
            self.store.update_run(&last).await?;
        }
        self.repair_dangling(chat_id, &started).await?;
        Ok(())
    }

    async fn chat_messages(&self, chat_id: &str) -> RuntimeResult<Vec<Message>> {
        Ok(self
            .store
            .list_messages(chat_id)
            .await?
            .into_iter()
            .map(|m| m.message)
            .collect())
    }

    /// Closes the chat's dangling calls with results saying whether they
    /// had started.
    pub(crate) async fn repair_dangling(
        &self,
        chat_id: &str,
        started: &HashSet<String>,
    ) -> RuntimeResult<Vec<ClosedCall>> {
        let messages = self.chat_messages(chat_id).await?;
        let names: Vec<(String, String)> = messages
            .iter()
            .flat_map(|m| m.tool_uses())
            .map(|c| (c.id.clone(), c.name.clone()))
            .collect();
        const MARK: &str = "\u{0}interrupted";
        let repaired = close_dangling_calls(messages, MARK, || new_id("msg"));
        let mut closed_calls = Vec::new();
        for mut message in repaired {
            let mut changed = false;
            for block in &mut message.content {
                if let ContentBlock::ToolResult(result) = block
                    && result.content == MARK
                {
                    let name = names
                        .iter()
                        .find(|(id, _)| *id == result.tool_use_id)
                        .map(|(_, n)| n.clone())
                        .unwrap_or_default();
                    let was_started = started.contains(&result.tool_use_id);
                    result.content = interrupted_text(&name, was_started);
                    closed_calls.push(ClosedCall {
                        tool_use_id: result.tool_use_id.clone(),
                        name,
                        started: was_started,
                    });
                    changed = true;
                }
            }
            if changed {
                self.store.save_message(chat_id, &message).await?;
            }
        }
        Ok(closed_calls)
    }
}

/// An interrupted run after [`ChatRuntime::settle_interrupted`].
pub(crate) struct SettledRun {
    /// The calls answered as interrupted.
    pub(crate) closed_calls: Vec<ClosedCall>,
    /// The run's state, stepped up to its next I/O.
    pub(crate) state: RunState,
    /// Whether the run ended on the way.
    pub(crate) ended: bool,
    /// How it ended, then: a suspension (the calls the settled step
    /// decided to ask a person about) is an end of this execution that
    /// the run's log does not hold as its end.
    pub(crate) result: Option<LoopResult>,
    /// Its record as written.
    pub(crate) record: RunRecord,
}

/// Whether a stored state can be continued by the engine: written by a
/// built-in strategy's machine, and not finished.
pub(crate) fn is_resumable(state: &RunState) -> bool {
    state.strategy.is_some() && state.phase != RunPhase::Finished
}

/// Calls of the history with no result, in call order, with their tools.
fn dangling_calls(messages: &[Message]) -> Vec<(String, String)> {
    let answered: HashSet<&str> = messages
        .iter()
        .flat_map(|m| m.tool_results())
        .map(|r| r.tool_use_id.as_str())
        .collect();
    messages
        .iter()
        .flat_map(|m| m.tool_uses())
        .filter(|c| !answered.contains(c.id.as_str()))
        .map(|c| (c.id.clone(), c.name.clone()))
        .collect()
}

/// What the model reads for a call closed by recovery.
fn interrupted_text(name: &str, started: bool) -> String {
    if started {
        format!(
            "The run was interrupted while tool `{name}` was running: it started, but its result \
             was never committed, so it may or may not have taken effect. Check before calling it again."
        )
    } else {
        format!("The run was interrupted before tool `{name}` started; it did not run.")
    }
}
