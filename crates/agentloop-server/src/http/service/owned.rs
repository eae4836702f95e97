//! Which records a user may reach, and what they may do there. A
//! project's creator owns it (its `owner` setting); the people its owners
//! invited are its members, each with a role ([`ProjectRole`]). A project,
//! task or run of a project the user is no member of is "not found", as
//! an unknown one is; a member whose role is below what a use case needs
//! is refused with a 403 that says so.

use agentloop_storage::model::{AgentRun, Project};
use agentloop_storage::{ProjectRole, StorageError};
use axum::http::StatusCode;

use crate::http::error::ApiError;
use crate::http::extract::check_id;
use crate::runner::{TaskContext, load_task_context, project_owner};
use crate::state::AppState;
use crate::users::User;

/// The user's role in `project`, if any: its creator owns it without a
/// member row; anyone else is looked up by the members' key (one read).
pub async fn role_in(
    state: &AppState,
    user: &User,
    project: &Project,
) -> Result<Option<ProjectRole>, ApiError> {
    if project_owner(project) == Some(user.id.as_str()) {
        return Ok(Some(ProjectRole::Owner));
    }
    Ok(state.store.project_role(&project.id, &user.id).await?)
}

/// The 403 for a member whose role is below `needed`.
pub fn forbidden(role: ProjectRole, needed: ProjectRole) -> ApiError {
    let what = match needed {
        ProjectRole::Viewer => "reading it",
        ProjectRole::Editor => "changing tasks and acting on runs (start, decide, message, cancel)",
        ProjectRole::Owner => "changing its settings, members, webhooks and budgets",
    };
    ApiError::new(
        StatusCode::FORBIDDEN,
        format!(
            "your role in this project is {}: {what} needs the {} role",
            role.as_str(),
            needed.as_str()
        ),
    )
}

/// `role` if it allows `needed`; a 403 for a lesser role.
fn allowed(role: ProjectRole, needed: ProjectRole) -> Result<ProjectRole, ApiError> {
    if role.allows(needed) {
        Ok(role)
    } else {
        Err(forbidden(role, needed))
    }
}

/// The project with that id and the user's role in it (400 for a
/// malformed id, 404 for an unknown project or one the user is no member
/// of, 403 for a role below `needed`).
pub async fn project_access(
    state: &AppState,
    user: &User,
    id: &str,
    needed: ProjectRole,
) -> Result<(Project, ProjectRole), ApiError> {
    check_id(id, "project")?;
    let project = state.store.get_project(id).await?;
    match role_in(state, user, &project).await? {
        Some(role) => Ok((project, allowed(role, needed)?)),
        None => Err(ApiError::not_found("Project not found")),
    }
}

/// The project with that id, for a user whose role in it is at least
/// `needed` (see [`project_access`]).
pub async fn owned_project(
    state: &AppState,
    user: &User,
    id: &str,
    needed: ProjectRole,
) -> Result<Project, ApiError> {
    Ok(project_access(state, user, id, needed).await?.0)
}

/// The task with that id, for a user whose role in its project is at
/// least `needed` (400 for a malformed id, 404 for an unknown task or one
/// of a project the user is no member of, 403 for a lesser role). The
/// context carries the user's role.
pub async fn owned_task(
    state: &AppState,
    user: &User,
    id: &str,
    needed: ProjectRole,
) -> Result<TaskContext, ApiError> {
    check_id(id, "task")?;
    let mut ctx = match load_task_context(&*state.store, id).await {
        Ok(ctx) => ctx,
        Err(StorageError::NotFound { .. }) => return Err(ApiError::not_found("Task not found")),
        Err(e) => return Err(e.into()),
    };
    let role = if ctx.owner == user.id {
        Some(ProjectRole::Owner)
    } else {
        state.store.project_role(&ctx.project.id, &user.id).await?
    };
    match role {
        Some(role) => {
            ctx.access = Some(allowed(role, needed)?);
            Ok(ctx)
        }
        None => Err(ApiError::not_found("Task not found")),
    }
}

/// The agent run with its task, for a user whose role in its project is
/// at least `needed` (400 for a malformed id, 404 for an unknown run or
/// one of a project the user is no member of, 403 for a lesser role).
pub async fn owned_run(
    state: &AppState,
    user: &User,
    run_id: &str,
    needed: ProjectRole,
) -> Result<(AgentRun, TaskContext), ApiError> {
    let run = agent_run(state, run_id).await?;
    match owned_task(state, user, &run.task_id, needed).await {
        Ok(ctx) => Ok((run, ctx)),
        Err(e) if e.status == StatusCode::NOT_FOUND => {
            Err(ApiError::not_found("Agent run not found"))
        }
        Err(e) => Err(e),
    }
}

/// Refuses (403) an action needing `needed` on a task loaded for a user
/// whose role is below it; a context the server loaded for itself passes.
pub fn require(ctx: &TaskContext, needed: ProjectRole) -> Result<(), ApiError> {
    match ctx.access {
        Some(role) => allowed(role, needed).map(|_| ()),
        None => Ok(()),
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
