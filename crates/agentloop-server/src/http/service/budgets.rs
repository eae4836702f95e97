//! Budgets of a user, a project, a task or a schedule: read, or replaced
//! then read.

use agentloop_storage::ProjectRole;
use agentloop_storage::budgets::{BudgetLimit, BudgetScope, BudgetScopeKind, BudgetUsage};
use agentloop_storage::model::now_millis;

use super::owned::{owned_project, owned_task};
use super::schedules::schedule;
use crate::http::error::ApiError;
use crate::state::AppState;
use crate::users::User;

/// What reading (a viewer) or replacing (an owner) a project's or task's
/// budgets needs.
fn needed(change: Option<&[BudgetLimit]>) -> ProjectRole {
    if change.is_some() {
        ProjectRole::Owner
    } else {
        ProjectRole::Viewer
    }
}

/// Replaces the scope's budgets with `change` when given, and reads them.
async fn budgets_of(
    state: &AppState,
    scope: BudgetScope,
    change: Option<&[BudgetLimit]>,
) -> Result<(BudgetScope, Vec<BudgetUsage>), ApiError> {
    let now = now_millis();
    if let Some(limits) = change {
        state.store.set_budgets(&scope, limits, now).await?;
    }
    let usage = state.store.budgets(&scope, now).await?;
    Ok((scope, usage))
}

/// The budgets of the user's project `id` (404 for another user's).
pub async fn project_budgets(
    state: &AppState,
    user: &User,
    id: &str,
    change: Option<&[BudgetLimit]>,
) -> Result<(BudgetScope, Vec<BudgetUsage>), ApiError> {
    let project = owned_project(state, user, id, needed(change)).await?;
    budgets_of(
        state,
        BudgetScope::new(BudgetScopeKind::Project, project.id),
        change,
    )
    .await
}

/// The budgets of the user's task `id` (404 for another user's).
pub async fn task_budgets(
    state: &AppState,
    user: &User,
    id: &str,
    change: Option<&[BudgetLimit]>,
) -> Result<(BudgetScope, Vec<BudgetUsage>), ApiError> {
    let ctx = owned_task(state, user, id, needed(change)).await?;
    budgets_of(
        state,
        BudgetScope::new(BudgetScopeKind::Task, ctx.task.id),
        change,
    )
    .await
}

/// The user's own budgets, over every project the user owns.
pub async fn user_budgets(
    state: &AppState,
    user: &User,
    change: Option<&[BudgetLimit]>,
) -> Result<(BudgetScope, Vec<BudgetUsage>), ApiError> {
    budgets_of(
        state,
        BudgetScope::new(BudgetScopeKind::User, user.id.clone()),
        change,
    )
    .await
}

/// The budgets of the user's schedule `id` (404 for another user's).
pub async fn schedule_budgets(
    state: &AppState,
    user: &User,
    id: &str,
    change: Option<&[BudgetLimit]>,
) -> Result<(BudgetScope, Vec<BudgetUsage>), ApiError> {
    let found = schedule(state, user, id, needed(change)).await?;
    budgets_of(
        state,
        BudgetScope::new(BudgetScopeKind::Schedule, found.id),
        change,
    )
    .await
}

/// The budgets of schedule `id`, with their spend now (the caller has
/// checked the schedule is the user's).
pub async fn budgets_of_schedule(state: &AppState, id: &str) -> Result<Vec<BudgetUsage>, ApiError> {
    let scope = BudgetScope::new(BudgetScopeKind::Schedule, id);
    Ok(state.store.budgets(&scope, now_millis()).await?)
}
