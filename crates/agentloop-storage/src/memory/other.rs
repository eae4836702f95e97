//! Attachments, files, runs, tasks and webhook deliveries of the in-memory
//! backend.

use agentloop_types::LoopEvent;
use agentloop_types::vfs::is_within;
use async_trait::async_trait;

use super::{MemoryStore, sort_by_created};
use crate::error::{StorageError, StorageResult};
use crate::model::{
    AgentRun, AgentRunDecision, AgentRunStart, AgentRunStatus, Attachment, AttachmentMeta,
    ChainEnd, Conversation, EndReason, FileRecord, LeaseRenewal, RunRecord, RunStatus, Task,
    TaskChain, WebhookDelivery,
};
use crate::store::{
    AttachmentStore, FileStore, RunStore, TaskStore, WEBHOOK_DELIVERIES_KEPT, WebhookStore,
};

#[async_trait]
impl AttachmentStore for MemoryStore {
    async fn put_attachment(&self, attachment: &Attachment) -> StorageResult<()> {
        let mut state = self.lock();
        let meta = &attachment.meta;
        if !state.projects.contains_key(&meta.project_id) {
            return Err(StorageError::Invalid(format!(
                "project {} does not exist",
                meta.project_id
            )));
        }
        if let Some(chat) = meta.chat_id.as_ref().filter(|c| {
            state
                .chats
                .get(*c)
                .is_none_or(|row| row.chat.project_id != meta.project_id)
        }) {
            return Err(StorageError::Invalid(format!(
                "chat {chat} does not exist in project {}",
                meta.project_id
            )));
        }
        if state.attachments.contains_key(&meta.id) {
            return Err(StorageError::exists("attachment", &meta.id));
        }
        let mut stored = attachment.clone();
        stored.meta.size = attachment.data.len() as u64;
        state.attachments.insert(meta.id.clone(), stored);
        Ok(())
    }

    async fn get_attachment(&self, id: &str) -> StorageResult<Attachment> {
        self.lock()
            .attachments
            .get(id)
            .cloned()
            .ok_or_else(|| StorageError::not_found("attachment", id))
    }

    async fn list_attachments(&self, project_id: &str) -> StorageResult<Vec<AttachmentMeta>> {
        let mut all: Vec<AttachmentMeta> = self
            .lock()
            .attachments
            .values()
            .filter(|a| a.meta.project_id == project_id)
            .map(|a| a.meta.clone())
            .collect();
        sort_by_created(&mut all, |a| (a.created_at, &a.id));
        Ok(all)
    }

    async fn delete_attachment(&self, id: &str) -> StorageResult<()> {
        self.lock()
            .attachments
            .remove(id)
            .map(|_| ())
            .ok_or_else(|| StorageError::not_found("attachment", id))
    }
}

#[async_trait]
impl FileStore for MemoryStore {
    async fn get_file(&self, project_id: &str, path: &str) -> StorageResult<Option<FileRecord>> {
        Ok(self
            .lock()
            .files
            .get(&(project_id.to_owned(), path.to_owned()))
            .cloned())
    }

    async fn put_file(&self, project_id: &str, record: &FileRecord) -> StorageResult<()> {
        let mut state = self.lock();
        if !state.projects.contains_key(project_id) {
            return Err(StorageError::Invalid(format!(
                "project {project_id} does not exist"
            )));
        }
        state
            .files
            .insert((project_id.to_owned(), record.path.clone()), record.clone());
        Ok(())
    }

    async fn list_files(&self, project_id: &str, under: &str) -> StorageResult<Vec<FileRecord>> {
        let state = self.lock();
        let mut all: Vec<FileRecord> = state
            .files
            .iter()
            .filter(|((project, path), _)| {
                project == project_id && path != under && is_within(path, under)
            })
            .map(|(_, record)| record.clone())
            .collect();
        all.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(all)
    }

    async fn delete_file_tree(&self, project_id: &str, path: &str) -> StorageResult<u64> {
        let mut state = self.lock();
        let before = state.files.len();
        state
            .files
            .retain(|(project, p), _| !(project == project_id && is_within(p, path)));
        Ok((before - state.files.len()) as u64)
    }

    async fn rename_file_tree(&self, project_id: &str, from: &str, to: &str) -> StorageResult<()> {
        let mut state = self.lock();
        let moving: Vec<(String, String)> = state
            .files
            .keys()
            .filter(|(project, p)| project == project_id && is_within(p, from))
            .cloned()
            .collect();
        for key in moving {
            if let Some(mut record) = state.files.remove(&key) {
                record.path = format!("{to}{}", &key.1[from.len()..]);
                state
                    .files
                    .insert((project_id.to_owned(), record.path.clone()), record);
            }
        }
        Ok(())
    }
}

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

#[async_trait]
impl TaskStore for MemoryStore {
    async fn create_task(&self, task: &Task) -> StorageResult<()> {
        let mut state = self.lock();
        if !state.projects.contains_key(&task.project_id) {
            return Err(StorageError::Invalid(format!(
                "project {} does not exist",
                task.project_id
            )));
        }
        if state.tasks.contains_key(&task.id) {
            return Err(StorageError::exists("task", &task.id));
        }
        state.tasks.insert(task.id.clone(), task.clone());
        Ok(())
    }

    async fn get_task(&self, id: &str) -> StorageResult<Task> {
        self.lock()
            .tasks
            .get(id)
            .cloned()
            .ok_or_else(|| StorageError::not_found("task", id))
    }

    async fn delete_task(&self, id: &str) -> StorageResult<()> {
        let mut state = self.lock();
        if !state.tasks.contains_key(id) {
            return Err(StorageError::not_found("task", id));
        }
        if state
            .agent_runs
            .values()
            .any(|r| r.task_id == id && r.status.is_active())
        {
            return Err(StorageError::ActiveAgentRunExists {
                task_id: id.to_owned(),
            });
        }
        let chats: Vec<String> = state
            .conversations
            .values()
            .filter(|c| c.task_id == id)
            .filter_map(|c| c.chat_id.clone())
            .collect();
        for chat in chats {
            state.remove_chat(&chat);
        }
        state.remove_task(id);
        Ok(())
    }

    async fn list_tasks(&self, project_id: &str) -> StorageResult<Vec<Task>> {
        let mut all: Vec<Task> = self
            .lock()
            .tasks
            .values()
            .filter(|t| t.project_id == project_id)
            .cloned()
            .collect();
        sort_by_created(&mut all, |t| (t.created_at, &t.id));
        Ok(all)
    }

    async fn set_workflow_complete(
        &self,
        task_id: &str,
        complete: bool,
        now: i64,
    ) -> StorageResult<Vec<AgentRun>> {
        let mut state = self.lock();
        let task = state
            .tasks
            .get_mut(task_id)
            .ok_or_else(|| StorageError::not_found("task", task_id))?;
        task.workflow_complete = complete;
        task.updated_at = now;
        let mut finished = Vec::new();
        if complete {
            for run in state.agent_runs.values_mut() {
                if run.task_id == task_id && run.status.is_active() {
                    run.status = AgentRunStatus::Completed;
                    run.completed_at = Some(now);
                    run.end_reason = Some(EndReason::workflow_complete());
                    finished.push(run.clone());
                }
            }
        }
        sort_by_created(&mut finished, |r| (r.created_at, &r.id));
        Ok(finished)
    }

    async fn begin_task_chain(&self, task_id: &str, started_at: i64) -> StorageResult<()> {
        let mut state = self.lock();
        let task = state
            .tasks
            .get_mut(task_id)
            .ok_or_else(|| StorageError::not_found("task", task_id))?;
        task.chain = TaskChain {
            started_at: Some(started_at),
            end: None,
        };
        Ok(())
    }

    async fn end_task_chain(&self, task_id: &str, end: &ChainEnd) -> StorageResult<()> {
        let mut state = self.lock();
        let task = state
            .tasks
            .get_mut(task_id)
            .ok_or_else(|| StorageError::not_found("task", task_id))?;
        task.chain.end = Some(end.clone());
        Ok(())
    }

    async fn create_agent_run(&self, run: &AgentRun) -> StorageResult<()> {
        let mut state = self.lock();
        check_new_agent_run(&state, run)?;
        state.agent_runs.insert(run.id.clone(), run.clone());
        Ok(())
    }

    async fn start_agent_run(&self, start: &AgentRunStart) -> StorageResult<()> {
        let AgentRunStart {
            agent_run,
            chat,
            first_message,
            conversation,
            record,
        } = start;
        let mut state = self.lock();
        // Everything is checked before anything is written.
        for task in [&agent_run.task_id, &conversation.task_id] {
            if !state.tasks.contains_key(task) {
                return Err(StorageError::Invalid(format!("task {task} does not exist")));
            }
        }
        if !state.projects.contains_key(&chat.project_id) {
            return Err(StorageError::Invalid(format!(
                "project {} does not exist",
                chat.project_id
            )));
        }
        if state.chats.contains_key(&chat.id) {
            return Err(StorageError::exists("chat", &chat.id));
        }
        if state.conversations.contains_key(&conversation.id) {
            return Err(StorageError::exists("conversation", &conversation.id));
        }
        if state.runs.contains_key(&record.id) {
            return Err(StorageError::exists("run", &record.id));
        }
        check_new_agent_run(&state, agent_run)?;
        state.chats.insert(
            chat.id.clone(),
            super::ChatRow {
                chat: chat.clone(),
                next_seq: 1,
                messages: [(0, first_message.clone())].into(),
                index: [(first_message.id.clone(), 0)].into(),
                checkpoints: Vec::new(),
                inbox: Vec::new(),
            },
        );
        state
            .conversations
            .insert(conversation.id.clone(), conversation.clone());
        state.runs.insert(record.id.clone(), record.clone());
        state
            .agent_runs
            .insert(agent_run.id.clone(), agent_run.clone());
        Ok(())
    }

    async fn get_agent_run(&self, id: &str) -> StorageResult<AgentRun> {
        self.lock()
            .agent_runs
            .get(id)
            .cloned()
            .ok_or_else(|| StorageError::not_found("agent run", id))
    }

    async fn list_agent_runs(&self, task_id: &str) -> StorageResult<Vec<AgentRun>> {
        let mut all: Vec<AgentRun> = self
            .lock()
            .agent_runs
            .values()
            .filter(|r| r.task_id == task_id)
            .cloned()
            .collect();
        sort_by_created(&mut all, |r| (r.created_at, &r.id));
        Ok(all)
    }

    async fn active_agent_run(&self, task_id: &str) -> StorageResult<Option<AgentRun>> {
        Ok(self
            .lock()
            .agent_runs
            .values()
            .find(|r| r.task_id == task_id && r.status.is_active())
            .cloned())
    }

    async fn list_active_agent_runs(&self) -> StorageResult<Vec<AgentRun>> {
        let mut all: Vec<AgentRun> = self
            .lock()
            .agent_runs
            .values()
            .filter(|r| r.status == AgentRunStatus::Running)
            .cloned()
            .collect();
        sort_by_created(&mut all, |r| (r.created_at, &r.id));
        Ok(all)
    }

    async fn agent_run_statuses(
        &self,
        ids: &[String],
    ) -> StorageResult<Vec<Option<AgentRunStatus>>> {
        let state = self.lock();
        Ok(ids
            .iter()
            .map(|id| state.agent_runs.get(id).map(|r| r.status))
            .collect())
    }

    async fn finish_agent_run(
        &self,
        id: &str,
        status: AgentRunStatus,
        completed_at: i64,
        reason: Option<&EndReason>,
    ) -> StorageResult<bool> {
        if status.is_active() {
            return Err(StorageError::Invalid(format!(
                "an agent run cannot finish as {}",
                status.as_str()
            )));
        }
        let mut state = self.lock();
        let run = state
            .agent_runs
            .get_mut(id)
            .ok_or_else(|| StorageError::not_found("agent run", id))?;
        if !run.status.is_active() {
            return Ok(false);
        }
        run.status = status;
        run.completed_at = Some(completed_at);
        run.end_reason = reason.cloned();
        Ok(true)
    }

    async fn add_agent_run_decision(
        &self,
        agent_run_id: &str,
        decision: &AgentRunDecision,
    ) -> StorageResult<bool> {
        let mut state = self.lock();
        if !state.agent_runs.contains_key(agent_run_id) {
            return Err(StorageError::not_found("agent run", agent_run_id));
        }
        let decisions = state.decisions.entry(agent_run_id.to_owned()).or_default();
        if decisions.iter().any(|d| d.call_id == decision.call_id) {
            return Ok(false);
        }
        decisions.push(decision.clone());
        Ok(true)
    }

    async fn list_agent_run_decisions(
        &self,
        agent_run_id: &str,
    ) -> StorageResult<Vec<AgentRunDecision>> {
        Ok(self
            .lock()
            .decisions
            .get(agent_run_id)
            .cloned()
            .unwrap_or_default())
    }

    async fn clear_agent_run_decisions(&self, agent_run_id: &str) -> StorageResult<()> {
        self.lock().decisions.remove(agent_run_id);
        Ok(())
    }

    async fn link_conversation(
        &self,
        agent_run_id: &str,
        conversation_id: &str,
    ) -> StorageResult<()> {
        let mut state = self.lock();
        if !state.conversations.contains_key(conversation_id) {
            return Err(StorageError::Invalid(format!(
                "conversation {conversation_id} does not exist"
            )));
        }
        let run = state
            .agent_runs
            .get_mut(agent_run_id)
            .ok_or_else(|| StorageError::not_found("agent run", agent_run_id))?;
        run.conversation_id = Some(conversation_id.to_owned());
        Ok(())
    }

    async fn create_conversation(&self, conversation: &Conversation) -> StorageResult<()> {
        let mut state = self.lock();
        if !state.tasks.contains_key(&conversation.task_id) {
            return Err(StorageError::Invalid(format!(
                "task {} does not exist",
                conversation.task_id
            )));
        }
        if let Some(chat) = conversation
            .chat_id
            .as_ref()
            .filter(|c| !state.chats.contains_key(*c))
        {
            return Err(StorageError::Invalid(format!("chat {chat} does not exist")));
        }
        if state.conversations.contains_key(&conversation.id) {
            return Err(StorageError::exists("conversation", &conversation.id));
        }
        state
            .conversations
            .insert(conversation.id.clone(), conversation.clone());
        Ok(())
    }

    async fn get_conversation(&self, id: &str) -> StorageResult<Conversation> {
        self.lock()
            .conversations
            .get(id)
            .cloned()
            .ok_or_else(|| StorageError::not_found("conversation", id))
    }

    async fn list_conversations(&self, task_id: &str) -> StorageResult<Vec<Conversation>> {
        let mut all: Vec<Conversation> = self
            .lock()
            .conversations
            .values()
            .filter(|c| c.task_id == task_id)
            .cloned()
            .collect();
        sort_by_created(&mut all, |c| (c.created_at, &c.id));
        Ok(all)
    }

    async fn set_conversation_session(&self, id: &str, session_id: &str) -> StorageResult<()> {
        let mut state = self.lock();
        let conversation = state
            .conversations
            .get_mut(id)
            .ok_or_else(|| StorageError::not_found("conversation", id))?;
        conversation.session_id = Some(session_id.to_owned());
        Ok(())
    }
}

/// Refuses the new agent run `run` when its task does not exist, its id
/// is taken, or it is active while its task already has an active run.
fn check_new_agent_run(state: &super::State, run: &AgentRun) -> StorageResult<()> {
    if !state.tasks.contains_key(&run.task_id) {
        return Err(StorageError::Invalid(format!(
            "task {} does not exist",
            run.task_id
        )));
    }
    if state.agent_runs.contains_key(&run.id) {
        return Err(StorageError::exists("agent run", &run.id));
    }
    if run.status.is_active() && running(&state.agent_runs, &run.task_id) {
        return Err(StorageError::ActiveAgentRunExists {
            task_id: run.task_id.clone(),
        });
    }
    Ok(())
}

/// Whether the task has a running or waiting agent run.
fn running(runs: &std::collections::BTreeMap<String, AgentRun>, task_id: &str) -> bool {
    runs.values()
        .any(|r| r.task_id == task_id && r.status.is_active())
}

#[async_trait]
impl WebhookStore for MemoryStore {
    async fn save_webhook_delivery(&self, delivery: &WebhookDelivery) -> StorageResult<()> {
        let mut state = self.lock();
        if !state.projects.contains_key(&delivery.project_id) {
            return Err(StorageError::Invalid(format!(
                "project {} does not exist",
                delivery.project_id
            )));
        }
        let log = &mut state.webhook_deliveries;
        match log.iter_mut().find(|d| d.id == delivery.id) {
            Some(stored) => {
                stored.state = delivery.state;
                stored.attempts = delivery.attempts.clone();
            }
            None => log.push(delivery.clone()),
        }
        log.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        let kept = WEBHOOK_DELIVERIES_KEPT as usize;
        let mut beyond = log
            .iter()
            .filter(|d| d.project_id == delivery.project_id)
            .count()
            .saturating_sub(kept);
        log.retain(|d| {
            let drop = beyond > 0 && d.project_id == delivery.project_id;
            if drop {
                beyond -= 1;
            }
            !drop
        });
        Ok(())
    }

    async fn list_webhook_deliveries(
        &self,
        project_id: &str,
        limit: u32,
    ) -> StorageResult<Vec<WebhookDelivery>> {
        let state = self.lock();
        let all: Vec<WebhookDelivery> = state
            .webhook_deliveries
            .iter()
            .filter(|d| d.project_id == project_id)
            .cloned()
            .collect();
        let skip = all.len().saturating_sub(limit as usize);
        Ok(all.into_iter().skip(skip).collect())
    }
}
