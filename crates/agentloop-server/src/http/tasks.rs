//! Tasks: each belongs to a project and has its document at
//! `.agentloop/tasks/task-<id>.md` in the project folder.

use agentloop_storage::StorageError;
use agentloop_storage::model::{Task, now_millis};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, put};
use axum::{Json, Router};
use serde_json::{Value, json};

use super::extract::{ApiJson, AuthUser, MAX_TITLE_CHARS, check_id, required_text};
use super::projects::owned_project;
use agentloop_tools::vfs::DirJail;
use agentloop_types::vfs::{Vfs, VfsError};

use super::error::ApiError;
use crate::config::task_doc_path;
use crate::ids::{new_id, rfc3339};
use crate::runner::{TaskContext, load_task_context};
use crate::state::AppState;
use crate::users::User;

/// The task routes: a project's tasks, a task, its document and its workflow flag.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/projects/{project_id}/tasks", get(list).post(create))
        .route("/api/tasks/{task_id}", get(get_one).delete(delete))
        .route(
            "/api/tasks/{task_id}/document",
            get(get_document).put(put_document),
        )
        .route(
            "/api/tasks/{task_id}/workflow-complete",
            put(workflow_complete),
        )
}

fn task_json(task: &Task) -> Value {
    json!({
        "id": task.id,
        "project_id": task.project_id,
        "title": task.title,
        "workflow_complete": task.workflow_complete,
        "document_path": task_doc_path(&task.id),
        "created_at": rfc3339(task.created_at),
        "updated_at": rfc3339(task.updated_at),
    })
}

/// The user's task with that id (400 for a malformed id, 404 for an
/// unknown task or another user's).
pub async fn owned_task(state: &AppState, user: &User, id: &str) -> Result<TaskContext, ApiError> {
    check_id(id, "task")?;
    match load_task_context(&*state.store, id).await {
        Ok(ctx) if ctx.owner == user.id => Ok(ctx),
        Ok(_) | Err(agentloop_storage::StorageError::NotFound { .. }) => {
            Err(ApiError::not_found("Task not found"))
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

async fn write_document(ctx: &TaskContext, content: &str) -> Result<(), ApiError> {
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

pub(super) async fn list(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(project_id): Path<String>,
) -> Result<Json<Vec<Value>>, ApiError> {
    let project = owned_project(&state, &user, &project_id).await?;
    let tasks = state.store.list_tasks(&project.id).await?;
    Ok(Json(tasks.iter().map(task_json).collect()))
}

pub(super) async fn create(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(project_id): Path<String>,
    ApiJson(body): ApiJson,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let project = owned_project(&state, &user, &project_id).await?;
    let title = required_text(&body, "title", MAX_TITLE_CHARS)?;
    let description = match body.get("description") {
        None | Some(Value::Null) => "",
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err(ApiError::bad_request("description must be a string")),
    };
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
    Ok((StatusCode::CREATED, Json(task_json(&task))))
}

pub(super) async fn get_one(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(task_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let ctx = owned_task(&state, &user, &task_id).await?;
    Ok(Json(task_json(&ctx.task)))
}

/// Deletes a task with its agent runs, their conversations (chats) and
/// event logs; refused (409, naming the run) while one of them runs or
/// waits. The task document stays in the project folder.
pub(super) async fn delete(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(task_id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let ctx = owned_task(&state, &user, &task_id).await?;
    let busy = |run: &agentloop_storage::model::AgentRun| {
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
        Ok(()) => Ok(StatusCode::NO_CONTENT),
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

pub(super) async fn get_document(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(task_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let ctx = owned_task(&state, &user, &task_id).await?;
    let path = task_doc_path(&ctx.task.id);
    let content = match project_jail(&ctx)?.read_to_string(&path).await {
        Ok(content) => content,
        Err(VfsError::NotFound(_)) => return Err(ApiError::not_found("Task document not found")),
        Err(e) => {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                format!("cannot read the task document: {e}"),
            ));
        }
    };
    Ok(Json(json!({ "path": path, "content": content })))
}

pub(super) async fn put_document(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(task_id): Path<String>,
    ApiJson(body): ApiJson,
) -> Result<Json<Value>, ApiError> {
    let ctx = owned_task(&state, &user, &task_id).await?;
    let Some(content) = body.get("content").and_then(Value::as_str) else {
        return Err(ApiError::bad_request("content must be a string"));
    };
    write_document(&ctx, content).await?;
    Ok(Json(
        json!({ "path": task_doc_path(&ctx.task.id), "content": content }),
    ))
}

pub(super) async fn workflow_complete(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(task_id): Path<String>,
    ApiJson(body): ApiJson,
) -> Result<Json<Value>, ApiError> {
    check_id(&task_id, "task")?;
    let Some(complete) = body.get("complete").and_then(Value::as_bool) else {
        return Err(ApiError::bad_request("complete must be a boolean"));
    };
    let ctx = owned_task(&state, &user, &task_id).await?;
    let completed = state
        .store
        .set_workflow_complete(&ctx.task.id, complete, now_millis())
        .await?;
    for run in &completed {
        if let Some(local) = state.local_run(&run.id) {
            local.halt(crate::state::Halt::Cancel);
        }
        crate::waiting::close_pending(&state, &ctx, run).await;
        crate::drive::cancel_in_engine(&state, &run.id).await;
        state.notify_run_status(&ctx.owner, &ctx.project, run, run.status);
    }
    Ok(Json(
        json!({ "success": true, "workflow_complete": complete }),
    ))
}
