//! Tasks: each belongs to a project and has its document at
//! `.agentloop/tasks/task-<id>.md` in the project folder.

use agentloop_storage::ProjectRole;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};

use super::audit::Created;
use super::error::ApiError;
use super::extract::{ApiJson, AuthUser, check_id};
use super::requests::{NewTask, TaskDocumentContent, WorkflowComplete};
use super::responses::{DocumentShape, TaskShape, WorkflowCompleted};
use super::service::{self, Target};
use crate::config::task_doc_path;
use crate::state::AppState;
use agentloop_types::RunInput;

pub(super) async fn list(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(project_id): Path<String>,
) -> Result<Json<Vec<TaskShape>>, ApiError> {
    let tasks = service::list_tasks(&state, &user, &project_id).await?;
    Ok(Json(tasks.iter().map(TaskShape::from).collect()))
}

pub(super) async fn create(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(project_id): Path<String>,
    ApiJson(body): ApiJson<NewTask>,
) -> Result<(StatusCode, Extension<Created>, Json<TaskShape>), ApiError> {
    let ctx = service::create_task(&state, &user, &project_id, body).await?;
    Ok((
        StatusCode::CREATED,
        Extension(Created(ctx.task.id.clone())),
        Json(TaskShape::from(&ctx.task)),
    ))
}

pub(super) async fn get_one(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(task_id): Path<String>,
) -> Result<Json<TaskShape>, ApiError> {
    let ctx = service::owned_task(&state, &user, &task_id, ProjectRole::Viewer).await?;
    Ok(Json(TaskShape::from(&ctx.task)))
}

/// Deletes a task with its runs (see [`service::delete_task`]).
pub(super) async fn delete(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(task_id): Path<String>,
) -> Result<StatusCode, ApiError> {
    service::delete_task(&state, &user, &task_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub(super) async fn get_document(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(task_id): Path<String>,
) -> Result<Json<DocumentShape>, ApiError> {
    let ctx = service::owned_task(&state, &user, &task_id, ProjectRole::Viewer).await?;
    let (path, content) = service::read_document(&ctx).await?;
    Ok(Json(DocumentShape { path, content }))
}

pub(super) async fn put_document(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(task_id): Path<String>,
    ApiJson(body): ApiJson<TaskDocumentContent>,
) -> Result<Json<DocumentShape>, ApiError> {
    let ctx = service::owned_task(&state, &user, &task_id, ProjectRole::Editor).await?;
    service::write_document(&ctx, &body.content).await?;
    Ok(Json(DocumentShape {
        path: task_doc_path(&ctx.task.id),
        content: body.content,
    }))
}

pub(super) async fn workflow_complete(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(task_id): Path<String>,
    ApiJson(body): ApiJson<WorkflowComplete>,
) -> Result<Json<WorkflowCompleted>, ApiError> {
    check_id(&task_id, "task")?;
    if body.complete {
        let ctx = service::owned_task(&state, &user, &task_id, ProjectRole::Editor).await?;
        service::submit(&state, &user, Target::Task(&ctx), RunInput::Stop {}).await?;
    } else {
        service::mark_done(&state, &user, &task_id, false).await?;
    }
    Ok(Json(WorkflowCompleted {
        success: true,
        workflow_complete: body.complete,
    }))
}
