//! Budgets: `GET`/`PUT /api/projects/{id}/budgets`, `/api/tasks/{id}/budgets`,
//! `/api/schedules/{id}/budgets` (over the runs the schedule's ticks
//! started, and the runs chained after them) and `/api/me/budgets` (the
//! caller's own, over every project the caller owns). Each budget caps the cost (US dollars) or the tokens of
//! the model calls of the scope's agent runs per day, month or in total,
//! and is shown with what was spent and what calls in flight hold in
//! the current period (see [`crate::budgets`]). Only the owner reaches a
//! project's, a task's or a schedule's.

use axum::Json;
use axum::extract::{Path, State};

use super::budget_shapes::limits;
pub use super::budget_shapes::{BudgetsChange, BudgetsShape};
use super::error::ApiError;
use super::extract::{ApiJson, AuthUser};
use super::service;
use crate::state::AppState;

pub(super) async fn project(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Json<BudgetsShape>, ApiError> {
    let (scope, usage) = service::project_budgets(&state, &user, &id, None).await?;
    Ok(Json(BudgetsShape::new(scope.kind, scope.id, &usage)))
}

pub(super) async fn set_project(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<BudgetsChange>,
) -> Result<Json<BudgetsShape>, ApiError> {
    let (scope, usage) = service::project_budgets(&state, &user, &id, Some(&limits(&body))).await?;
    Ok(Json(BudgetsShape::new(scope.kind, scope.id, &usage)))
}

pub(super) async fn task(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Json<BudgetsShape>, ApiError> {
    let (scope, usage) = service::task_budgets(&state, &user, &id, None).await?;
    Ok(Json(BudgetsShape::new(scope.kind, scope.id, &usage)))
}

pub(super) async fn set_task(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<BudgetsChange>,
) -> Result<Json<BudgetsShape>, ApiError> {
    let (scope, usage) = service::task_budgets(&state, &user, &id, Some(&limits(&body))).await?;
    Ok(Json(BudgetsShape::new(scope.kind, scope.id, &usage)))
}

pub(super) async fn schedule(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
) -> Result<Json<BudgetsShape>, ApiError> {
    let (scope, usage) = service::schedule_budgets(&state, &user, &id, None).await?;
    Ok(Json(BudgetsShape::new(scope.kind, scope.id, &usage)))
}

pub(super) async fn set_schedule(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<BudgetsChange>,
) -> Result<Json<BudgetsShape>, ApiError> {
    let change = limits(&body);
    let (scope, usage) = service::schedule_budgets(&state, &user, &id, Some(&change)).await?;
    Ok(Json(BudgetsShape::new(scope.kind, scope.id, &usage)))
}

pub(super) async fn mine(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
) -> Result<Json<BudgetsShape>, ApiError> {
    let (scope, usage) = service::user_budgets(&state, &user, None).await?;
    Ok(Json(BudgetsShape::new(scope.kind, scope.id, &usage)))
}

pub(super) async fn set_mine(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    ApiJson(body): ApiJson<BudgetsChange>,
) -> Result<Json<BudgetsShape>, ApiError> {
    let (scope, usage) = service::user_budgets(&state, &user, Some(&limits(&body))).await?;
    Ok(Json(BudgetsShape::new(scope.kind, scope.id, &usage)))
}
