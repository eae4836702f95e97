//! Schedules: created, read, changed (paused, resumed) and deleted by
//! their project's owner. The scheduler ([`crate::scheduler`]) fires
//! them.

use agentloop_storage::ProjectRole;
use agentloop_storage::StorageError;
use agentloop_storage::budgets::{BudgetScope, BudgetScopeKind};
use agentloop_storage::model::{AgentType, now_millis};
use agentloop_storage::schedules::Schedule;

use super::owned::{owned_project, owned_task};
use crate::http::error::ApiError;
use crate::http::extract::check_id;
use crate::http::requests::Change;
use crate::http::schedule_shapes::{NewSchedule, ScheduleChange};
use crate::ids::new_id;
use crate::schedule_time::DEFAULT_TIME_ZONE;
use crate::state::AppState;
use crate::users::User;

/// The first tick of `cron` in `zone` after `now`: a 400 naming what is
/// wrong with either.
fn first_tick(cron: &str, zone: &str, now: i64) -> Result<i64, ApiError> {
    crate::schedule_time::first_tick(cron, zone, now)
        .map_err(|e| ApiError::bad_request(e.to_string()))
}

/// Creates a schedule of one of the user's project's tasks.
pub async fn create_schedule(
    state: &AppState,
    user: &User,
    project_id: &str,
    body: NewSchedule,
) -> Result<Schedule, ApiError> {
    let project = owned_project(state, user, project_id, ProjectRole::Editor).await?;
    let ctx = owned_task(state, user, &body.task_id, ProjectRole::Editor).await?;
    if ctx.project.id != project.id {
        return Err(ApiError::not_found("Task not found"));
    }
    let now = now_millis();
    let zone = body
        .time_zone
        .as_deref()
        .map(str::trim)
        .unwrap_or(DEFAULT_TIME_ZONE)
        .to_owned();
    let cron = body.cron.trim().to_owned();
    let next_fire_at = first_tick(&cron, &zone, now)?;
    let schedule = Schedule {
        id: new_id(),
        project_id: project.id,
        task_id: ctx.task.id,
        cron,
        time_zone: zone,
        agent: body
            .agent
            .map_or(AgentType::Implementation, AgentType::from),
        prompt: body.prompt.filter(|p| !p.trim().is_empty()),
        paused: body.paused,
        next_fire_at,
        last_fired_at: None,
        last_outcome: None,
        created_by: user.id.clone(),
        created_at: now,
        updated_at: now,
    };
    state.store.create_schedule(&schedule).await?;
    state.schedules.notify_one();
    Ok(schedule)
}

/// The project's schedules, oldest first.
pub async fn schedules(
    state: &AppState,
    user: &User,
    project_id: &str,
) -> Result<Vec<Schedule>, ApiError> {
    let project = owned_project(state, user, project_id, ProjectRole::Viewer).await?;
    Ok(state.store.list_schedules(&project.id).await?)
}

/// One of the user's schedules (400 for a malformed id, 404 for an
/// unknown one or another user's).
pub async fn schedule(
    state: &AppState,
    user: &User,
    id: &str,
    needed: ProjectRole,
) -> Result<Schedule, ApiError> {
    check_id(id, "schedule")?;
    let found = match state.store.get_schedule(id).await {
        Ok(found) => found,
        Err(StorageError::NotFound { .. }) => {
            return Err(ApiError::not_found("Schedule not found"));
        }
        Err(e) => return Err(e.into()),
    };
    match owned_project(state, user, &found.project_id, needed).await {
        Ok(_) => Ok(found),
        Err(e) if e.status == axum::http::StatusCode::NOT_FOUND => {
            Err(ApiError::not_found("Schedule not found"))
        }
        Err(e) => Err(e),
    }
}

/// Changes a schedule. Its next tick is the first after now by its
/// (new) expression: a resumed schedule fires none of the ticks that
/// fell while it was paused, and a tick already claimed never comes back.
pub async fn edit_schedule(
    state: &AppState,
    user: &User,
    id: &str,
    change: ScheduleChange,
) -> Result<Schedule, ApiError> {
    let mut edited = schedule(state, user, id, ProjectRole::Editor).await?;
    if let Some(cron) = change.cron {
        edited.cron = cron.trim().to_owned();
    }
    if let Some(zone) = change.time_zone {
        edited.time_zone = zone.trim().to_owned();
    }
    if let Some(agent) = change.agent {
        edited.agent = agent.into();
    }
    match change.prompt {
        Change::Keep => {}
        Change::Clear => edited.prompt = None,
        Change::Set(prompt) => edited.prompt = Some(prompt).filter(|p| !p.trim().is_empty()),
    }
    if let Some(paused) = change.paused {
        edited.paused = paused;
    }
    let now = now_millis();
    edited.next_fire_at = first_tick(&edited.cron, &edited.time_zone, now)?;
    edited.updated_at = now;
    state.store.update_schedule(&edited).await?;
    state.schedules.notify_one();
    Ok(state.store.get_schedule(&edited.id).await?)
}

/// Deletes a schedule and its budgets; a run it started goes on, no
/// longer held to them.
pub async fn delete_schedule(state: &AppState, user: &User, id: &str) -> Result<(), ApiError> {
    let gone = schedule(state, user, id, ProjectRole::Editor).await?;
    state.store.delete_schedule(&gone.id).await?;
    let scope = BudgetScope::new(BudgetScopeKind::Schedule, gone.id);
    state.store.set_budgets(&scope, &[], now_millis()).await?;
    state.schedules.notify_one();
    Ok(())
}
