//! Projects: each belongs to a user and has a repository folder.

use agentloop_storage::ProjectRole;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};

use super::audit::Created;
use super::error::ApiError;
use super::extract::{ApiJson, AuthUser};
use super::requests::{NewProject, ProjectChange};
use super::responses::ProjectShape;
use super::service;
use crate::state::AppState;

pub(super) async fn list(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
) -> Result<Json<Vec<ProjectShape>>, ApiError> {
    let projects = service::member_projects(&state, &user).await?;
    Ok(Json(
        projects
            .iter()
            .map(|(p, role)| ProjectShape::of(&state, p, *role))
            .collect(),
    ))
}

pub(super) async fn create(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    ApiJson(body): ApiJson<NewProject>,
) -> Result<(StatusCode, Extension<Created>, Json<ProjectShape>), ApiError> {
    let project = service::create_project(&state, &user, body).await?;
    Ok((
        StatusCode::CREATED,
        Extension(Created(project.id.clone())),
        Json(ProjectShape::of(&state, &project, ProjectRole::Owner)),
    ))
}

pub(super) async fn get_one(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Json<ProjectShape>, ApiError> {
    let (project, role) = service::project_access(&state, &user, &id, ProjectRole::Viewer).await?;
    Ok(Json(ProjectShape::of(&state, &project, role)))
}

/// `PATCH /api/projects/{id}`: changes the approval policy, the per-tool
/// policies, the shell tool, its quota and the agents.
pub(super) async fn update(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<ProjectChange>,
) -> Result<Json<ProjectShape>, ApiError> {
    let project = service::update_project(&state, &user, &id, body).await?;
    Ok(Json(ProjectShape::of(&state, &project, ProjectRole::Owner)))
}

pub(super) async fn delete(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    service::delete_project(&state, &user, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
