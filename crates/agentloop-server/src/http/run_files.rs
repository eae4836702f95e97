//! A run's project folder at its steps, over HTTP (see
//! [`crate::run_files`]): `POST /api/agent-runs/{runId}/rewind` puts the
//! folder back as it was at a step, `GET …/file-changes` shows what
//! changed from one step to another (or to the folder now).

use agentloop_storage::ProjectRole;
use agentloop_tools::checkpoint::FileChange;
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::error::ApiError;
use super::extract::{ApiJson, AuthUser, check_id};
use super::requests::RequestBody;
use super::responses::RunConflict;
use super::service;
use crate::run_files::{self, RunFilesError};
use crate::shapes::{AgentRunShape, to_json};
use crate::state::AppState;

/// `POST /api/agent-runs/{runId}/rewind`: the step to put the folder back
/// to.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RewindRequest {
    /// The seq of the step (one of `GET /api/agent-runs/{runId}/steps`).
    pub to: u64,
}

impl RequestBody for RewindRequest {}

/// `GET /api/agent-runs/{runId}/file-changes`: between which steps.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileChangesQuery {
    /// The seq of the step to compare from.
    pub at: u64,
    /// The seq of the step to compare to (default: the folder as it is
    /// now); an earlier one shows what going back would change.
    #[serde(default)]
    pub to: Option<u64>,
}

/// What a rewind changed in the project's folder.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FilesRestored {
    /// False when no call that may write started after the step: the
    /// folder was left as it is.
    pub restored: bool,
    /// Paths written or made again.
    pub written: Vec<String>,
    /// Paths removed (a folder once, with what it held).
    pub removed: Vec<String>,
}

/// What the run changed in the project's folder between two steps.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FileChanges {
    /// The later side: `null` for the folder as it is now.
    pub to: Option<u64>,
    /// Each path that changed (files and links), with a unified diff for
    /// text.
    pub changes: Vec<FileChange>,
}

impl From<RunFilesError> for ApiError {
    fn from(error: RunFilesError) -> Self {
        match error {
            RunFilesError::Off => ApiError::bad_request(error.to_string()),
            RunFilesError::Store(e) => e.into(),
            RunFilesError::Checkpoint(_) | RunFilesError::Stopped(_) => {
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, error.to_string())
            }
        }
    }
}

/// `POST /api/agent-runs/{runId}/rewind`.
pub(super) async fn rewind(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(run_id): Path<String>,
    ApiJson(body): ApiJson<RewindRequest>,
) -> Result<Json<FilesRestored>, ApiError> {
    check_id(&run_id, "agent run")?;
    let (run, ctx) = service::owned_run(&state, &user, &run_id, ProjectRole::Editor).await?;
    // Not under a run of the task, this one or a later link of its chain.
    if let Some(active) = state.store.active_agent_run(&ctx.task.id).await? {
        return Err(ApiError {
            status: StatusCode::CONFLICT,
            body: to_json(&RunConflict {
                error: format!(
                    "an agent run of the task is {}: the folder is not rewound under it (cancel it, or let it end, first)",
                    active.status.as_str()
                ),
                agent_run: Some(AgentRunShape::of(&active)),
            }),
        });
    }
    let restored = run_files::restore(&state, &ctx, &run.id, body.to).await?;
    Ok(Json(match restored {
        Some(restored) => FilesRestored {
            restored: true,
            written: restored.written,
            removed: restored.removed,
        },
        None => FilesRestored {
            restored: false,
            written: Vec::new(),
            removed: Vec::new(),
        },
    }))
}

/// `GET /api/agent-runs/{runId}/file-changes?at=SEQ[&to=SEQ]`.
pub(super) async fn file_changes(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(run_id): Path<String>,
    query: Result<Query<FileChangesQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<FileChanges>, ApiError> {
    check_id(&run_id, "agent run")?;
    let (run, ctx) = service::owned_run(&state, &user, &run_id, ProjectRole::Viewer).await?;
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let changes = run_files::changes(&state, &ctx, &run.id, query.at, query.to).await?;
    Ok(Json(FileChanges {
        to: query.to,
        changes: changes.unwrap_or_default(),
    }))
}
