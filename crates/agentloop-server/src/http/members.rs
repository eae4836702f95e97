//! A project's members: `GET`/`POST /api/projects/{id}/members` and
//! `PATCH`/`DELETE /api/projects/{id}/members/{user}` (`user`: the
//! member's name or id). Any member lists them; an owner invites, changes
//! roles and removes; a member may remove themselves.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde_json::json;

use super::audit::{AuditNote, Created};
use super::error::ApiError;
use super::extract::{ApiJson, AuthUser};
use super::member_shapes::{MemberChange, MemberShape, MembersShape, NewMember};
use super::service;
use crate::state::AppState;

pub(super) async fn list(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(project_id): Path<String>,
) -> Result<Json<MembersShape>, ApiError> {
    let members = service::members(&state, &user, &project_id).await?;
    Ok(Json(MembersShape { members }))
}

pub(super) async fn add(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(project_id): Path<String>,
    ApiJson(body): ApiJson<NewMember>,
) -> Result<
    (
        StatusCode,
        Extension<Created>,
        Extension<AuditNote>,
        Json<MemberShape>,
    ),
    ApiError,
> {
    let member = service::add_member(&state, &user, &project_id, body).await?;
    let note = AuditNote(json!({ "user": member.name, "role": member.role }));
    Ok((
        StatusCode::CREATED,
        Extension(Created(member.user_id.clone())),
        Extension(note),
        Json(member),
    ))
}

pub(super) async fn change(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path((project_id, who)): Path<(String, String)>,
    ApiJson(body): ApiJson<MemberChange>,
) -> Result<(Extension<Created>, Extension<AuditNote>, Json<MemberShape>), ApiError> {
    let member = service::change_member(&state, &user, &project_id, &who, body).await?;
    let note = AuditNote(json!({ "user": member.name, "role": member.role }));
    Ok((
        Extension(Created(member.user_id.clone())),
        Extension(note),
        Json(member),
    ))
}

pub(super) async fn remove(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path((project_id, who)): Path<(String, String)>,
) -> Result<(StatusCode, Extension<Created>), ApiError> {
    let removed = service::remove_member(&state, &user, &project_id, &who).await?;
    Ok((StatusCode::NO_CONTENT, Extension(Created(removed))))
}
