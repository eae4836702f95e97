//! Loop runs (records, leases, event logs) of the in-memory backend.

use agentloop_types::LoopEvent;
use async_trait::async_trait;

use super::{MemoryStore, sort_by_created};
use crate::error::{StorageError, StorageResult};
use crate::model::{LeaseRenewal, RunRecord, RunStatus};
use crate::store::RunStore;

impl MemoryStore {
    /// [`RunStore::renew_leases`](crate::store::RunStore::renew_leases):
    /// the runs' leases, renewed.
    pub(super) async fn renew_run_leases(
        &self,
        owner: &str,
        run_ids: &[String],
        expires_at: i64,
    ) -> StorageResult<Vec<LeaseRenewal>> {
        let mut state = self.lock();
        let mut renewals = Vec::with_capacity(run_ids.len());
        for id in run_ids {
            let renewed = match state.runs.get_mut(id) {
                Some(run) if run.lease_owner.as_deref() == Some(owner) => {
                    run.lease_expires_at = Some(expires_at);
                    true
                }
                _ => false,
            };
            renewals.push(if renewed {
                LeaseRenewal::Renewed
            } else {
                LeaseRenewal::Lost
            });
        }
        Ok(renewals)
    }
}

#[async_trait]
impl RunStore for MemoryStore {
    async fn renew_leases(
        &self,
        owner: &str,
        run_ids: &[String],
        expires_at: i64,
    ) -> StorageResult<Vec<LeaseRenewal>> {
        self.renew_run_leases(owner, run_ids, expires_at).await
    }

    async fn create_run(&self, run: &RunRecord) -> StorageResult<()> {
        let mut state = self.lock();
        if let Some(chat) = run
            .chat_id
            .as_ref()
            .filter(|c| !state.chats.contains_key(*c))
        {
            return Err(StorageError::Invalid(format!("chat {chat} does not exist")));
        }
        if state.runs.contains_key(&run.id) {
            return Err(StorageError::exists("run", &run.id));
        }
        state.runs.insert(run.id.clone(), run.clone());
        Ok(())
    }

    async fn get_run(&self, id: &str) -> StorageResult<RunRecord> {
        self.lock()
            .runs
            .get(id)
            .cloned()
            .ok_or_else(|| StorageError::not_found("run", id))
    }

    async fn list_runs(&self, chat_id: &str) -> StorageResult<Vec<RunRecord>> {
        let mut all: Vec<RunRecord> = self
            .lock()
            .runs
            .values()
            .filter(|r| r.chat_id.as_deref() == Some(chat_id))
            .cloned()
            .collect();
        sort_by_created(&mut all, |r| (r.created_at, &r.id));
        Ok(all)
    }

    async fn list_claimable_runs(&self, now: i64, limit: u32) -> StorageResult<Vec<RunRecord>> {
        let mut all: Vec<RunRecord> = self
            .lock()
            .runs
            .values()
            .filter(|r| matches!(r.status, RunStatus::Pending | RunStatus::Running))
            .filter(|r| r.lease_owner.is_none() || r.lease_expires_at.is_none_or(|e| e <= now))
            .cloned()
            .collect();
        sort_by_created(&mut all, |r| (r.created_at, &r.id));
        all.truncate(limit as usize);
        Ok(all)
    }

    async fn update_run(&self, run: &RunRecord) -> StorageResult<()> {
        let mut state = self.lock();
        let stored = state
            .runs
            .get_mut(&run.id)
            .ok_or_else(|| StorageError::not_found("run", &run.id))?;
        let moved = stored.status != run.status;
        stored.status = run.status;
        stored.state.clone_from(&run.state);
        stored.result.clone_from(&run.result);
        stored.pending_tool_call.clone_from(&run.pending_tool_call);
        stored.end_reason.clone_from(&run.end_reason);
        stored.updated_at = run.updated_at;
        if moved {
            state.record_moved(&run.id);
        }
        Ok(())
    }

    async fn resume_run(&self, run_id: &str, now: i64) -> StorageResult<bool> {
        let mut state = self.lock();
        let stored = state
            .runs
            .get_mut(run_id)
            .ok_or_else(|| StorageError::not_found("run", run_id))?;
        if stored.status != RunStatus::Suspended {
            return Ok(false);
        }
        stored.status = RunStatus::Running;
        stored.updated_at = now;
        state.record_moved(run_id);
        Ok(true)
    }

    async fn acquire_lease(
        &self,
        run_id: &str,
        owner: &str,
        now: i64,
        expires_at: i64,
    ) -> StorageResult<bool> {
        let mut state = self.lock();
        let run = state
            .runs
            .get_mut(run_id)
            .ok_or_else(|| StorageError::not_found("run", run_id))?;
        let free = run.lease_owner.as_deref().is_none_or(|o| o == owner)
            || run.lease_expires_at.is_none_or(|e| e <= now);
        if free {
            run.lease_owner = Some(owner.to_owned());
            run.lease_expires_at = Some(expires_at);
        }
        Ok(free)
    }

    async fn release_lease(&self, run_id: &str, owner: &str) -> StorageResult<bool> {
        let mut state = self.lock();
        let run = state
            .runs
            .get_mut(run_id)
            .ok_or_else(|| StorageError::not_found("run", run_id))?;
        if run.lease_owner.as_deref() != Some(owner) {
            return Ok(false);
        }
        run.lease_owner = None;
        run.lease_expires_at = None;
        Ok(true)
    }

    async fn append_events(&self, run_id: &str, events: &[LoopEvent]) -> StorageResult<()> {
        let mut state = self.lock();
        if !state.runs.contains_key(run_id) {
            return Err(StorageError::not_found("run", run_id));
        }
        let log = state.events.entry(run_id.to_owned()).or_default();
        let mut seen = std::collections::HashSet::new();
        for event in events {
            if log.contains_key(&event.seq) || !seen.insert(event.seq) {
                return Err(StorageError::exists("event", event.seq.to_string()));
            }
        }
        for event in events {
            log.insert(event.seq, event.clone());
        }
        Ok(())
    }

    async fn list_events(
        &self,
        run_id: &str,
        after: Option<u64>,
        limit: u32,
    ) -> StorageResult<Vec<LoopEvent>> {
        let state = self.lock();
        if !state.runs.contains_key(run_id) {
            return Err(StorageError::not_found("run", run_id));
        }
        Ok(state
            .events
            .get(run_id)
            .map(|log| {
                log.values()
                    .filter(|e| after.is_none_or(|a| e.seq > a))
                    .take(limit as usize)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default())
    }
}
