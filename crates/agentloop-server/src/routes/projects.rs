//! Projects: each belongs to a user and has a repository folder.

use std::path::PathBuf;

use agentloop_storage::model::{Project, now_millis};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde_json::{Value, json};

use super::{ApiJson, AuthUser, check_id};
use crate::error::ApiError;
use crate::ids::{new_id, rfc3339};
use crate::runner::{project_owner, project_repo};
use crate::state::AppState;
use crate::users::User;

/// A project as the API shows it.
pub fn project_json(project: &Project) -> Value {
    json!({
        "id": project.id,
        "name": project.name,
        "repo_folder": project_repo(project),
        "model": project.settings.get("model"),
        "created_at": rfc3339(project.created_at),
        "updated_at": rfc3339(project.updated_at),
    })
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
            .map(project_json)
            .collect(),
    ))
}

pub(super) async fn create(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    ApiJson(body): ApiJson,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let Some(name) = body.get("name").and_then(Value::as_str) else {
        return Err(ApiError::bad_request("name must be a string"));
    };
    let Some(folder) = body
        .get("repoFolder")
        .or_else(|| body.get("repo_folder"))
        .and_then(Value::as_str)
    else {
        return Err(ApiError::bad_request("repoFolder must be a string"));
    };
    let folder = PathBuf::from(folder);
    if !folder.is_absolute() {
        return Err(ApiError::bad_request("repoFolder must be an absolute path"));
    }
    let root = match &state.config.projects_root {
        Some(root) => Some(
            root.canonicalize()
                .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?,
        ),
        None => None,
    };
    let outside = |path: &std::path::Path| root.as_ref().is_some_and(|r| !path.starts_with(r));
    let escapes = folder
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir));
    if escapes || outside(&folder) {
        return Err(ApiError::bad_request(
            "repoFolder must be inside the server's projects folder",
        ));
    }
    std::fs::create_dir_all(&folder)
        .map_err(|e| ApiError::bad_request(format!("cannot create repoFolder: {e}")))?;
    let folder = folder
        .canonicalize()
        .map_err(|e| ApiError::bad_request(format!("repoFolder: {e}")))?;
    if outside(&folder) {
        return Err(ApiError::bad_request(
            "repoFolder must be inside the server's projects folder",
        ));
    }
    let mut settings = json!({ "owner": user.id, "repo_folder": folder });
    if let Some(model) = body.get("model").and_then(Value::as_str) {
        settings["model"] = json!(model);
    }
    let now = now_millis();
    let project = Project {
        id: new_id(),
        name: name.to_owned(),
        settings,
        created_at: now,
        updated_at: now,
    };
    state.store.create_project(&project).await?;
    Ok((StatusCode::CREATED, Json(project_json(&project))))
}

pub(super) async fn get_one(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let project = owned_project(&state, &user, &id).await?;
    Ok(Json(project_json(&project)))
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
                format!("agent run {} is running in this project", run.id),
            ));
        }
    }
    state.store.delete_project(&project.id).await?;
    Ok(StatusCode::NO_CONTENT)
}
