//! A project's memories: `GET /api/projects/{id}/memories` and `GET`,
//! `PATCH`, `DELETE /api/projects/{id}/memories/{memoryId}`. Only the
//! project's owner reaches them.

use agentloop_storage::ProjectRole;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;

use super::error::ApiError;
use super::extract::{ApiJson, AuthUser};
use super::requests::MemoryChange;
use super::responses::{MemoriesShape, MemoryShape};
use super::service;
use crate::state::AppState;

pub(super) async fn list(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(project_id): Path<String>,
) -> Result<Json<MemoriesShape>, ApiError> {
    let memories = service::memories(&state, &user, &project_id).await?;
    Ok(Json(MemoriesShape {
        memories: memories.iter().map(MemoryShape::from).collect(),
    }))
}

pub(super) async fn show(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path((project_id, memory_id)): Path<(String, String)>,
) -> Result<Json<MemoryShape>, ApiError> {
    let memory =
        service::memory(&state, &user, &project_id, &memory_id, ProjectRole::Viewer).await?;
    Ok(Json(MemoryShape::from(&memory)))
}

/// `PATCH`: `{"text": "...", "expires_at": ms | null}`.
pub(super) async fn edit(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path((project_id, memory_id)): Path<(String, String)>,
    ApiJson(body): ApiJson<MemoryChange>,
) -> Result<Json<MemoryShape>, ApiError> {
    let memory = service::edit_memory(&state, &user, &project_id, &memory_id, body).await?;
    Ok(Json(MemoryShape::from(&memory)))
}

pub(super) async fn remove(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path((project_id, memory_id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    service::delete_memory(&state, &user, &project_id, &memory_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
