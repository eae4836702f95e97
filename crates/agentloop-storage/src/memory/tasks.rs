//! Tasks and agent runs of the in-memory backend.

use async_trait::async_trait;

use super::{MemoryStore, sort_by_created};
use crate::error::{StorageError, StorageResult};
use crate::model::{
    AgentRun, AgentRunDecision, AgentRunStart, AgentRunStatus, ChainEnd, Conversation, EndReason,
    Task, TaskChain,
};
use crate::store::TaskStore;

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
            begins_chain,
            audit,
            schedule_id,
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
        if let Some(entry) = audit
            && state.audit.iter().any(|e| e.id == entry.id)
        {
            return Err(StorageError::exists("audit entry", &entry.id));
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
        if *begins_chain && let Some(task) = state.tasks.get_mut(&agent_run.task_id) {
            task.chain = TaskChain {
                started_at: Some(agent_run.created_at),
                end: None,
            };
        }
        if let Some(entry) = audit {
            state.audit.push(entry.clone());
        }
        if let Some(schedule) = schedule_id {
            state
                .schedule_runs
                .insert(agent_run.id.clone(), schedule.clone());
        }
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
