//! Reading the audit log.

use agentloop_storage::ProjectRole;
use agentloop_storage::model::{AuditEntry, AuditFilter};

use crate::http::error::ApiError;
use crate::http::requests::AuditQuery;
use crate::state::AppState;
use crate::users::User;

use super::owned::owned_project;

/// Entries read at most at once.
pub const AUDIT_LIMIT_MAX: u32 = 1000;

/// The audit entries `query` asks for that `user` may read: a project's
/// (any user's actions on it) when the user owns it, else the user's own
/// actions and the operator's on their account. Oldest first; the newest `limit` (100 by default, at most
/// [`AUDIT_LIMIT_MAX`]).
pub async fn audit_log(
    state: &AppState,
    user: &User,
    query: AuditQuery,
) -> Result<Vec<AuditEntry>, ApiError> {
    let limit = query.limit.unwrap_or(100);
    if limit == 0 || limit > AUDIT_LIMIT_MAX {
        return Err(ApiError::bad_request(format!(
            "limit: a whole number from 1 to {AUDIT_LIMIT_MAX}"
        )));
    }
    let project_id = match &query.project_id {
        Some(id) => Some(owned_project(state, user, id, ProjectRole::Owner).await?.id),
        None => None,
    };
    let user_id = match (&project_id, query.user_id) {
        (Some(_), asked) => asked,
        (None, Some(asked)) if asked != user.id => {
            return Err(ApiError::bad_request(
                "user_id: another user's actions are read within a project you own \
                 (name it with project_id)",
            ));
        }
        (None, _) => Some(user.id.clone()),
    };
    let own = project_id.is_none();
    let filter = AuditFilter {
        project_id,
        user_id,
        since: query.since,
        until: query.until,
        limit,
        ..AuditFilter::default()
    };
    let mut entries = state.store.list_audit(&filter).await?;
    if own {
        // With the user's own actions, what the operator did to their
        // account (`agentloop users`).
        let on_account = AuditFilter {
            user_id: None,
            operator_on: Some(user.id.clone()),
            ..filter
        };
        entries.extend(state.store.list_audit(&on_account).await?);
        entries.sort_by(|a, b| (a.at, &a.id).cmp(&(b.at, &b.id)));
        let keep = usize::try_from(limit).unwrap_or(usize::MAX);
        entries.drain(..entries.len().saturating_sub(keep));
    }
    Ok(entries)
}
