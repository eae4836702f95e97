//! What an agent run runs in: its task and project, and preparing the
//! conversation, its chat and the first message; creating an agent run
//! (its record the runtime's); the order of the chain.

use std::path::PathBuf;

use agentloop_agui::FrontendToolSpec;
use agentloop_storage::model::{
    AgentRun, AgentRunStart, AgentRunStatus, AgentType, Chat, Conversation, Project, RunRecord,
    Task, now_millis,
};
use agentloop_storage::{ProjectRole, StorageError, StorageResult, Store};
use agentloop_types::Message;
use serde_json::json;

use crate::config::{AgentPrompts, ServerConfig};

use crate::state::AppState;

/// A task with the project it belongs to.
#[derive(Debug, Clone)]
pub struct TaskContext {
    /// The task.
    pub task: Task,
    /// Its project.
    pub project: Project,
    /// The user owning the project.
    pub owner: String,
    /// The project's repository folder.
    pub repo: PathBuf,
    /// The role in the project of the user it was loaded for (see
    /// `http::service::owned_task`); `None` when the server loaded it for
    /// itself (a chain's next link, a schedule, recovery), which acts as
    /// the owner.
    pub access: Option<ProjectRole>,
}

/// What the client starting an agent run gives it beyond its agent.
#[derive(Debug, Default, Clone, Copy)]
pub struct StartInput<'a> {
    /// Tools the client runs itself (an AG-UI run's front-end tools).
    pub frontend_tools: &'a [FrontendToolSpec],
    /// The text of the request that starts the run (an A2A message, an
    /// AG-UI user message): the run's first message carries it after the
    /// agent's prompt, so the model reads it without opening a file.
    pub request: Option<&'a str>,
    /// The schedule whose tick starts the run: the run spends against
    /// the schedule's budgets (and so do the runs chained after it).
    pub schedule: Option<&'a str>,
}

/// The owner of a project (`settings.owner`).
pub fn project_owner(project: &Project) -> Option<&str> {
    project.settings.get("owner").and_then(|v| v.as_str())
}

/// The repository folder of a project (`settings.repo_folder`).
pub fn project_repo(project: &Project) -> Option<PathBuf> {
    project
        .settings
        .get("repo_folder")
        .and_then(|v| v.as_str())
        .map(PathBuf::from)
}

/// Loads a task with its project.
pub async fn load_task_context(store: &dyn Store, task_id: &str) -> StorageResult<TaskContext> {
    let task = store.get_task(task_id).await?;
    let project = store.get_project(&task.project_id).await?;
    let owner = project_owner(&project)
        .ok_or_else(|| StorageError::not_found("task", task_id))?
        .to_owned();
    let repo = project_repo(&project)
        .ok_or_else(|| StorageError::Invalid(format!("project {} has no folder", project.id)))?;
    Ok(TaskContext {
        task,
        project,
        owner,
        repo,
        access: None,
    })
}

/// Why an agent run could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The task already has a running or waiting agent run (the one
    /// given, if it is still active when read back).
    #[error("an agent is already running or waiting for this task")]
    Conflict(Option<Box<AgentRun>>),
    /// The task is marked done (its workflow is complete): no agent starts
    /// on it until it is reopened.
    #[error("{}", TASK_DONE)]
    Done,
    /// The store failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// Why no agent starts on a task marked done.
pub const TASK_DONE: &str = "this task is marked done (its workflow is complete), so no agent \
starts on it; reopen it first (mark it not done: PUT /api/tasks/{taskId}/workflow-complete \
with {\"complete\": false}) to run an agent again";

/// An agent run just created, with what executing it first reads: its task
/// and the chat its conversation is held in.
#[derive(Debug, Clone)]
pub struct CreatedRun {
    /// The agent run.
    pub run: AgentRun,
    /// Its task.
    pub ctx: TaskContext,
    /// The chat of its conversation, holding its first message.
    pub chat: Chat,
    /// The chat's first message.
    pub first_message: Message,
    /// Its run record.
    pub record: RunRecord,
    /// Whether its record was created under this instance's lease.
    pub leased: bool,
    /// The schedule it spends for, if any.
    pub schedule_id: Option<String>,
}

/// Who starts an agent run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartedBy {
    /// A person: a new chain of the task begins with the run (see
    /// [`crate::chain_bounds`]), planning aside, which is never chained;
    /// the audit entry of the request starting it is written with it.
    Person,
    /// Chaining, as the chain's next link.
    Chain,
}

/// Creates an agent run ready to execute, in one write (see
/// [`agentloop_storage::TaskStore::start_agent_run`]): the agent run
/// linked to its conversation, the chat holding the first message, and the
/// run record under this instance's lease (unless a durable engine
/// executes runs: it takes the lease itself). The database refuses a
/// second running one per task. [`crate::drive::start_agent_run`] then
/// executes it. `run_id` is the new run's id. A task marked done is
/// refused ([`StartError::Done`]). When a person starts it, the same
/// write begins the task's chain and appends the audit entry of the
/// request starting it (see [`crate::audit::StartEntry`]), so a refused
/// start leaves neither.
pub async fn create_agent_run(
    state: &AppState,
    ctx: &TaskContext,
    agent: AgentType,
    run_id: &str,
    input: StartInput<'_>,
    by: StartedBy,
) -> Result<CreatedRun, StartError> {
    if ctx.task.workflow_complete {
        return Err(StartError::Done);
    }
    let store = &*state.store;
    let now = now_millis();
    let mut run = AgentRun {
        id: run_id.to_owned(),
        task_id: ctx.task.id.clone(),
        agent_type: agent,
        status: AgentRunStatus::Running,
        conversation_id: None,
        created_at: now,
        completed_at: None,
        end_reason: None,
    };
    let chat = new_chat(&state.config, ctx, &run, now, input.frontend_tools);
    let conversation = Conversation {
        id: crate::ids::new_id(),
        task_id: ctx.task.id.clone(),
        chat_id: Some(chat.id.clone()),
        session_id: None,
        created_at: now,
    };
    run.conversation_id = Some(conversation.id.clone());
    let leased = state.config.dispatch.is_none();
    // The runtime's record of the run, stored in the same write.
    let record =
        crate::hosting::runtime(state, Vec::new(), None).hosted_record(&run.id, &chat.id, leased);
    let person = by == StartedBy::Person;
    // A chain's next link spends for the schedule its chain spends for.
    let schedule_id = match by {
        StartedBy::Person => input.schedule.map(str::to_owned),
        StartedBy::Chain => store.latest_run_schedule(&ctx.task.id).await?,
    };
    let audit = person
        .then(|| crate::audit::StartEntry::pending(&ctx.project.id, &run.id, now))
        .flatten();
    let start = AgentRunStart {
        first_message: first_message(&state.config.prompts, ctx, &run, input.request),
        agent_run: run,
        chat,
        conversation,
        record,
        begins_chain: person && agent != AgentType::Planification,
        audit: audit.as_ref().map(|pending| pending.entry.clone()),
        schedule_id,
    };
    match store.start_agent_run(&start).await {
        Ok(()) => {
            if let Some(pending) = audit {
                pending.written();
            }
        }
        Err(StorageError::ActiveAgentRunExists { .. }) => {
            let active = store.active_agent_run(&ctx.task.id).await?;
            return Err(StartError::Conflict(active.map(Box::new)));
        }
        Err(e) => return Err(e.into()),
    }
    let AgentRunStart {
        agent_run,
        chat,
        first_message,
        record,
        schedule_id,
        ..
    } = start;
    state.notify_run_status(&ctx.owner, &ctx.project, &agent_run, agent_run.status);
    Ok(CreatedRun {
        run: agent_run,
        ctx: ctx.clone(),
        chat,
        first_message,
        record,
        leased,
        schedule_id,
    })
}

/// The lease length in ms.
pub fn ttl_ms(state: &AppState) -> i64 {
    state.lease_ttl_ms()
}

/// Makes sure an agent run has its conversation (with a chat holding the
/// first message); safe to repeat after a crash at any point. The run's
/// record is the runtime's: it creates one for a run that has none as it
/// first hosts it (see [`agentloop_runtime::HostedRun`]), and executes it
/// in the chat, under its lease, into its event log.
pub async fn prepare(
    store: &dyn Store,
    config: &ServerConfig,
    ctx: &TaskContext,
    mut run: AgentRun,
) -> StorageResult<AgentRun> {
    if run.conversation_id.is_none() {
        run.conversation_id = Some(create_conversation(store, config, ctx, &run).await?);
    }
    Ok(run)
}

/// Creates an agent run's chat (holding its first message) and its
/// conversation, and links the run to it. Returns the conversation's id.
async fn create_conversation(
    store: &dyn Store,
    config: &ServerConfig,
    ctx: &TaskContext,
    run: &AgentRun,
) -> StorageResult<String> {
    let chat = new_chat(config, ctx, run, now_millis(), &[]);
    store.create_chat(&chat).await?;
    // The first message is saved before the run is linked: a retry
    // skips a linked run, so linking must come last.
    store
        .save_message(&chat.id, &first_message(&config.prompts, ctx, run, None))
        .await?;
    let conversation = Conversation {
        id: crate::ids::new_id(),
        task_id: ctx.task.id.clone(),
        chat_id: Some(chat.id.clone()),
        session_id: None,
        created_at: chat.created_at,
    };
    store.create_conversation(&conversation).await?;
    store.link_conversation(&run.id, &conversation.id).await?;
    Ok(conversation.id)
}

/// The chat of a new agent run's conversation (it holds no message yet),
/// its settings keeping the front-end tools the run offers.
fn new_chat(
    config: &ServerConfig,
    ctx: &TaskContext,
    run: &AgentRun,
    now: i64,
    frontend_tools: &[FrontendToolSpec],
) -> Chat {
    let mut settings = chat_settings(config, ctx, run);
    if !frontend_tools.is_empty() {
        settings[FRONTEND_TOOLS] = json!(frontend_tools);
    }
    Chat {
        id: crate::ids::new_id(),
        project_id: ctx.project.id.clone(),
        title: format!("{} agent for task {}", run.agent_type.as_str(), ctx.task.id),
        settings,
        totals: Default::default(),
        minion: None,
        created_at: now,
        updated_at: now,
    }
}

/// The settings of an agent run's chat: the loop options the runtime
/// builds (the project's `model` setting wins over the server's).
pub fn chat_settings(
    config: &ServerConfig,
    ctx: &TaskContext,
    run: &AgentRun,
) -> serde_json::Value {
    let model = run_model(config, ctx);
    json!({
        "agent_run_id": run.id,
        "model": model,
        "max_tokens": config.max_tokens,
        "max_iterations": config.max_iterations,
        "system_prompt": crate::project_instructions::with_system(&ctx.repo, format!(
            "{}{} in project {}. The fs tool works in the project \
    folder; the task document is {}.",
            agent_preamble(run.agent_type),
            ctx.task.id,
            ctx.project.name,
            crate::config::task_doc_path(&ctx.task.id)
        )),
    })
}

/// How the system prompt of an agent run's chat begins, naming its agent
/// (the task id follows).
fn agent_preamble(agent: AgentType) -> String {
    format!("You are the {} agent of task ", agent.as_str())
}

/// The chat settings' key holding the tools the client of the run runs
/// itself (an AG-UI run's front-end tools).
const FRONTEND_TOOLS: &str = "frontend_tools";

/// The front-end tools a run's chat settings offer (none when the key is
/// absent or unreadable; they were checked when the run was created).
pub fn frontend_tool_specs(settings: &serde_json::Value) -> Vec<FrontendToolSpec> {
    settings
        .get(FRONTEND_TOOLS)
        .and_then(|tools| serde_json::from_value(tools.clone()).ok())
        .unwrap_or_default()
}

/// The agent a system prompt of [`chat_settings`] names, if it is one: a
/// model may act on which agent of the chain it is (the shipped demo does).
pub fn agent_of_system_prompt(system_prompt: &str) -> Option<AgentType> {
    [
        AgentType::Planification,
        AgentType::Implementation,
        AgentType::Review,
    ]
    .into_iter()
    .find(|agent| system_prompt.starts_with(&agent_preamble(*agent)))
}

/// The model a task's runs call: the project's `model` setting, else the
/// server's.
pub fn run_model<'a>(config: &'a ServerConfig, ctx: &'a TaskContext) -> &'a str {
    ctx.project
        .settings
        .get("model")
        .and_then(|v| v.as_str())
        .unwrap_or(&config.model)
}

/// The first message of an agent run: its agent's prompt, then the text
/// of the request that started it, if one did.
pub fn first_message(
    prompts: &AgentPrompts,
    ctx: &TaskContext,
    run: &AgentRun,
    request: Option<&str>,
) -> Message {
    let doc = crate::config::task_doc_path(&ctx.task.id);
    let mut text = prompts.message(run.agent_type, &doc, &ctx.task.id);
    if let Some(request) = request.map(str::trim).filter(|r| !r.is_empty()) {
        text.push_str("\n\nThe request that started this run:\n\n");
        text.push_str(request);
    }
    Message::user_text(format!("{}-prompt", run.id), text)
}

/// The agent that follows `agent` in the chain, if any.
pub fn next_agent(agent: AgentType) -> Option<AgentType> {
    match agent {
        AgentType::Planification => None,
        AgentType::Implementation => Some(AgentType::Review),
        AgentType::Review => Some(AgentType::Implementation),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_engine::scripted::ScriptedProvider;

    #[test]
    fn the_system_prompt_names_its_agent() {
        let config = ServerConfig::new(ScriptedProvider::new([]), "m");
        let ctx = TaskContext {
            task: Task {
                id: "t1".to_owned(),
                project_id: "p1".to_owned(),
                title: "t".to_owned(),
                workflow_complete: false,
                chain: Default::default(),
                created_at: 0,
                updated_at: 0,
            },
            project: Project {
                id: "p1".to_owned(),
                // A project named like an agent does not confuse it.
                name: "You are the review agent of task x".to_owned(),
                settings: json!({}),
                approval_mode: None,
                created_at: 0,
                updated_at: 0,
            },
            owner: "u1".to_owned(),
            repo: PathBuf::from("/tmp"),
            access: None,
        };
        for agent in [
            AgentType::Planification,
            AgentType::Implementation,
            AgentType::Review,
        ] {
            let run = AgentRun {
                id: "r1".to_owned(),
                task_id: "t1".to_owned(),
                agent_type: agent,
                status: AgentRunStatus::Running,
                conversation_id: None,
                created_at: 0,
                completed_at: None,
                end_reason: None,
            };
            let settings = chat_settings(&config, &ctx, &run);
            let prompt = settings["system_prompt"].as_str().unwrap_or_default();
            assert_eq!(agent_of_system_prompt(prompt), Some(agent), "{prompt}");
        }
        assert_eq!(agent_of_system_prompt("You are a helpful assistant."), None);
    }
}
