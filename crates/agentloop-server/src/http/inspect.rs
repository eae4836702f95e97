//! The run inspector's routes: `GET /api/agent-runs/{runId}/inspection`
//! (the run step by step, see [`crate::inspect`]), `GET
//! /api/agent-runs/{runId}/steps/{seq}/eval-case` (a step as an
//! `agentloop eval` dataset) and `GET
//! /api/agent-runs/{runId}/queued-messages` (messages sent to the run it
//! has not taken yet). Another user's run is a 404.

use axum::Json;
use axum::extract::{Path, State};

use super::error::ApiError;
use super::extract::{AuthUser, check_id};
use super::service;
use crate::inspect::RunInspection;
use crate::inspect::eval_case::EvalDataset;
use crate::state::AppState;

pub use super::service::QueuedMessages;

/// `GET /api/agent-runs/{runId}/inspection`.
pub(super) async fn inspection(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(run_id): Path<String>,
) -> Result<Json<RunInspection>, ApiError> {
    check_id(&run_id, "agent run")?;
    Ok(Json(service::inspect_run(&state, &user, &run_id).await?))
}

/// `GET /api/agent-runs/{runId}/steps/{seq}/eval-case`.
pub(super) async fn eval_case(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path((run_id, seq)): Path<(String, String)>,
) -> Result<Json<EvalDataset>, ApiError> {
    check_id(&run_id, "agent run")?;
    Ok(Json(
        service::eval_case(&state, &user, &run_id, &seq).await?,
    ))
}

/// `GET /api/agent-runs/{runId}/queued-messages`.
pub(super) async fn queued_messages(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(run_id): Path<String>,
) -> Result<Json<QueuedMessages>, ApiError> {
    check_id(&run_id, "agent run")?;
    Ok(Json(
        service::queued_messages(&state, &user, &run_id).await?,
    ))
}
