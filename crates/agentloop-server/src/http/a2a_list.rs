//! A2A `ListTasks`: the caller's A2A tasks (agent runs), newest first, a
//! page at a time. `contextId` narrows them to one agentloop task's runs,
//! `tenant` to one project's; both are the caller's own or "not found".
//! The page token is the offset of the page's first task.

use agentloop_a2a::rpc::{ErrorCode, RpcError};
use agentloop_a2a::wire::{ListTasksRequest, ListTasksResponse, Task};
use agentloop_storage::ProjectRole;
use agentloop_storage::model::AgentRun;

use super::a2a_task::{ids_of, task_of};
use super::error::ApiError;
use super::service::{list_projects, list_runs, list_tasks, owned_task};
use crate::runner::TaskContext;
use crate::state::AppState;
use crate::users::User;

/// Tasks on a page when the request names no size.
const DEFAULT_PAGE: usize = 50;
/// The most tasks on one page.
const MAX_PAGE: usize = 100;

/// One page of the caller's tasks, as `request` narrows them.
pub(super) async fn list(
    state: &AppState,
    user: &User,
    request: &ListTasksRequest,
) -> Result<ListTasksResponse, RpcError> {
    let page_size = match request.page_size {
        None | Some(0) => DEFAULT_PAGE,
        Some(n) if n < 0 => {
            return Err(RpcError::new(
                ErrorCode::InvalidParams,
                "pageSize must not be negative",
            ));
        }
        Some(n) => usize::try_from(n).unwrap_or(MAX_PAGE).min(MAX_PAGE),
    };
    let offset = match request.page_token.as_str() {
        "" => 0,
        token => token.parse::<usize>().map_err(|_| {
            RpcError::new(
                ErrorCode::InvalidParams,
                "pageToken is not one this server gave",
            )
        })?,
    };
    let mut runs = runs_in_scope(state, user, request).await?;
    runs.sort_by(|a, b| {
        b.0.created_at
            .cmp(&a.0.created_at)
            .then_with(|| b.0.id.cmp(&a.0.id))
    });
    let mut tasks: Vec<Task> = Vec::new();
    for (run, ctx) in &runs {
        let mut task = task_of(state, run, &ids_of(run, ctx)).await?;
        if request.status.is_some_and(|s| s != task.status.state) {
            continue;
        }
        if let Some(after) = &request.status_timestamp_after
            && !changed_after(&task, after)
        {
            continue;
        }
        if !request.include_artifacts {
            task.artifacts.clear();
        }
        if request.history_length == Some(0) {
            task.history.clear();
        }
        tasks.push(task);
    }
    let total = tasks.len();
    let page: Vec<Task> = tasks.into_iter().skip(offset).take(page_size).collect();
    let next = offset + page.len();
    Ok(ListTasksResponse {
        tasks: page,
        next_page_token: if next < total {
            next.to_string()
        } else {
            String::new()
        },
        page_size: i64::try_from(page_size).unwrap_or(i64::MAX),
        total_size: i64::try_from(total).unwrap_or(i64::MAX),
    })
}

/// Whether the task's status changed after `after`, both RFC 3339 times
/// in UTC as this server writes them (so their text orders as time does).
fn changed_after(task: &Task, after: &str) -> bool {
    task.status
        .timestamp
        .as_deref()
        .is_some_and(|at| at > after)
}

/// The runs `request` may list, each with its task.
async fn runs_in_scope(
    state: &AppState,
    user: &User,
    request: &ListTasksRequest,
) -> Result<Vec<(AgentRun, TaskContext)>, RpcError> {
    let task_ids: Vec<String> = if !request.context_id.is_empty() {
        vec![request.context_id.clone()]
    } else {
        let projects = if request.tenant.is_empty() {
            list_projects(state, user).await.map_err(failed)?
        } else {
            vec![
                super::service::owned_project(state, user, &request.tenant, ProjectRole::Viewer)
                    .await
                    .map_err(not_found)?,
            ]
        };
        let mut ids = Vec::new();
        for project in projects {
            let tasks = list_tasks(state, user, &project.id).await.map_err(failed)?;
            ids.extend(tasks.into_iter().map(|t| t.id));
        }
        ids
    };
    let mut runs = Vec::new();
    for id in task_ids {
        let ctx = owned_task(state, user, &id, ProjectRole::Viewer)
            .await
            .map_err(not_found)?;
        for run in list_runs(state, &ctx).await.map_err(failed)? {
            runs.push((run, ctx.clone()));
        }
    }
    Ok(runs)
}

fn not_found(error: ApiError) -> RpcError {
    match error.status.as_u16() {
        400 | 404 => RpcError::new(
            ErrorCode::InvalidParams,
            "no such context or tenant of yours",
        ),
        _ => failed(error),
    }
}

fn failed(error: ApiError) -> RpcError {
    RpcError::new(ErrorCode::InternalError, error.message().to_owned())
}
