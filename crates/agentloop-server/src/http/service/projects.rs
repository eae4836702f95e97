//! Projects: their folders, settings, agents and shell.

use agentloop_storage::ProjectRole;
use agentloop_storage::StorageError;
use agentloop_storage::model::{Project, now_millis};
use agentloop_tools::vfs::DirJail;
use agentloop_types::vfs::{Vfs, VfsError};
use axum::http::StatusCode;
use serde_json::{Value, json};

use super::owned::owned_project;
use crate::folders::{self, FolderError};
use crate::http::error::ApiError;
use crate::http::extract::{MAX_MODEL_CHARS, MAX_TITLE_CHARS, required_text, too_long};
use crate::http::requests::{
    Approvals, ChainLimits, Change, NewProject, ProjectChange, ShellQuota,
};
use crate::ids::new_id;
use crate::runner::project_owner;
use crate::state::AppState;
use crate::users::User;

/// The projects the user is a member of, each with the user's role in
/// it, oldest first.
pub async fn member_projects(
    state: &AppState,
    user: &User,
) -> Result<Vec<(Project, ProjectRole)>, ApiError> {
    let mut projects: Vec<(Project, ProjectRole)> = state
        .store
        .list_projects()
        .await?
        .into_iter()
        .filter(|p| project_owner(p) == Some(user.id.as_str()))
        .map(|p| (p, ProjectRole::Owner))
        .collect();
    for member in state.store.list_memberships(&user.id).await? {
        match state.store.get_project(&member.project_id).await {
            Ok(project) if !projects.iter().any(|(p, _)| p.id == project.id) => {
                projects.push((project, member.role));
            }
            Ok(_) | Err(StorageError::NotFound { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    projects.sort_by(|(a, _), (b, _)| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    Ok(projects)
}

/// The projects the user is a member of, oldest first.
pub async fn list_projects(state: &AppState, user: &User) -> Result<Vec<Project>, ApiError> {
    Ok(member_projects(state, user)
        .await?
        .into_iter()
        .map(|(project, _)| project)
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
    let chain_limits = input
        .chain_limits
        .map(check_chain_limits)
        .transpose()?
        .flatten();
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
    if let Some(limits) = chain_limits {
        settings[crate::chain_bounds::SETTING] = limits;
    }
    if let Some(agents) = agents {
        settings["agents"] = agents;
    }
    if input.memory_extraction == Some(true) {
        settings[crate::run_memory::EXTRACTION_SETTING] = json!(true);
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
    let chain_limits = match change.chain_limits {
        Change::Keep => None,
        Change::Clear => Some(None),
        Change::Set(limits) => Some(check_chain_limits(limits)?),
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
    let mut project = owned_project(state, user, id, ProjectRole::Owner).await?;
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
    if let Some(limits) = chain_limits {
        set_setting(&mut project, crate::chain_bounds::SETTING, limits);
    }
    if let Some(agents) = agents {
        set_setting(&mut project, "agents", agents);
    }
    match change.steer_strategy {
        Change::Keep => {}
        Change::Clear => set_setting(&mut project, "steer_strategy", None),
        Change::Set(strategy) => {
            set_setting(
                &mut project,
                "steer_strategy",
                Some(json!(strategy.as_str())),
            );
        }
    }
    match change.memory_extraction {
        Change::Keep => {}
        Change::Clear | Change::Set(false) => {
            set_setting(&mut project, crate::run_memory::EXTRACTION_SETTING, None);
        }
        Change::Set(true) => set_setting(
            &mut project,
            crate::run_memory::EXTRACTION_SETTING,
            Some(json!(true)),
        ),
    }
    project.updated_at = now_millis();
    state.store.update_project(&project).await?;
    Ok(project)
}

/// Deletes a project; refused (409) while one of its runs is active.
pub async fn delete_project(state: &AppState, user: &User, id: &str) -> Result<(), ApiError> {
    let project = owned_project(state, user, id, ProjectRole::Owner).await?;
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

/// A project's chain bounds, checked: runs and tokens from 1, a cost above
/// 0; `None` when it sets none (the server's bound alone).
fn check_chain_limits(limits: ChainLimits) -> Result<Option<Value>, ApiError> {
    const SHAPE: &str = "chain_limits must be null or an object of max_runs and max_tokens \
                         (whole numbers from 1) and max_cost_usd (a number above 0)";
    let cost_ok = limits
        .max_cost_usd
        .is_none_or(|cost| cost.is_finite() && cost > 0.0);
    if limits.max_runs == Some(0) || limits.max_tokens == Some(0) || !cost_ok {
        return Err(ApiError::bad_request(SHAPE));
    }
    if limits
        == (ChainLimits {
            max_runs: None,
            max_tokens: None,
            max_cost_usd: None,
        })
    {
        return Ok(None);
    }
    Ok(Some(crate::shapes::to_json(&limits)))
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
