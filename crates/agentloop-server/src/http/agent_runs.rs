//! Agent runs: start one (seed 004's POST), list, read, cancel; what a
//! waiting run waits for and the decisions that resume it.

use agentloop_storage::ProjectRole;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};

use super::audit::Created;
use super::error::ApiError;
use super::extract::{ApiJson, AuthUser, check_id};
use super::requests::{Decisions, NewAgentRun};
use super::responses::{AgentRunView, DecisionsAnswer, InputAnswer, PendingAnswer, pending_shapes};
use super::service::{self, Submitted, Target};
use crate::shapes::AgentRunShape;
use crate::state::AppState;
use agentloop_storage::model::AgentType;
use agentloop_types::RunInput;

pub(super) async fn create(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(task_id): Path<String>,
    ApiJson(body): ApiJson<NewAgentRun>,
) -> Result<(StatusCode, Extension<Created>, Json<AgentRunShape>), ApiError> {
    check_id(&task_id, "task")?;
    let ctx = service::owned_task(&state, &user, &task_id, ProjectRole::Editor).await?;
    let agent = AgentType::from(body.agent_type).as_str().to_owned();
    let start = RunInput::Start {
        agent: Some(agent),
        message: None,
        client_tools: Vec::new(),
    };
    let run = service::submit(&state, &user, Target::Task(&ctx), start)
        .await?
        .into_run()?;
    Ok((
        StatusCode::CREATED,
        Extension(Created(run.id.clone())),
        Json(AgentRunShape::of(&run)),
    ))
}

pub(super) async fn list(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(task_id): Path<String>,
) -> Result<Json<Vec<AgentRunView>>, ApiError> {
    let ctx = service::owned_task(&state, &user, &task_id, ProjectRole::Viewer).await?;
    let runs = service::list_runs(&state, &ctx).await?;
    let mut listed = Vec::with_capacity(runs.len());
    for run in &runs {
        let details = service::run_details(&state, run).await?;
        listed.push(
            AgentRunView::of(run, details.tokens, details.pending.as_deref()).in_task(&ctx.task),
        );
    }
    Ok(Json(listed))
}

/// `GET /api/agent-runs/{id}/pending`: what the run waits for (empty
/// unless it is waiting).
pub(super) async fn pending(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(run_id): Path<String>,
) -> Result<Json<PendingAnswer>, ApiError> {
    let (run, _) = service::owned_run(&state, &user, &run_id, ProjectRole::Viewer).await?;
    let pending = service::pending(&state, &run).await?;
    Ok(Json(PendingAnswer {
        agent_run: AgentRunShape::of(&run),
        pending: pending_shapes(&pending),
    }))
}

/// `POST /api/agent-runs/{id}/decisions`: records decisions on the calls
/// a waiting run waits on; once every call is decided the run resumes.
pub(super) async fn decisions(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(run_id): Path<String>,
    ApiJson(body): ApiJson<Decisions>,
) -> Result<Json<DecisionsAnswer>, ApiError> {
    let (run, ctx) = service::owned_run(&state, &user, &run_id, ProjectRole::Editor).await?;
    let decisions = body.parse()?.into_iter().collect();
    let submitted = service::submit(
        &state,
        &user,
        Target::Run(&run, &ctx),
        RunInput::Decide { decisions },
    )
    .await?;
    let resumed = matches!(submitted, Submitted::Decided { resumed: true, .. });
    let run = service::current_run(&state, &run.id).await?;
    let pending = service::pending(&state, &run).await?;
    Ok(Json(DecisionsAnswer {
        agent_run: AgentRunShape::of(&run),
        pending: pending_shapes(&pending),
        resumed,
    }))
}

pub(super) async fn get_one(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(run_id): Path<String>,
) -> Result<Json<AgentRunView>, ApiError> {
    let (run, ctx) = service::owned_run(&state, &user, &run_id, ProjectRole::Viewer).await?;
    let details = service::run_details(&state, &run).await?;
    Ok(Json(
        AgentRunView::of(&run, details.tokens, details.pending.as_deref()).in_task(&ctx.task),
    ))
}

pub(super) async fn messages(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(run_id): Path<String>,
) -> Result<Json<Vec<agentloop_storage::model::StoredMessage>>, ApiError> {
    let (run, _) = service::owned_run(&state, &user, &run_id, ProjectRole::Viewer).await?;
    Ok(Json(service::run_messages(&state, &run).await?))
}

pub(super) async fn cancel(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(run_id): Path<String>,
) -> Result<Json<AgentRunShape>, ApiError> {
    let (run, ctx) = service::owned_run(&state, &user, &run_id, ProjectRole::Editor).await?;
    let run = service::submit(&state, &user, Target::Run(&run, &ctx), RunInput::Cancel {})
        .await?
        .into_run()?;
    Ok(Json(AgentRunShape::of(&run)))
}

/// `POST /api/tasks/{taskId}/inputs`: an input submitted to the task.
pub(super) async fn task_input(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(task_id): Path<String>,
    ApiJson(input): ApiJson<RunInput>,
) -> Result<Json<InputAnswer>, ApiError> {
    let ctx = service::owned_task(&state, &user, &task_id, ProjectRole::Editor).await?;
    let submitted = service::submit(&state, &user, Target::Task(&ctx), input).await?;
    input_answer(&state, submitted).await
}

/// `POST /api/agent-runs/{runId}/inputs`: an input submitted to the run.
pub(super) async fn run_input(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(run_id): Path<String>,
    ApiJson(input): ApiJson<RunInput>,
) -> Result<Json<InputAnswer>, ApiError> {
    let (run, ctx) = service::owned_run(&state, &user, &run_id, ProjectRole::Editor).await?;
    let submitted = service::submit(&state, &user, Target::Run(&run, &ctx), input).await?;
    input_answer(&state, submitted).await
}

/// An input a durable engine's ingress took for run `run_id` (Restate's
/// `AgentRun/{runId}/submit`): submitted as the run's owner would submit
/// it to `POST /api/agent-runs/{runId}/inputs`, with the same answer. The
/// engine's ingress is the operator's, so it acts for the run's owner.
pub async fn engine_input(
    state: &AppState,
    run_id: &str,
    input: RunInput,
) -> Result<InputAnswer, ApiError> {
    let (run, ctx) = service::run_for_engine(state, run_id).await?;
    let owner = service::task_owner(state, &ctx).await?;
    let submitted = service::submit(state, &owner, Target::Run(&run, &ctx), input).await?;
    input_answer(state, submitted)
        .await
        .map(|Json(answer)| answer)
}

/// What the input did, with its run as it is now.
async fn input_answer(
    state: &AppState,
    submitted: Submitted,
) -> Result<Json<InputAnswer>, ApiError> {
    let (kind, resumed) = match &submitted {
        Submitted::Started(_) => ("started", None),
        Submitted::Decided { resumed, .. } => ("decided", Some(*resumed)),
        Submitted::Cancelled(_) => ("cancelled", None),
        Submitted::Queued {
            interrupted: false, ..
        } => ("queued", None),
        Submitted::Queued {
            interrupted: true, ..
        } => ("interrupted", None),
        Submitted::Stopped => ("stopped", None),
    };
    let agent_run = match submitted {
        Submitted::Stopped => None,
        other => {
            let run = other.into_run()?;
            Some(AgentRunShape::of(
                &service::current_run(state, &run.id).await?,
            ))
        }
    };
    Ok(Json(InputAnswer {
        submitted: kind,
        agent_run,
        resumed,
    }))
}
