//! Finding and repairing runs a crash interrupted.
//!
//! A run is interrupted when its record says `running` but nobody holds a
//! live lease on it (or, in single-process mode, any `running` run at
//! startup). Every message it committed is in the chat already; what can be
//! missing is the results of the calls of its last assistant message. Those
//! are closed with synthesised error results that say whether the tool had
//! started (its `tool_start` is in the run's event log: it may have taken
//! effect) or not. The run is then marked failed, and the chat can be
//! continued from its last committed message
//! ([`ChatRuntime::continue_chat`]): results that were committed are kept,
//! so no tool whose result was committed runs again.

use std::collections::HashSet;

use agentloop_storage::model::{RunRecord, RunStatus, now_millis};
use agentloop_types::{ContentBlock, EventKind, Message, close_dangling_calls};
use serde::{Deserialize, Serialize};

use crate::error::RuntimeResult;
use crate::ids::new_id;
use crate::runtime::ChatRuntime;

/// Events read per page when scanning a run's log.
const PAGE: u32 = 500;

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
        let started = self.started_calls(&run.id).await?;
        let messages: Vec<Message> = self
            .store
            .list_messages(&chat_id)
            .await?
            .into_iter()
            .map(|m| m.message)
            .collect();
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
                self.store.save_message(&chat_id, &message).await?;
            }
        }
        let mut record = run.clone();
        record.status = RunStatus::Failed;
        record.result = Some(serde_json::json!({
            "status": "interrupted",
            "closed_calls": &closed_calls,
        }));
        record.updated_at = now_millis();
        self.store.update_run(&record).await?;
        self.store.release_lease(&run.id, &self.owner).await?;
        Ok(Some(RecoveredRun {
            run_id: run.id.clone(),
            chat_id,
            closed_calls,
        }))
    }

    /// Ids of the calls whose `tool_start` is in the run's log.
    async fn started_calls(&self, run_id: &str) -> RuntimeResult<HashSet<String>> {
        let mut started = HashSet::new();
        let mut after = None;
        loop {
            let page = self.store.list_events(run_id, after, PAGE).await?;
            for event in &page {
                if let EventKind::ToolStart { tool_use_id, .. } = &event.kind {
                    started.insert(tool_use_id.clone());
                }
            }
            match page.last() {
                Some(last) if page.len() == PAGE as usize => after = Some(last.seq),
                _ => return Ok(started),
            }
        }
    }
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
