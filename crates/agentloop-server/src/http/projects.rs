//! Projects: each belongs to a user and has a repository folder.

use agentloop_storage::StorageError;
use agentloop_storage::model::{ApprovalMode, Project, now_millis};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use super::extract::{
    ApiJson, AuthUser, MAX_MODEL_CHARS, MAX_TITLE_CHARS, check_id, required_text, too_long,
};
use agentloop_tools::vfs::DirJail;
use agentloop_types::vfs::{Vfs, VfsError};

use super::error::ApiError;
use crate::config::ServerConfig;
use crate::folders::{self, FolderError};
use crate::ids::{new_id, rfc3339};
use crate::runner::{project_owner, project_repo};
use crate::state::AppState;
use crate::users::User;

/// The project routes: `/api/projects`, `/api/projects/{projectId}`.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/projects", get(list).post(create))
        .route(
            "/api/projects/{project_id}",
            get(get_one).delete(delete).patch(update),
        )
}

/// A project as the API shows it: `approvals` is the approval policy its
/// runs follow (see [`crate::policy`]), `approvals_source` whether the
/// project sets it or follows the server; `tool_approvals` its per-tool
/// approval policies; `shell` whether its runs get the sandboxed `shell`
/// tool.
pub fn project_json(config: &ServerConfig, project: &Project) -> Value {
    let (mode, source) = crate::policy::effective(config, project);
    json!({
        "id": project.id,
        "name": project.name,
        "repo_folder": project_repo(project),
        "model": project.settings.get("model"),
        "approvals": mode.as_str(),
        "approvals_source": source.as_str(),
        "tool_approvals": project.settings.get("approvals").cloned().unwrap_or_else(|| json!({})),
        "shell": crate::run_tools::shell_enabled(project),
        "shell_quota": project.settings.get("shell_quota"),
        "agents": project.settings.get("agents").cloned().unwrap_or_else(|| json!({})),
        "created_at": rfc3339(project.created_at),
        "updated_at": rfc3339(project.updated_at),
    })
}

/// What a request's `approvals` field asks for.
enum ApprovalsField {
    /// Absent: nothing changes.
    Absent,
    /// `"ask"`, `"unattended"`, or null (follow the server's default).
    Mode(Option<ApprovalMode>),
    /// An object: per-tool approval policies (what `tool_approvals` takes;
    /// accepted here too, as before the policy existed).
    PerTool(Value),
}

const APPROVALS_ALLOWED: &str = "approvals must be \"ask\", \"unattended\" or null (follow the \
server's default); per-tool policies go in tool_approvals";

fn approvals_field(body: &serde_json::Map<String, Value>) -> Result<ApprovalsField, ApiError> {
    match body.get("approvals") {
        None => Ok(ApprovalsField::Absent),
        Some(Value::Null) => Ok(ApprovalsField::Mode(None)),
        Some(Value::String(name)) => ApprovalMode::parse(name)
            .map(|mode| ApprovalsField::Mode(Some(mode)))
            .ok_or_else(|| ApiError::bad_request(format!("{APPROVALS_ALLOWED}, not {name:?}"))),
        Some(value @ Value::Object(_)) => {
            Ok(ApprovalsField::PerTool(tool_approvals(value, "approvals")?))
        }
        Some(_) => Err(ApiError::bad_request(APPROVALS_ALLOWED)),
    }
}

/// Checks per-tool approval policies.
fn tool_approvals(value: &Value, field: &str) -> Result<Value, ApiError> {
    serde_json::from_value::<agentloop_types::ApprovalPolicies>(value.clone())
        .map_err(|e| ApiError::bad_request(format!("{field}: {e}")))?;
    Ok(value.clone())
}

/// The user's project with that id, or 404.
pub async fn owned_project(state: &AppState, user: &User, id: &str) -> Result<Project, ApiError> {
    check_id(id, "project")?;
    let project = state.store.get_project(id).await?;
    if project_owner(&project) == Some(user.id.as_str()) {
        Ok(project)
    } else {
        Err(ApiError::not_found("Project not found"))
    }
}

pub(super) async fn list(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
) -> Result<Json<Vec<Value>>, ApiError> {
    let projects = state.store.list_projects().await?;
    Ok(Json(
        projects
            .iter()
            .filter(|p| project_owner(p) == Some(user.id.as_str()))
            .map(|p| project_json(&state.config, p))
            .collect(),
    ))
}

pub(super) async fn create(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    ApiJson(body): ApiJson,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let name = required_text(&body, "name", MAX_TITLE_CHARS)?;
    let requested = match body.get("repoFolder").or_else(|| body.get("repo_folder")) {
        Some(Value::String(folder)) => folder.as_str(),
        None | Some(Value::Null) => {
            return Err(ApiError::bad_request(
                "repoFolder is required: the project's folder, relative to the server's \
                 projects folder or absolute inside it",
            ));
        }
        Some(_) => return Err(ApiError::bad_request("repoFolder must be a string")),
    };
    let model = match body.get("model") {
        None | Some(Value::Null) => None,
        Some(Value::String(model)) if model.chars().count() > MAX_MODEL_CHARS => {
            return Err(too_long("model", model.chars().count(), MAX_MODEL_CHARS));
        }
        Some(Value::String(model)) if !model.trim().is_empty() => Some(model.clone()),
        Some(_) => return Err(ApiError::bad_request("model must be a non-empty string")),
    };
    let (approval_mode, mut approvals) = match approvals_field(&body)? {
        ApprovalsField::Absent => (None, None),
        ApprovalsField::Mode(mode) => (mode, None),
        ApprovalsField::PerTool(value) => (None, Some(value)),
    };
    match body.get("tool_approvals") {
        None | Some(Value::Null) => {}
        Some(value) => approvals = Some(tool_approvals(value, "tool_approvals")?),
    }
    let mcp_servers = match body.get("mcpServers") {
        None | Some(Value::Null) => None,
        Some(servers) if state.config.allow_project_mcp => {
            agentloop_mcp::McpConfig::from_json(&json!({ "mcpServers": servers }).to_string())
                .map_err(|e| ApiError::bad_request(format!("mcpServers: {e}")))?;
            Some(servers.clone())
        }
        Some(_) => {
            return Err(ApiError::bad_request(
                "mcpServers: this server does not run project MCP servers \
                 (its operator can allow them with --allow-project-mcp)",
            ));
        }
    };
    let shell = shell_field(&state, &body)?;
    let quota = shell_quota_field(&body)?;
    let agents = agents_field(&body)?;
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
        settings["approvals"] = approvals;
    }
    if shell == Some(true) {
        settings["shell"] = json!(true);
    }
    if let Some(Some(quota)) = quota {
        settings["shell_quota"] = quota;
    }
    if let Some(Some(agents)) = agents {
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
    Ok((
        StatusCode::CREATED,
        Json(project_json(&state.config, &project)),
    ))
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

pub(super) async fn get_one(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let project = owned_project(&state, &user, &id).await?;
    Ok(Json(project_json(&state.config, &project)))
}

/// `PATCH /api/projects/{id}`: changes the approval policy (`approvals`:
/// `"ask"`, `"unattended"`, or null to follow the server's default), the
/// per-tool policies (`tool_approvals`: an object, or null for none) and
/// whether runs get the `shell` tool (`shell`: a boolean). Runs follow an
/// approval change from their next model turn that calls a tool, a shell
/// change from their next start.
pub(super) async fn update(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
    ApiJson(body): ApiJson,
) -> Result<Json<Value>, ApiError> {
    if let Some(key) = body.keys().find(|k| {
        !matches!(
            k.as_str(),
            "approvals" | "tool_approvals" | "shell" | "shell_quota" | "agents"
        )
    }) {
        return Err(ApiError::bad_request(format!(
            "unknown field {key:?} (a project changes approvals, tool_approvals, shell, \
             shell_quota and agents)"
        )));
    }
    let shell = shell_field(&state, &body)?;
    let quota = shell_quota_field(&body)?;
    let agents = agents_field(&body)?;
    let per_tool = match body.get("tool_approvals") {
        None => None,
        Some(Value::Null) => Some(None),
        Some(value) => Some(Some(tool_approvals(value, "tool_approvals")?)),
    };
    let field = approvals_field(&body)?;
    // Only a project's creation takes per-tool policies in `approvals`.
    if matches!(field, ApprovalsField::PerTool(_)) {
        return Err(ApiError::bad_request(APPROVALS_ALLOWED));
    }
    let mut project = owned_project(&state, &user, &id).await?;
    match field {
        ApprovalsField::Mode(mode) => project.approval_mode = mode,
        ApprovalsField::Absent | ApprovalsField::PerTool(_) => {}
    }
    if let Some(value) = per_tool {
        set_tool_approvals(&mut project, value);
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
    Ok(Json(project_json(&state.config, &project)))
}

/// Sets or removes a project's per-tool approval policies (kept in its
/// settings, where the runtime reads them).
fn set_tool_approvals(project: &mut Project, value: Option<Value>) {
    set_setting(project, "approvals", value);
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

/// A request's `agents` field, checked (see [`crate::project_agents`]):
/// `None` when absent, `Some(None)` when null or empty (no agents).
fn agents_field(body: &serde_json::Map<String, Value>) -> Result<Option<Option<Value>>, ApiError> {
    match body.get("agents") {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(None)),
        Some(value) => {
            let agents = crate::project_agents::parse(value)
                .map_err(|e| ApiError::bad_request(e.to_string()))?;
            Ok(Some((!agents.is_empty()).then(|| json!(agents))))
        }
    }
}

/// A request's `shell_quota` field: `None` when absent, `Some(None)` for
/// null (the server's quota alone), else the project's own bounds on what
/// one `shell` command may write, `max_write_mb` and `max_write_files`
/// (whole numbers from 1; either may be left out).
fn shell_quota_field(
    body: &serde_json::Map<String, Value>,
) -> Result<Option<Option<Value>>, ApiError> {
    const SHAPE: &str = "shell_quota must be null or an object of max_write_mb and \
                         max_write_files, whole numbers from 1";
    let quota = match body.get("shell_quota") {
        None => return Ok(None),
        Some(Value::Null) => return Ok(Some(None)),
        Some(Value::Object(quota)) => quota,
        Some(_) => return Err(ApiError::bad_request(SHAPE)),
    };
    let mut kept = serde_json::Map::new();
    for (name, value) in quota {
        if !matches!(name.as_str(), "max_write_mb" | "max_write_files") {
            return Err(ApiError::bad_request(format!(
                "shell_quota: unknown field {name:?} ({SHAPE})"
            )));
        }
        match value.as_u64() {
            Some(number) if number >= 1 => {
                kept.insert(name.clone(), json!(number));
            }
            _ => {
                return Err(ApiError::bad_request(format!(
                    "shell_quota.{name}: {SHAPE}"
                )));
            }
        }
    }
    Ok(Some((!kept.is_empty()).then_some(Value::Object(kept))))
}

/// A request's `shell` field: a boolean, `true` only where this server
/// offers the shell tool.
fn shell_field(
    state: &AppState,
    body: &serde_json::Map<String, Value>,
) -> Result<Option<bool>, ApiError> {
    match body.get("shell") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(true)) if state.config.shell_tool.is_none() => Err(ApiError::bad_request(
            "shell: this server does not offer the shell tool \
             (its operator can allow it with --allow-shell)",
        )),
        Some(Value::Bool(shell)) => Ok(Some(*shell)),
        Some(_) => Err(ApiError::bad_request("shell must be a boolean")),
    }
}

pub(super) async fn delete(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let project = owned_project(&state, &user, &id).await?;
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
    Ok(StatusCode::NO_CONTENT)
}
