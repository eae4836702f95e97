//! The API's use cases, one function each: what REST, MCP, A2A and AG-UI
//! all call. A use case takes the authenticated user and typed input
//! (see [`super::requests`]), checks that the user owns what it names
//! (another user's project, task or run is "not found", as an unknown
//! one), asks the store and the run lifecycle, and answers records;
//! handlers shape those for their protocol.
//!
//! Nothing here calls a handler, and no handler asks the store.

use agentloop_agui::FrontendToolSpec;
use agentloop_storage::model::{
    AgentRun, AgentRunDecision, AgentRunStatus, AgentType, EndReason, Project, Task,
    WebhookDelivery, now_millis,
};
use agentloop_storage::{StorageError, WEBHOOK_DELIVERIES_KEPT};
use agentloop_tools::vfs::DirJail;
use agentloop_types::vfs::{Vfs, VfsError};
use agentloop_types::{Decision, PendingCall, TokenTotals};
use axum::http::StatusCode;
use serde_json::{Value, json};

use super::error::ApiError;
use super::extract::{MAX_MODEL_CHARS, MAX_TITLE_CHARS, check_id, required_text, too_long};
use super::requests::{
    Approvals, Change, NewProject, NewTask, ProjectChange, ShellQuota, WebhooksChange,
};
use super::responses::{RunConflict, StartConflict};
use crate::config::task_doc_path;
use crate::drive::{self, start_agent_run};
use crate::folders::{self, FolderError};
use crate::ids::{new_id, new_token};
use crate::runner::{
    RunInput, StartError, TaskContext, frontend_tool_specs, load_task_context, project_owner,
};
use crate::shapes::{AgentRunShape, to_json};
use crate::state::AppState;
use crate::users::{User, issue_token, revoke_token};
use crate::waiting::{self, DecideError};
use crate::webhooks::registry::{self, Registration};

// ---- ownership ----------------------------------------------------------

/// The user's project with that id (400 for a malformed id, 404 for an
/// unknown project or another user's).
pub async fn owned_project(state: &AppState, user: &User, id: &str) -> Result<Project, ApiError> {
    check_id(id, "project")?;
    let project = state.store.get_project(id).await?;
    if project_owner(&project) == Some(user.id.as_str()) {
        Ok(project)
    } else {
        Err(ApiError::not_found("Project not found"))
    }
}

/// The user's task with that id (400 for a malformed id, 404 for an
/// unknown task or another user's).
pub async fn owned_task(state: &AppState, user: &User, id: &str) -> Result<TaskContext, ApiError> {
    check_id(id, "task")?;
    match load_task_context(&*state.store, id).await {
        Ok(ctx) if ctx.owner == user.id => Ok(ctx),
        Ok(_) | Err(StorageError::NotFound { .. }) => Err(ApiError::not_found("Task not found")),
        Err(e) => Err(e.into()),
    }
}

/// The user's agent run with its task (400 for a malformed id, 404 for an
/// unknown run or another user's).
pub async fn owned_run(
    state: &AppState,
    user: &User,
    run_id: &str,
) -> Result<(AgentRun, TaskContext), ApiError> {
    check_id(run_id, "agent run")?;
    let run = match state.store.get_agent_run(run_id).await {
        Ok(run) => run,
        Err(StorageError::NotFound { .. }) => {
            return Err(ApiError::not_found("Agent run not found"));
        }
        Err(e) => return Err(e.into()),
    };
    match owned_task(state, user, &run.task_id).await {
        Ok(ctx) => Ok((run, ctx)),
        Err(e) if e.status == StatusCode::NOT_FOUND => {
            Err(ApiError::not_found("Agent run not found"))
        }
        Err(e) => Err(e),
    }
}

// ---- session --------------------------------------------------------------

/// Signs in with a bearer token: the user and a new session token.
pub async fn sign_in(state: &AppState, token: &str) -> Result<(User, String), ApiError> {
    let user = super::extract::authenticate(state, token).await?;
    let session = issue_token(&*state.store, &user.id).await?;
    Ok((user, session))
}

/// Signs out: the session's token stops working.
pub async fn sign_out(state: &AppState, session: &str) -> Result<(), ApiError> {
    Ok(revoke_token(&*state.store, session).await?)
}

// ---- projects -------------------------------------------------------------

/// The user's projects.
pub async fn list_projects(state: &AppState, user: &User) -> Result<Vec<Project>, ApiError> {
    let projects = state.store.list_projects().await?;
    Ok(projects
        .into_iter()
        .filter(|p| project_owner(p) == Some(user.id.as_str()))
        .collect())
}

/// Creates a project and its folder.
pub async fn create_project(
    state: &AppState,
    user: &User,
    input: NewProject,
) -> Result<Project, ApiError> {
    let name = required_text(input.name.as_deref(), "name", MAX_TITLE_CHARS)?;
    let Some(requested) = input.repo_folder.as_deref() else {
        return Err(ApiError::bad_request(
            "repoFolder is required: the project's folder, relative to the server's \
             projects folder or absolute inside it",
        ));
    };
    let model = match input.model {
        None => None,
        Some(model) if model.chars().count() > MAX_MODEL_CHARS => {
            return Err(too_long("model", model.chars().count(), MAX_MODEL_CHARS));
        }
        Some(model) if !model.trim().is_empty() => Some(model),
        Some(_) => return Err(ApiError::bad_request("model must be a non-empty string")),
    };
    let (approval_mode, mut approvals) = match input.approvals {
        None => (None, None),
        Some(Approvals::Mode(mode)) => (Some(mode), None),
        Some(Approvals::PerTool(value)) => (None, Some(value)),
    };
    if let Some(value) = input.tool_approvals {
        approvals = Some(value);
    }
    let mcp_servers = match input.mcp_servers {
        None | Some(Value::Null) => None,
        Some(servers) if state.config.allow_project_mcp => {
            agentloop_mcp::McpConfig::from_json(&json!({ "mcpServers": servers }).to_string())
                .map_err(|e| ApiError::bad_request(format!("mcpServers: {e}")))?;
            Some(servers)
        }
        Some(_) => {
            return Err(ApiError::bad_request(
                "mcpServers: this server does not run project MCP servers \
                 (its operator can allow them with --allow-project-mcp)",
            ));
        }
    };
    let shell = check_shell(state, input.shell)?;
    let quota = input.shell_quota.map(check_quota).transpose()?.flatten();
    let agents = input.agents.map(check_agents).transpose()?.flatten();
    let planned =
        folders::plan(state.config.projects_root.as_deref(), requested).map_err(folder_error)?;
    if let Some(owner) = folder_owner(&planned.path).await
        && owner != user.id
    {
        return Err(folder_unavailable());
    }
    let mut settings = json!({ "owner": user.id, "repo_folder": planned.path });
    if let Some(model) = model {
        settings["model"] = json!(model);
    }
    if let Some(servers) = mcp_servers {
        settings["mcp_servers"] = servers;
    }
    if let Some(approvals) = approvals {
        settings["approvals"] = approvals.0;
    }
    if shell == Some(true) {
        settings["shell"] = json!(true);
    }
    if let Some(quota) = quota {
        settings["shell_quota"] = quota;
    }
    if let Some(agents) = agents {
        settings["agents"] = agents;
    }
    let now = now_millis();
    let project = Project {
        id: new_id(),
        name: name.to_owned(),
        settings,
        approval_mode,
        created_at: now,
        updated_at: now,
    };
    match state
        .store
        .create_project_in_folder(&project, &planned.key())
        .await
    {
        Ok(()) => {}
        Err(StorageError::FolderTaken { project_id, .. }) => {
            let own = match state.store.get_project(&project_id).await {
                Ok(other) => project_owner(&other) == Some(user.id.as_str()),
                Err(StorageError::NotFound { .. }) => false,
                Err(e) => return Err(e.into()),
            };
            return Err(if own {
                ApiError::new(
                    StatusCode::CONFLICT,
                    format!(
                        "repoFolder is, contains or lies inside the folder of your project \
                         {project_id}"
                    ),
                )
            } else {
                folder_unavailable()
            });
        }
        Err(e) => return Err(e.into()),
    }
    let created = match folders::create(&planned) {
        Ok(created) => created,
        Err(e) => {
            state.store.delete_project(&project.id).await?;
            return Err(folder_error(e));
        }
    };
    if let Err(e) = mark_owner(&planned.path, &user.id).await {
        folders::remove_created(&created);
        state.store.delete_project(&project.id).await?;
        return Err(ApiError::bad_request(format!(
            "cannot write into repoFolder: {e}"
        )));
    }
    Ok(project)
}

/// Changes a project's approval policy, per-tool policies, shell tool,
/// shell quota and agents. Runs follow an approval change from their
/// next model turn that calls a tool, a shell change from their next
/// start.
pub async fn update_project(
    state: &AppState,
    user: &User,
    id: &str,
    change: ProjectChange,
) -> Result<Project, ApiError> {
    let shell = match change.shell {
        Change::Set(shell) => check_shell(state, Some(shell))?,
        Change::Keep | Change::Clear => None,
    };
    let quota = match change.shell_quota {
        Change::Keep => None,
        Change::Clear => Some(None),
        Change::Set(quota) => Some(check_quota(quota)?),
    };
    let agents = match change.agents {
        Change::Keep => None,
        Change::Clear => Some(None),
        Change::Set(agents) => Some(check_agents(agents)?),
    };
    let mode = match change.approvals {
        Change::Keep => None,
        Change::Clear => Some(None),
        Change::Set(Approvals::Mode(mode)) => Some(Some(mode)),
        // Only a project's creation takes per-tool policies in `approvals`.
        Change::Set(Approvals::PerTool(_)) => {
            return Err(ApiError::bad_request(Approvals::MODE_ONLY));
        }
    };
    let mut project = owned_project(state, user, id).await?;
    if let Some(mode) = mode {
        project.approval_mode = mode;
    }
    match change.tool_approvals {
        Change::Keep => {}
        Change::Clear => set_setting(&mut project, "approvals", None),
        Change::Set(value) => set_setting(&mut project, "approvals", Some(value.0)),
    }
    if let Some(shell) = shell {
        set_setting(&mut project, "shell", shell.then_some(json!(true)));
    }
    if let Some(quota) = quota {
        set_setting(&mut project, "shell_quota", quota);
    }
    if let Some(agents) = agents {
        set_setting(&mut project, "agents", agents);
    }
    project.updated_at = now_millis();
    state.store.update_project(&project).await?;
    Ok(project)
}

/// Deletes a project; refused (409) while one of its runs is active.
pub async fn delete_project(state: &AppState, user: &User, id: &str) -> Result<(), ApiError> {
    let project = owned_project(state, user, id).await?;
    for task in state.store.list_tasks(&project.id).await? {
        if let Some(run) = state.store.active_agent_run(&task.id).await? {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                format!(
                    "agent run {} is {} in this project",
                    run.id,
                    run.status.as_str()
                ),
            ));
        }
    }
    state.store.delete_project(&project.id).await?;
    Ok(())
}

/// Sets or removes one of a project's settings.
fn set_setting(project: &mut Project, key: &str, value: Option<Value>) {
    if !project.settings.is_object() {
        project.settings = json!({});
    }
    if let Some(settings) = project.settings.as_object_mut() {
        match value {
            Some(value) => {
                settings.insert(key.to_owned(), value);
            }
            None => {
                settings.remove(key);
            }
        }
    }
}

/// A project's agents, checked (see [`crate::project_agents`]); `None`
/// when empty.
fn check_agents(agents: Value) -> Result<Option<Value>, ApiError> {
    let agents =
        crate::project_agents::parse(&agents).map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok((!agents.is_empty()).then(|| json!(agents)))
}

/// A project's shell quota, checked: each bound from 1; `None` when it
/// sets none (the server's quota alone).
fn check_quota(quota: ShellQuota) -> Result<Option<Value>, ApiError> {
    const SHAPE: &str = "shell_quota must be null or an object of max_write_mb and \
                         max_write_files, whole numbers from 1";
    for (name, bound) in [
        ("max_write_mb", quota.max_write_mb),
        ("max_write_files", quota.max_write_files),
    ] {
        if bound == Some(0) {
            return Err(ApiError::bad_request(format!(
                "shell_quota.{name}: {SHAPE}"
            )));
        }
    }
    if quota.max_write_mb.is_none() && quota.max_write_files.is_none() {
        return Ok(None);
    }
    Ok(Some(crate::shapes::to_json(&quota)))
}

/// A request's `shell`: `true` only where this server offers the shell
/// tool.
fn check_shell(state: &AppState, shell: Option<bool>) -> Result<Option<bool>, ApiError> {
    if shell == Some(true) && state.config.shell_tool.is_none() {
        return Err(ApiError::bad_request(
            "shell: this server does not offer the shell tool \
             (its operator can allow it with --allow-shell)",
        ));
    }
    Ok(shell)
}

/// The 409 for a folder another user has, or had, a project in: it says
/// nothing of what is there.
fn folder_unavailable() -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "repoFolder is not available; choose another folder",
    )
}

/// Where a project folder records its owner, so that a folder left behind
/// by a deleted project is not handed to another user with its files.
const OWNER_MARK: &str = ".agentloop/owner";

/// The user recorded as the folder's owner, if it exists and has one.
async fn folder_owner(folder: &std::path::Path) -> Option<String> {
    let jail = DirJail::new(folder).ok()?;
    let owner = jail.read_to_string(OWNER_MARK).await.ok()?;
    Some(owner.trim().to_owned())
}

async fn mark_owner(folder: &std::path::Path, user_id: &str) -> Result<(), VfsError> {
    DirJail::new(folder)?
        .write(OWNER_MARK, user_id.as_bytes())
        .await
}

fn folder_error(error: FolderError) -> ApiError {
    match error {
        FolderError::Invalid(_) | FolderError::NotAFolder(_) | FolderError::Create { .. } => {
            ApiError::bad_request(error.to_string())
        }
        FolderError::Root { .. } => {
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, error.to_string())
        }
    }
}

// ---- tasks ------------------------------------------------------------------

/// The tasks of the user's project.
pub async fn list_tasks(
    state: &AppState,
    user: &User,
    project_id: &str,
) -> Result<Vec<Task>, ApiError> {
    let project = owned_project(state, user, project_id).await?;
    Ok(state.store.list_tasks(&project.id).await?)
}

/// Creates a task in the user's project, with its document (`# title`,
/// then the description).
pub async fn create_task(
    state: &AppState,
    user: &User,
    project_id: &str,
    input: NewTask,
) -> Result<TaskContext, ApiError> {
    let project = owned_project(state, user, project_id).await?;
    let title = required_text(input.title.as_deref(), "title", MAX_TITLE_CHARS)?;
    let description = input.description.as_deref().unwrap_or_default();
    let now = now_millis();
    let task = Task {
        id: new_id(),
        project_id: project.id.clone(),
        title: title.to_owned(),
        workflow_complete: false,
        created_at: now,
        updated_at: now,
    };
    state.store.create_task(&task).await?;
    let ctx = load_task_context(&*state.store, &task.id).await?;
    write_document(&ctx, &format!("# {title}\n\n{description}\n")).await?;
    Ok(ctx)
}

/// Deletes a task with its agent runs, their conversations (chats) and
/// event logs; refused (409, naming the run) while one of them runs or
/// waits. The task document stays in the project folder.
pub async fn delete_task(state: &AppState, user: &User, task_id: &str) -> Result<(), ApiError> {
    let ctx = owned_task(state, user, task_id).await?;
    let busy = |run: &AgentRun| {
        ApiError::new(
            StatusCode::CONFLICT,
            format!(
                "agent run {} is {} for this task; cancel it first",
                run.id,
                run.status.as_str()
            ),
        )
    };
    if let Some(run) = state.store.active_agent_run(&ctx.task.id).await? {
        return Err(busy(&run));
    }
    match state.store.delete_task(&ctx.task.id).await {
        Ok(()) => Ok(()),
        // A run started between the check and the delete.
        Err(StorageError::ActiveAgentRunExists { .. }) => {
            match state.store.active_agent_run(&ctx.task.id).await? {
                Some(run) => Err(busy(&run)),
                None => Err(ApiError::new(
                    StatusCode::CONFLICT,
                    "an agent run of this task is running or waiting; cancel it first",
                )),
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// The project folder as a jail: task documents are read and written
/// through it, so a link placed in the folder cannot lead outside.
fn project_jail(ctx: &TaskContext) -> Result<DirJail, ApiError> {
    DirJail::new(&ctx.repo).map_err(|e| {
        ApiError::new(
            StatusCode::CONFLICT,
            format!("the project folder is not usable: {e}"),
        )
    })
}

/// The task's document: its path in the project folder and its content.
pub async fn read_document(ctx: &TaskContext) -> Result<(String, String), ApiError> {
    let path = task_doc_path(&ctx.task.id);
    match project_jail(ctx)?.read_to_string(&path).await {
        Ok(content) => Ok((path, content)),
        Err(VfsError::NotFound(_)) => Err(ApiError::not_found("Task document not found")),
        Err(e) => Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("cannot read the task document: {e}"),
        )),
    }
}

/// Replaces the task's document.
pub async fn write_document(ctx: &TaskContext, content: &str) -> Result<(), ApiError> {
    let jail = project_jail(ctx)?;
    jail.write(&task_doc_path(&ctx.task.id), content.as_bytes())
        .await
        .map_err(|e| {
            ApiError::new(
                StatusCode::CONFLICT,
                format!("cannot write the task document: {e}"),
            )
        })
}

/// Mark Done (seed 004's workflow-complete): sets the task's flag; `true`
/// also force-completes its active runs, halting them where they run and
/// closing what they waited on.
pub async fn mark_done(
    state: &AppState,
    user: &User,
    task_id: &str,
    complete: bool,
) -> Result<(), ApiError> {
    let ctx = owned_task(state, user, task_id).await?;
    let completed = state
        .store
        .set_workflow_complete(&ctx.task.id, complete, now_millis())
        .await?;
    for run in &completed {
        if let Some(local) = state.local_run(&run.id) {
            local.halt(crate::state::Halt::Cancel);
        }
        waiting::close_pending(state, &ctx, run).await;
        drive::cancel_in_engine(state, &run.id).await;
        state.notify_run_status(&ctx.owner, &ctx.project, run, run.status);
    }
    Ok(())
}

// ---- agent runs -------------------------------------------------------------

/// Starts an agent run of the task.
pub async fn start_run(
    state: &AppState,
    ctx: &TaskContext,
    agent: AgentType,
    input: RunInput<'_>,
) -> Result<AgentRun, ApiError> {
    start_agent_run(state, ctx, agent, input)
        .await
        .map_err(start_error)
}

/// A run that could not start: a 409 naming the task's active run, or the
/// store's error.
fn start_error(err: StartError) -> ApiError {
    match err {
        StartError::Conflict(active) => ApiError {
            status: StatusCode::CONFLICT,
            body: to_json(&StartConflict {
                error: match active.as_deref() {
                    Some(run) if run.status == AgentRunStatus::Waiting => format!(
                        "An agent of this task is waiting for a decision (agent run {}): \
                         decide its pending calls or cancel it first",
                        run.id
                    ),
                    _ => "An agent is already running for this task".to_owned(),
                },
                running_agent: active.as_deref().map(AgentRunShape::of),
            }),
        },
        StartError::Done => ApiError {
            status: StatusCode::CONFLICT,
            body: to_json(&StartConflict {
                error: crate::runner::TASK_DONE.to_owned(),
                running_agent: None,
            }),
        },
        StartError::Storage(e) => e.into(),
    }
}

/// The task's agent runs, oldest first.
pub async fn list_runs(state: &AppState, ctx: &TaskContext) -> Result<Vec<AgentRun>, ApiError> {
    Ok(state.store.list_agent_runs(&ctx.task.id).await?)
}

/// The run as stored now.
pub async fn current_run(state: &AppState, run_id: &str) -> Result<AgentRun, ApiError> {
    Ok(state.store.get_agent_run(run_id).await?)
}

/// What a run shows beyond its record: its token totals (once it has a
/// conversation) and, while it waits, what it waits for.
pub struct RunDetails {
    /// Token totals of its conversation.
    pub tokens: Option<TokenTotals>,
    /// What it waits for, while it waits.
    pub pending: Option<Vec<(PendingCall, Option<AgentRunDecision>)>>,
}

/// The details of `run`.
pub async fn run_details(state: &AppState, run: &AgentRun) -> Result<RunDetails, ApiError> {
    let tokens = match crate::run_log::run_chat(state, run).await? {
        Some(chat_id) => Some(state.store.get_chat(&chat_id).await?.totals),
        None => None,
    };
    let pending = if run.status == AgentRunStatus::Waiting {
        Some(pending(state, run).await?)
    } else {
        None
    };
    Ok(RunDetails { tokens, pending })
}

/// What the run waits for, with the decisions recorded so far (empty
/// unless it is waiting).
pub async fn pending(
    state: &AppState,
    run: &AgentRun,
) -> Result<Vec<(PendingCall, Option<AgentRunDecision>)>, ApiError> {
    Ok(waiting::pending_of(state, run).await?)
}

/// The messages of the run's conversation.
pub async fn run_messages(
    state: &AppState,
    run: &AgentRun,
) -> Result<Vec<agentloop_storage::model::StoredMessage>, ApiError> {
    match crate::run_log::run_chat(state, run).await? {
        Some(chat_id) => Ok(state.store.list_messages(&chat_id).await?),
        None => Ok(Vec::new()),
    }
}

/// Records decisions on the calls the waiting run waits on; once every
/// call is decided the run resumes (`true`).
pub async fn decide(
    state: &AppState,
    ctx: &TaskContext,
    run: &AgentRun,
    decisions: Vec<(String, Decision)>,
) -> Result<bool, ApiError> {
    Ok(drive::decide(state, ctx, run, decisions).await?)
}

/// Cancels the user's run: records it cancelled, halts it where it runs
/// here, closes what it waited on and tells its owner. A run that has
/// already ended is a 409 naming its status.
pub async fn cancel_run(
    state: &AppState,
    user: &User,
    ctx: &TaskContext,
    run: &AgentRun,
) -> Result<AgentRun, ApiError> {
    let reason = EndReason::new("cancel", format!("cancelled by {}", user.name));
    let cancelled = state
        .store
        .finish_agent_run(
            &run.id,
            AgentRunStatus::Cancelled,
            now_millis(),
            Some(&reason),
        )
        .await?;
    if !cancelled {
        let current = state.store.get_agent_run(&run.id).await?;
        return Err(ApiError {
            status: StatusCode::CONFLICT,
            body: to_json(&RunConflict {
                error: format!("the agent run is already {}", current.status.as_str()),
                agent_run: Some(AgentRunShape::of(&current)),
            }),
        });
    }
    if let Some(local) = state.local_run(&run.id) {
        local.halt(crate::state::Halt::Cancel);
    }
    waiting::close_pending(state, ctx, run).await;
    drive::cancel_in_engine(state, &run.id).await;
    state.notify_run_status(&ctx.owner, &ctx.project, run, AgentRunStatus::Cancelled);
    Ok(state.store.get_agent_run(&run.id).await?)
}

/// The task's latest agent run waiting for a decision, if one does.
pub async fn waiting_run(
    state: &AppState,
    ctx: &TaskContext,
) -> Result<Option<AgentRun>, ApiError> {
    Ok(list_runs(state, ctx)
        .await?
        .into_iter()
        .rev()
        .find(|run| run.status == AgentRunStatus::Waiting))
}

/// The front-end tools the run was started with.
pub async fn offered_frontend_tools(
    state: &AppState,
    run: &AgentRun,
) -> Result<Vec<FrontendToolSpec>, ApiError> {
    let Some(chat_id) = crate::run_log::run_chat(state, run).await? else {
        return Ok(Vec::new());
    };
    let chat = state.store.get_chat(&chat_id).await?;
    Ok(frontend_tool_specs(&chat.settings))
}

/// The seq of the run's last stored event.
pub async fn last_seq(state: &AppState, run_id: &str) -> Result<Option<u64>, ApiError> {
    const PAGE: u32 = 500;
    let mut after = None;
    loop {
        let events = state.store.list_events(run_id, after, PAGE).await?;
        match events.last() {
            Some(last) => after = Some(last.seq),
            None => return Ok(after),
        }
        if events.len() < PAGE as usize {
            return Ok(after);
        }
    }
}

/// The record of the run the agent run executes (its result once ended).
pub async fn run_record(
    state: &AppState,
    run_id: &str,
) -> Result<agentloop_storage::model::RunRecord, ApiError> {
    Ok(state.store.get_run(run_id).await?)
}

// ---- webhooks -----------------------------------------------------------------

/// The project's webhooks, or 404 when it has none.
pub async fn webhooks(state: &AppState, user: &User, id: &str) -> Result<Registration, ApiError> {
    let project = owned_project(state, user, id).await?;
    Registration::of(&project.settings)
        .ok_or_else(|| ApiError::not_found("this project has no webhooks"))
}

/// Sets the project's webhooks. The secret is made on the first
/// registration and kept after, unless `rotate_secret` asks for a new one.
pub async fn set_webhooks(
    state: &AppState,
    user: &User,
    id: &str,
    change: WebhooksChange,
) -> Result<Registration, ApiError> {
    let urls = change
        .urls
        .ok_or_else(|| ApiError::bad_request("urls: required, an array of URLs"))?;
    let rotate = change.rotate_secret.unwrap_or(false);
    let events = registry::check(&urls, change.events.as_deref()).map_err(ApiError::bad_request)?;
    let mut project = owned_project(state, user, id).await?;
    let secret = match Registration::of(&project.settings) {
        Some(old) if !rotate => old.secret,
        _ => format!("whsec_{}", new_token().trim_start_matches("al_")),
    };
    let registration = Registration {
        urls,
        events,
        secret,
    };
    if let Value::Object(settings) = &mut project.settings {
        settings.insert(
            "webhooks".to_owned(),
            serde_json::to_value(&registration)
                .map_err(|e| ApiError::bad_request(e.to_string()))?,
        );
    }
    project.updated_at = now_millis();
    state.store.update_project(&project).await?;
    Ok(registration)
}

/// Removes the project's webhooks.
pub async fn remove_webhooks(state: &AppState, user: &User, id: &str) -> Result<(), ApiError> {
    let mut project = owned_project(state, user, id).await?;
    if let Value::Object(settings) = &mut project.settings
        && settings.remove("webhooks").is_some()
    {
        project.updated_at = now_millis();
        state.store.update_project(&project).await?;
    }
    Ok(())
}

/// The project's delivery log as stored: every instance's deliveries, the
/// last ones kept.
pub async fn webhook_deliveries(
    state: &AppState,
    user: &User,
    id: &str,
) -> Result<Vec<WebhookDelivery>, ApiError> {
    let project = owned_project(state, user, id).await?;
    Ok(state
        .store
        .list_webhook_deliveries(&project.id, WEBHOOK_DELIVERIES_KEPT)
        .await?)
}

impl From<DecideError> for ApiError {
    fn from(err: DecideError) -> Self {
        match err {
            DecideError::NotWaiting(run) => ApiError {
                status: StatusCode::CONFLICT,
                body: to_json(&RunConflict {
                    error: format!(
                        "the agent run is not waiting for a decision (it is {})",
                        run.status.as_str()
                    ),
                    agent_run: Some(AgentRunShape::of(&run)),
                }),
            },
            DecideError::NotPending(_) | DecideError::Unfit { .. } => {
                ApiError::bad_request(err.to_string())
            }
            DecideError::AlreadyDecided(_) => ApiError::new(StatusCode::CONFLICT, err.to_string()),
            DecideError::Runtime(e) => e.into(),
            DecideError::Storage(e) => e.into(),
        }
    }
}
