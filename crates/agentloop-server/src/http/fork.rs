//! An agent run's kept steps, and forks of it at one of them
//! (`POST /api/agent-runs/{runId}/fork`; see [`crate::fork`]).

use agentloop_storage::ProjectRole;
use agentloop_storage::RunStep;
use agentloop_types::{RunPhase, TokenTotals};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::audit::Created;
use super::error::ApiError;
use super::extract::{ApiJson, AuthUser, check_id};
use super::requests::RequestBody;
use super::service;
use crate::fork::{ForkError, fork_agent_run};
use crate::shapes::AgentRunShape;
use crate::state::AppState;

/// `POST /api/agent-runs/{runId}/fork`: where to fork the run.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkRequest {
    /// The seq of the step to fork at (one of `GET
    /// /api/agent-runs/{runId}/steps`).
    pub at: u64,
    /// A message of the person's the fork takes before it goes on (only
    /// at a step where the run calls the model next).
    #[serde(default)]
    pub prompt: Option<String>,
    /// Also put the project's folder back as it was at the step (as `POST
    /// /api/agent-runs/{runId}/rewind` does) before the fork runs.
    #[serde(default, rename = "restoreFiles")]
    pub restore_files: bool,
}

impl RequestBody for ForkRequest {}

/// One kept step of a run.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "RunStep")]
pub struct StepShape {
    /// The seq of the last event logged before the step: its address.
    pub seq: u64,
    /// When it was taken (Unix ms).
    pub at: i64,
    /// Messages of the run's history at the step.
    pub messages: u64,
    /// Tokens spent by the step (the run's totals then).
    pub tokens: TokenTotals,
    /// Tool calls made by the step.
    pub tool_calls: u32,
    /// Model turns started by the step.
    pub model_turns: u32,
    /// What the run does next: `model`, `tools` or `end`.
    pub next: &'static str,
}

impl StepShape {
    fn of(step: &RunStep) -> Self {
        Self {
            seq: step.seq,
            at: step.created_at,
            messages: step.message_count,
            tokens: step.tokens(),
            tool_calls: step.state.tool_calls,
            model_turns: step.state.iteration,
            next: match step.state.phase {
                RunPhase::CallModel => "model",
                RunPhase::RunTools { .. } => "tools",
                RunPhase::Finished => "end",
            },
        }
    }
}

/// `GET /api/agent-runs/{runId}/steps`: the steps the run keeps, oldest
/// first.
pub(super) async fn steps(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(run_id): Path<String>,
) -> Result<Json<Vec<StepShape>>, ApiError> {
    let steps = service::run_steps(&state, &user, &run_id).await?;
    Ok(Json(steps.iter().map(StepShape::of).collect()))
}

/// `POST /api/agent-runs/{runId}/fork`: forks the run at a step as a new
/// agent run of its task.
pub(super) async fn fork(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(run_id): Path<String>,
    ApiJson(body): ApiJson<ForkRequest>,
) -> Result<(StatusCode, Extension<Created>, Json<AgentRunShape>), ApiError> {
    check_id(&run_id, "agent run")?;
    let (run, ctx) = service::owned_run(&state, &user, &run_id, ProjectRole::Editor).await?;
    let forked = fork_agent_run(
        &state,
        &ctx,
        &run,
        body.at,
        body.prompt.as_deref(),
        body.restore_files,
    )
    .await
    .map_err(|error| match error {
        ForkError::Step(e) => ApiError::bad_request(e.to_string()),
        ForkError::Start(e) => service::start_error(e),
        ForkError::Runtime(e) => e.into(),
        ForkError::Files(e) => e.into(),
    })?;
    Ok((
        StatusCode::CREATED,
        Extension(Created(forked.id.clone())),
        Json(AgentRunShape::of(&forked)),
    ))
}
