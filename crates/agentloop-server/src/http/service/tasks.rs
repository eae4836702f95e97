//! Tasks, their documents and Mark Done.

use agentloop_storage::ProjectRole;
use agentloop_storage::StorageError;
use agentloop_storage::model::{AgentRun, Task, now_millis};
use agentloop_tools::vfs::DirJail;
use agentloop_types::vfs::{Vfs, VfsError};
use axum::http::StatusCode;

use super::owned::{owned_project, owned_task, project_access};
use crate::config::task_doc_path;
use crate::drive::{self};
use crate::http::error::ApiError;
use crate::http::extract::{MAX_TITLE_CHARS, required_text};
use crate::http::requests::NewTask;
use crate::ids::new_id;
use crate::runner::{TaskContext, load_task_context};
use crate::state::AppState;
use crate::users::User;
use crate::waiting::{self};

/// The tasks of the user's project.
pub async fn list_tasks(
    state: &AppState,
    user: &User,
    project_id: &str,
) -> Result<Vec<Task>, ApiError> {
    let project = owned_project(state, user, project_id, ProjectRole::Viewer).await?;
    Ok(state.store.list_tasks(&project.id).await?)
}

/// Creates a task in the user's project, with its document (`# title`,
/// then the description).
pub async fn create_task(
    state: &AppState,
    user: &User,
    project_id: &str,
    input: NewTask,
) -> Result<TaskContext, ApiError> {
    let (project, role) = project_access(state, user, project_id, ProjectRole::Editor).await?;
    let title = required_text(input.title.as_deref(), "title", MAX_TITLE_CHARS)?;
    let description = input.description.as_deref().unwrap_or_default();
    let now = now_millis();
    let task = Task {
        id: new_id(),
        project_id: project.id.clone(),
        title: title.to_owned(),
        workflow_complete: false,
        chain: Default::default(),
        created_at: now,
        updated_at: now,
    };
    state.store.create_task(&task).await?;
    let mut ctx = load_task_context(&*state.store, &task.id).await?;
    ctx.access = Some(role);
    write_document(&ctx, &format!("# {title}\n\n{description}\n")).await?;
    Ok(ctx)
}

/// Deletes a task with its agent runs, their conversations (chats) and
/// event logs; refused (409, naming the run) while one of them runs or
/// waits. The task document stays in the project folder.
pub async fn delete_task(state: &AppState, user: &User, task_id: &str) -> Result<(), ApiError> {
    let ctx = owned_task(state, user, task_id, ProjectRole::Editor).await?;
    let busy = |run: &AgentRun| {
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
        Ok(()) => Ok(()),
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

/// The task's document: its path in the project folder and its content.
pub async fn read_document(ctx: &TaskContext) -> Result<(String, String), ApiError> {
    let path = task_doc_path(&ctx.task.id);
    match project_jail(ctx)?.read_to_string(&path).await {
        Ok(content) => Ok((path, content)),
        Err(VfsError::NotFound(_)) => Err(ApiError::not_found("Task document not found")),
        Err(e) => Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("cannot read the task document: {e}"),
        )),
    }
}

/// Replaces the task's document.
pub async fn write_document(ctx: &TaskContext, content: &str) -> Result<(), ApiError> {
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

/// Mark Done (seed 004's workflow-complete): sets the task's flag; `true`
/// also force-completes its active runs, halting them where they run and
/// closing what they waited on.
pub async fn mark_done(
    state: &AppState,
    user: &User,
    task_id: &str,
    complete: bool,
) -> Result<(), ApiError> {
    let ctx = owned_task(state, user, task_id, ProjectRole::Editor).await?;
    mark_task_done(state, &ctx, complete).await
}

/// Mark Done of a task its user owns (see [`mark_done`]).
pub(super) async fn mark_task_done(
    state: &AppState,
    ctx: &TaskContext,
    complete: bool,
) -> Result<(), ApiError> {
    let completed = state
        .store
        .set_workflow_complete(&ctx.task.id, complete, now_millis())
        .await?;
    for run in &completed {
        if let Some(local) = state.local_run(&run.id) {
            local.halt(crate::state::Halt::Cancel);
        }
        waiting::close_pending(state, ctx, run).await;
        drive::cancel_in_engine(state, &run.id).await;
        state.notify_run_status(&ctx.owner, &ctx.project, run, run.status);
    }
    Ok(())
}
