//! Schedules: `GET`, `POST /api/projects/{id}/schedules` and `GET`,
//! `PATCH`, `DELETE /api/schedules/{id}`. Only the project's owner
//! reaches them; another user's is not found.

use agentloop_storage::ProjectRole;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};

use super::audit::Created;
use super::error::ApiError;
use super::extract::{ApiJson, AuthUser};
use super::schedule_shapes::{NewSchedule, ScheduleChange, ScheduleShape, SchedulesShape};
use super::service;
use crate::state::AppState;

pub(super) async fn list(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(project_id): Path<String>,
) -> Result<Json<SchedulesShape>, ApiError> {
    let schedules = service::schedules(&state, &user, &project_id).await?;
    Ok(Json(SchedulesShape {
        schedules: schedules.iter().map(ScheduleShape::from).collect(),
    }))
}

pub(super) async fn create(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(project_id): Path<String>,
    ApiJson(body): ApiJson<NewSchedule>,
) -> Result<(StatusCode, Extension<Created>, Json<ScheduleShape>), ApiError> {
    let schedule = service::create_schedule(&state, &user, &project_id, body).await?;
    Ok((
        StatusCode::CREATED,
        Extension(Created(schedule.id.clone())),
        Json(ScheduleShape::from(&schedule)),
    ))
}

pub(super) async fn show(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Json<ScheduleShape>, ApiError> {
    let schedule = service::schedule(&state, &user, &id, ProjectRole::Viewer).await?;
    Ok(Json(ScheduleShape::from(&schedule)))
}

pub(super) async fn edit(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<ScheduleChange>,
) -> Result<Json<ScheduleShape>, ApiError> {
    let schedule = service::edit_schedule(&state, &user, &id, body).await?;
    Ok(Json(ScheduleShape::from(&schedule)))
}

pub(super) async fn remove(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    service::delete_schedule(&state, &user, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
