//! The in-memory backend: everything in maps behind one lock. For tests and
//! single-process use; nothing survives the process.

mod budgets;
mod chats;
mod files;
mod members;
mod memories;
mod runs;
mod schedules;
mod steps;
mod tasks;
mod users;
mod webhooks;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

use agentloop_types::{LoopEvent, Message};

use crate::budgets::{BudgetLimit, BudgetMetric, BudgetPeriod, BudgetScope};

use crate::model::{
    AgentRun, AgentRunDecision, AgentRunStatus, Attachment, AuditEntry, Chat, Checkpoint,
    Conversation, FileRecord, MemoryRecord, MemoryScope, Project, QueuedMessage, RunRecord, Task,
    User, UserToken, WebhookDelivery,
};

/// The in-memory store.
#[derive(Debug, Default)]
pub struct MemoryStore {
    state: Mutex<State>,
    budgets: Mutex<Budgets>,
}

#[derive(Debug)]
struct ChatRow {
    chat: Chat,
    next_seq: u64,
    messages: BTreeMap<u64, Message>,
    index: HashMap<String, u64>,
    checkpoints: Vec<Checkpoint>,
    /// Messages sent to the chat's run, oldest first, with when each was
    /// delivered.
    inbox: Vec<(QueuedMessage, Option<i64>)>,
}

#[derive(Debug, Default)]
struct State {
    projects: BTreeMap<String, Project>,
    chats: BTreeMap<String, ChatRow>,
    attachments: BTreeMap<String, Attachment>,
    files: BTreeMap<(String, String), FileRecord>,
    runs: BTreeMap<String, RunRecord>,
    events: HashMap<String, BTreeMap<u64, LoopEvent>>,
    /// Run id → its kept steps by seq.
    steps: HashMap<String, BTreeMap<u64, crate::steps::RunStep>>,
    tasks: BTreeMap<String, Task>,
    agent_runs: BTreeMap<String, AgentRun>,
    /// Agent run id → its recorded decisions, oldest first.
    decisions: BTreeMap<String, Vec<AgentRunDecision>>,
    conversations: BTreeMap<String, Conversation>,
    /// Every project's webhook deliveries, oldest first.
    webhook_deliveries: Vec<WebhookDelivery>,
    users: BTreeMap<String, User>,
    tokens: BTreeMap<String, UserToken>,
    /// The audit log, in the order appended.
    audit: Vec<AuditEntry>,
    /// Project id → the folder it owns.
    folders: BTreeMap<String, String>,
    /// Every scope's memories by path.
    memories: BTreeMap<(MemoryScope, String), MemoryRecord>,
    /// Schedules by id.
    schedules: BTreeMap<String, crate::schedules::Schedule>,
    /// Agent run id → the schedule it spends for.
    schedule_runs: BTreeMap<String, String>,
    /// Invited project members by project and user id.
    members: BTreeMap<(String, String), crate::members::ProjectMember>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl State {
    /// Moves run `id`'s agent run, if it has one still active, to the
    /// status its record just took (what the SQL backends' trigger does
    /// in the record's own statement; see [`AgentRunStatus`]).
    fn record_moved(&mut self, id: &str) {
        let Some(record) = self.runs.get(id) else {
            return;
        };
        let Some(run) = self.agent_runs.get_mut(id).filter(|r| r.status.is_active()) else {
            return;
        };
        run.status = AgentRunStatus::of_record(record.status);
        if run.status.is_active() {
            run.completed_at = None;
            run.end_reason = None;
        } else {
            run.completed_at = Some(record.updated_at);
            run.end_reason.clone_from(&record.end_reason);
        }
    }

    /// Deletes a chat and everything hanging off it.
    fn remove_chat(&mut self, id: &str) {
        if self.chats.remove(id).is_none() {
            return;
        }
        let children: Vec<String> = self
            .chats
            .values()
            .filter(|row| {
                row.chat
                    .minion
                    .as_ref()
                    .is_some_and(|m| m.parent_chat_id == id)
            })
            .map(|row| row.chat.id.clone())
            .collect();
        for child in children {
            self.remove_chat(&child);
        }
        self.attachments
            .retain(|_, a| a.meta.chat_id.as_deref() != Some(id));
        let runs: Vec<String> = self
            .runs
            .values()
            .filter(|r| r.chat_id.as_deref() == Some(id))
            .map(|r| r.id.clone())
            .collect();
        for run in runs {
            self.runs.remove(&run);
            self.events.remove(&run);
            self.steps.remove(&run);
        }
        for conversation in self.conversations.values_mut() {
            if conversation.chat_id.as_deref() == Some(id) {
                conversation.chat_id = None;
            }
        }
    }

    fn remove_task(&mut self, id: &str) {
        self.tasks.remove(id);
        self.schedules.retain(|_, s| s.task_id != id);
        // An agent run's record and event log share its id.
        let runs: Vec<String> = self
            .agent_runs
            .values()
            .filter(|r| r.task_id == id)
            .map(|r| r.id.clone())
            .collect();
        for run in &runs {
            self.runs.remove(run);
            self.events.remove(run);
            self.steps.remove(run);
        }
        self.agent_runs.retain(|_, r| r.task_id != id);
        let runs = &self.agent_runs;
        self.decisions.retain(|run_id, _| runs.contains_key(run_id));
        self.conversations.retain(|_, c| c.task_id != id);
    }

    fn remove_project(&mut self, id: &str) {
        self.projects.remove(id);
        self.folders.remove(id);
        self.members.retain(|(project, _), _| project != id);
        let chats: Vec<String> = self
            .chats
            .values()
            .filter(|row| row.chat.project_id == id)
            .map(|row| row.chat.id.clone())
            .collect();
        for chat in chats {
            self.remove_chat(&chat);
        }
        self.attachments.retain(|_, a| a.meta.project_id != id);
        self.files.retain(|(project, _), _| project != id);
        self.webhook_deliveries.retain(|d| d.project_id != id);
        let scope = MemoryScope::project(id);
        self.memories.retain(|(owner, _), _| *owner != scope);
        let tasks: Vec<String> = self
            .tasks
            .values()
            .filter(|t| t.project_id == id)
            .map(|t| t.id.clone())
            .collect();
        for task in tasks {
            self.remove_task(&task);
        }
    }
}

/// One budget's spend in one period: scope, metric, period, period key.
type SpendKey = (BudgetScope, BudgetMetric, BudgetPeriod, String);

/// Spent and reserved of one budget in one period.
#[derive(Debug, Default, Clone, Copy)]
struct Counted {
    spent: i64,
    reserved: i64,
}

/// Every scope's budgets and spend (see `budgets.rs`).
#[derive(Debug, Default)]
struct Budgets {
    limits: BTreeMap<BudgetScope, Vec<BudgetLimit>>,
    spend: BTreeMap<SpendKey, Counted>,
    /// Hold id → what it reserved, where, and when.
    holds: BTreeMap<String, Hold>,
}

/// What one hold reserved, and when (Unix ms).
#[derive(Debug, Default)]
struct Hold {
    at: i64,
    taken: Vec<(SpendKey, i64)>,
}

/// Sorts records oldest first, ties by id.
fn sort_by_created<T>(items: &mut [T], key: impl Fn(&T) -> (i64, &str)) {
    items.sort_by(|a, b| key(a).cmp(&key(b)));
}
