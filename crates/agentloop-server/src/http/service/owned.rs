//! Which records a user may reach: another user's project, task or run
//! is "not found", as an unknown one is.

use agentloop_storage::StorageError;
use agentloop_storage::model::{AgentRun, Project};
use axum::http::StatusCode;

use crate::http::error::ApiError;
use crate::http::extract::check_id;
use crate::runner::{TaskContext, load_task_context, project_owner};
use crate::state::AppState;
use crate::users::User;

/// The user's project with that id (400 for a malformed id, 404 for an
/// unknown project or another user's).
pub async fn owned_project(state: &AppState, user: &User, id: &str) -> Result<Project, ApiError> {
    check_id(id, "project")?;
    let project = state.store.get_project(id).await?;
    if project_owner(&project) == Some(user.id.as_str()) {
        Ok(project)
    } else {
        Err(ApiError::not_found("Project not found"))
    }
}

/// The user's task with that id (400 for a malformed id, 404 for an
/// unknown task or another user's).
pub async fn owned_task(state: &AppState, user: &User, id: &str) -> Result<TaskContext, ApiError> {
    check_id(id, "task")?;
    match load_task_context(&*state.store, id).await {
        Ok(ctx) if ctx.owner == user.id => Ok(ctx),
        Ok(_) | Err(StorageError::NotFound { .. }) => Err(ApiError::not_found("Task not found")),
        Err(e) => Err(e.into()),
    }
}

/// The user's agent run with its task (400 for a malformed id, 404 for an
/// unknown run or another user's).
pub async fn owned_run(
    state: &AppState,
    user: &User,
    run_id: &str,
) -> Result<(AgentRun, TaskContext), ApiError> {
    let run = agent_run(state, run_id).await?;
    match owned_task(state, user, &run.task_id).await {
        Ok(ctx) => Ok((run, ctx)),
        Err(e) if e.status == StatusCode::NOT_FOUND => {
            Err(ApiError::not_found("Agent run not found"))
        }
        Err(e) => Err(e),
    }
}

/// Agent run `run_id` and its task, whoever owns them: for a durable
/// engine acting on a run it executes. An unknown run is "not found".
pub async fn run_for_engine(
    state: &AppState,
    run_id: &str,
) -> Result<(AgentRun, TaskContext), ApiError> {
    let run = agent_run(state, run_id).await?;
    let ctx = load_task_context(&*state.store, &run.task_id).await?;
    Ok((run, ctx))
}

/// The user owning `ctx`'s project.
pub async fn task_owner(state: &AppState, ctx: &TaskContext) -> Result<User, ApiError> {
    Ok(state.store.get_user(&ctx.owner).await?)
}

/// Agent run `run_id` (400 for a malformed id, 404 for an unknown one).
async fn agent_run(state: &AppState, run_id: &str) -> Result<AgentRun, ApiError> {
    check_id(run_id, "agent run")?;
    match state.store.get_agent_run(run_id).await {
        Ok(run) => Ok(run),
        Err(StorageError::NotFound { .. }) => Err(ApiError::not_found("Agent run not found")),
        Err(e) => Err(e.into()),
    }
}
