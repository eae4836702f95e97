//! A project's members: listed by any member, invited, changed and
//! removed by an owner (a member may also leave). The project's creator
//! owns it for good: their role neither changes nor goes.

use agentloop_storage::model::{Project, User as StoredUser, now_millis};
use agentloop_storage::{ProjectMember, ProjectRole, StorageError};
use axum::http::StatusCode;

use super::owned::{forbidden, project_access};
use crate::http::error::ApiError;
use crate::http::member_shapes::{MemberChange, MemberShape, NewMember};
use crate::runner::project_owner;
use crate::state::AppState;
use crate::users::User;

/// The members of the project `project_id`: its creator first, then the
/// invited ones as they were added. Any member reads them.
pub async fn members(
    state: &AppState,
    user: &User,
    project_id: &str,
) -> Result<Vec<MemberShape>, ApiError> {
    let (project, _) = project_access(state, user, project_id, ProjectRole::Viewer).await?;
    let mut listed = Vec::new();
    if let Some(creator) = project_owner(&project) {
        match state.store.get_user(creator).await {
            Ok(found) => listed.push(creator_shape(&found, &project)),
            // A deleted account owns nothing any more.
            Err(StorageError::NotFound { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    for member in state.store.list_project_members(&project.id).await? {
        match state.store.get_user(&member.user_id).await {
            Ok(found) => listed.push(member_shape(&found, &member)),
            Err(StorageError::NotFound { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(listed)
}

/// Invites the user `body.user` names into the project with its role (an
/// owner's change).
pub async fn add_member(
    state: &AppState,
    user: &User,
    project_id: &str,
    body: NewMember,
) -> Result<MemberShape, ApiError> {
    let (project, _) = project_access(state, user, project_id, ProjectRole::Owner).await?;
    let invited = named_user(state, &body.user).await?;
    if project_owner(&project) == Some(invited.id.as_str()) {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("{} created this project and owns it", invited.name),
        ));
    }
    let member = ProjectMember {
        project_id: project.id.clone(),
        user_id: invited.id.clone(),
        role: body.role.into(),
        added_at: now_millis(),
    };
    match state.store.add_project_member(&member).await {
        Ok(()) => Ok(member_shape(&invited, &member)),
        Err(StorageError::AlreadyExists { .. }) => Err(ApiError::new(
            StatusCode::CONFLICT,
            format!(
                "{} is already a member of this project (change their role with PATCH)",
                invited.name
            ),
        )),
        Err(e) => Err(e.into()),
    }
}

/// Changes the role of the member `who` names (an owner's change).
pub async fn change_member(
    state: &AppState,
    user: &User,
    project_id: &str,
    who: &str,
    change: MemberChange,
) -> Result<MemberShape, ApiError> {
    let (project, _) = project_access(state, user, project_id, ProjectRole::Owner).await?;
    let member = invited_member(state, &project, who).await?;
    let role = ProjectRole::from(change.role);
    state
        .store
        .set_project_role(&project.id, &member.id, role)
        .await?;
    let stored = ProjectMember {
        project_id: project.id,
        user_id: member.id.clone(),
        role,
        added_at: 0,
    };
    let added_at = state
        .store
        .list_project_members(&stored.project_id)
        .await?
        .into_iter()
        .find(|m| m.user_id == member.id)
        .map_or(0, |m| m.added_at);
    Ok(member_shape(&member, &ProjectMember { added_at, ..stored }))
}

/// Removes the member `who` names: an owner's change, or a member
/// leaving. Returns the user removed.
pub async fn remove_member(
    state: &AppState,
    user: &User,
    project_id: &str,
    who: &str,
) -> Result<String, ApiError> {
    let (project, role) = project_access(state, user, project_id, ProjectRole::Viewer).await?;
    let leaving = who == user.id || who == user.name;
    if !leaving && !role.allows(ProjectRole::Owner) {
        return Err(forbidden(role, ProjectRole::Owner));
    }
    let member = invited_member(state, &project, who).await?;
    state
        .store
        .remove_project_member(&project.id, &member.id)
        .await?;
    Ok(member.id)
}

/// The user named (or with the id) `who`; a 404 when none is.
async fn named_user(state: &AppState, who: &str) -> Result<StoredUser, ApiError> {
    let users = state.store.list_users().await?;
    users
        .iter()
        .find(|u| u.name == who)
        .or_else(|| users.iter().find(|u| u.id == who))
        .cloned()
        .ok_or_else(|| ApiError::not_found(format!("no user is named {who:?}")))
}

/// The invited member `who` names: a 409 for the project's creator, a
/// 404 for a user who is no member.
async fn invited_member(
    state: &AppState,
    project: &Project,
    who: &str,
) -> Result<StoredUser, ApiError> {
    let not_member = || ApiError::not_found(format!("{who:?} is not a member of this project"));
    let member = match named_user(state, who).await {
        Ok(member) => member,
        Err(e) if e.status == StatusCode::NOT_FOUND => return Err(not_member()),
        Err(e) => return Err(e),
    };
    if project_owner(project) == Some(member.id.as_str()) {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "the project's creator owns it for good: their role cannot change and they cannot \
             be removed",
        ));
    }
    match state.store.project_role(&project.id, &member.id).await? {
        Some(_) => Ok(member),
        None => Err(not_member()),
    }
}

fn creator_shape(user: &StoredUser, project: &Project) -> MemberShape {
    MemberShape::new(
        &user.id,
        &user.name,
        ProjectRole::Owner,
        true,
        project.created_at,
    )
}

fn member_shape(user: &StoredUser, member: &ProjectMember) -> MemberShape {
    MemberShape::new(&user.id, &user.name, member.role, false, member.added_at)
}

/// The projects `user` was invited to (not those they created).
pub async fn invited_to(state: &AppState, user: &User) -> Result<Vec<String>, ApiError> {
    let memberships = state.store.list_memberships(&user.id).await?;
    Ok(memberships.into_iter().map(|m| m.project_id).collect())
}
