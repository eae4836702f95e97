//! Schedules: `GET`, `POST /api/projects/{id}/schedules` and `GET`,
//! `PATCH`, `DELETE /api/schedules/{id}`, each shown with its own
//! budgets (set at `/api/schedules/{id}/budgets`, see
//! [`super::budgets`]). Only the project's owner reaches them; another
//! user's is not found.

use agentloop_storage::ProjectRole;
use agentloop_storage::schedules::Schedule;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};

use super::audit::Created;
use super::error::ApiError;
use super::extract::{ApiJson, AuthUser};
use super::schedule_shapes::{NewSchedule, ScheduleChange, ScheduleShape, SchedulesShape};
use super::service;
use crate::state::AppState;

/// `schedule` with its budgets.
async fn shape(state: &AppState, schedule: &Schedule) -> Result<ScheduleShape, ApiError> {
    let usage = service::budgets_of_schedule(state, &schedule.id).await?;
    Ok(ScheduleShape::new(schedule, &usage))
}

pub(super) async fn list(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(project_id): Path<String>,
) -> Result<Json<SchedulesShape>, ApiError> {
    let schedules = service::schedules(&state, &user, &project_id).await?;
    let mut shapes = Vec::with_capacity(schedules.len());
    for schedule in schedules {
        shapes.push(shape(&state, &schedule).await?);
    }
    Ok(Json(SchedulesShape { schedules: shapes }))
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
        Json(shape(&state, &schedule).await?),
    ))
}

pub(super) async fn show(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Json<ScheduleShape>, ApiError> {
    let schedule = service::schedule(&state, &user, &id, ProjectRole::Viewer).await?;
    Ok(Json(shape(&state, &schedule).await?))
}

pub(super) async fn edit(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<ScheduleChange>,
) -> Result<Json<ScheduleShape>, ApiError> {
    let schedule = service::edit_schedule(&state, &user, &id, body).await?;
    Ok(Json(shape(&state, &schedule).await?))
}

pub(super) async fn remove(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    service::delete_schedule(&state, &user, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
