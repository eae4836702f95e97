//! The conformance suite: every backend must pass every case. Each case
//! takes a fresh, empty store.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

mod agent_runs;
mod budgets;
mod cases;
mod chains;
mod concurrency;
mod content;
mod export;
mod folders;
mod handles;
mod inbox;
mod logged_messages;
mod members;
mod memories;
mod runs;
mod schedules;
mod steps;
mod users;
mod webhooks;

use std::sync::Arc;

use agentloop_storage::Store;
use agentloop_storage::model::{
    AgentRun, AgentRunStart, AgentRunStatus, AgentType, Chat, Conversation, MinionLink, Project,
    RunRecord, RunStatus, Task,
};
use agentloop_types::{ContentBlock, Message, Role, TokenTotals, ToolResultBlock, ToolUseBlock};

pub use agent_runs::*;
pub use budgets::*;
pub use cases::*;
pub use chains::*;
pub use concurrency::*;
pub use content::*;
pub use export::*;
pub use folders::*;
pub use handles::*;
pub use inbox::*;
pub use logged_messages::*;
pub use members::*;
pub use memories::*;
pub use runs::*;
pub use schedules::*;
pub use steps::*;
pub use users::*;
pub use webhooks::*;

/// A store under test and whatever must be cleaned up after it.
pub struct Fixture {
    pub store: Arc<dyn Store>,
    pub guard: Option<Box<dyn std::any::Any + Send>>,
}

impl Fixture {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self { store, guard: None }
    }
}

/// Generates one `#[tokio::test]` per case for a backend. `$open` is an
/// expression giving a future of `Option<Fixture>` (`None` skips).
#[macro_export]
macro_rules! conformance_suite {
    ($open:expr) => {
        $crate::conformance_suite!(@cases $open;
            projects_crud, project_approval_modes, chats_and_minion_chats, message_order_and_replace,
            checkpoints_roll_back, cascade_delete_chat, cascade_delete_project,
            attachments_and_loader, files_as_vfs, runs_leases_and_events,
            tasks_agent_runs_conversations, waiting_agent_runs_and_decisions,
            an_agent_run_has_its_records_status,
            concurrent_appends_lose_nothing, concurrent_event_appends_land_in_order,
            concurrent_active_agent_runs,
            concurrent_totals_and_leases, large_messages, non_ascii_text,
            export_import_round_trip, users_create_list_get, user_tokens, token_expiry_revocation_and_user_deletion,
            task_chains, audit_log_filters_and_order,
            non_ascii_user_names, concurrent_user_creation,
            project_folders_never_overlap, concurrent_folder_claims,
            runs_by_status_and_last, lease_renewals, cascade_delete_task,
            finished_events_read_back_whole, logged_messages_read_back_from_their_events,
            webhook_deliveries_log, agent_run_starts_whole_or_not_at_all,
            a_start_dropped_unanswered_is_whole_or_absent, concurrent_agent_run_starts,
            concurrent_starts_are_stored_or_refused_each_alone,
            memories_by_scope_and_path, memories_as_files, memories_recalled_by_relevance,
            inbox_keeps_messages_until_delivered, schedules_claim_each_tick_once,
            run_steps_kept_and_retained,
            budgets_reserve_settle_and_roll_over, concurrent_reservations_never_overspend,
            stale_holds_are_released_by_age, agent_runs_remember_their_schedule,
            project_members_and_roles,
        );
    };
    (@cases $open:expr; $($case:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $case() {
            let Some(fixture) = $open.await else {
                eprintln!("skipped {}: backend not configured", stringify!($case));
                return;
            };
            conformance::$case(fixture.store.clone()).await;
            drop(fixture);
        }
    )*};
}

pub fn project(id: &str, created_at: i64) -> Project {
    Project {
        id: id.into(),
        name: format!("project {id}"),
        settings: serde_json::json!({ "model": "m", "n": created_at }),
        approval_mode: None,
        created_at,
        updated_at: created_at,
    }
}

pub fn chat(id: &str, project_id: &str, created_at: i64) -> Chat {
    Chat {
        id: id.into(),
        project_id: project_id.into(),
        title: format!("chat {id}"),
        settings: serde_json::json!({ "system": "be brief" }),
        totals: TokenTotals::default(),
        minion: None,
        created_at,
        updated_at: created_at,
    }
}

pub fn minion_chat(id: &str, parent: &Chat, tool_use_id: &str, created_at: i64) -> Chat {
    Chat {
        minion: Some(MinionLink {
            parent_chat_id: parent.id.clone(),
            tool_use_id: tool_use_id.into(),
        }),
        ..chat(id, &parent.project_id, created_at)
    }
}

pub fn task(id: &str, project_id: &str) -> Task {
    Task {
        id: id.into(),
        project_id: project_id.into(),
        title: format!("task {id}"),
        workflow_complete: false,
        chain: Default::default(),
        created_at: 1,
        updated_at: 1,
    }
}

pub fn agent_run(id: &str, task_id: &str, status: AgentRunStatus, created_at: i64) -> AgentRun {
    AgentRun {
        id: id.into(),
        task_id: task_id.into(),
        agent_type: AgentType::Implementation,
        status,
        conversation_id: None,
        created_at,
        completed_at: None,
        end_reason: None,
    }
}

/// Everything agent run `id` of task `task_id` (in project `project_id`)
/// starts with, its record leased to `owner`: chat `{id}-chat`, message
/// `{id}-first`, conversation `{id}-conv`.
pub fn agent_run_start(id: &str, task_id: &str, project_id: &str, owner: &str) -> AgentRunStart {
    let chat = chat(&format!("{id}-chat"), project_id, 1);
    AgentRunStart {
        agent_run: AgentRun {
            conversation_id: Some(format!("{id}-conv")),
            ..agent_run(id, task_id, AgentRunStatus::Running, 1)
        },
        first_message: Message::user_text(format!("{id}-first"), "plan the task"),
        conversation: Conversation {
            id: format!("{id}-conv"),
            task_id: task_id.into(),
            chat_id: Some(chat.id.clone()),
            session_id: None,
            created_at: 1,
        },
        record: RunRecord {
            id: id.into(),
            chat_id: Some(chat.id.clone()),
            status: RunStatus::Running,
            state: None,
            result: None,
            pending_tool_call: None,
            end_reason: None,
            lease_owner: Some(owner.into()),
            lease_expires_at: Some(1_000),
            created_at: 1,
            updated_at: 1,
        },
        chat,
        begins_chain: false,
        audit: None,
        schedule_id: None,
    }
}

/// An assistant message calling a tool, and the user message answering it.
pub fn tool_exchange(prefix: &str, call_id: &str) -> (Message, Message) {
    let call = Message::new(
        format!("{prefix}-call"),
        Role::Assistant,
        vec![
            ContentBlock::text("let me check"),
            ContentBlock::ToolUse(ToolUseBlock {
                id: call_id.into(),
                name: "minion".into(),
                input: serde_json::json!({ "task": "look", "depth": 1 }).into(),
            }),
        ],
    );
    let result = Message::new(
        format!("{prefix}-result"),
        Role::User,
        vec![ContentBlock::ToolResult(ToolResultBlock {
            tool_use_id: call_id.into(),
            content: "done".into(),
            is_error: false,
            rendering_groups: Vec::new(),
        })],
    );
    (call, result)
}

/// Creates project `p` and chat `c` and returns the chat.
pub async fn project_with_chat(store: &dyn Store) -> Chat {
    store.create_project(&project("p", 1)).await.unwrap();
    let c = chat("c", "p", 1);
    store.create_chat(&c).await.unwrap();
    c
}
