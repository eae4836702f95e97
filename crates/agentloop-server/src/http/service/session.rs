//! Signing in and out.

use agentloop_storage::model::now_millis;

use crate::http::error::ApiError;
use crate::state::AppState;
use crate::users::{User, issue_token_expiring, live_token, revoke_token};

/// Signs in with a bearer token: the user and a new session token, which
/// expires when the bearer token does.
pub async fn sign_in(state: &AppState, token: &str) -> Result<(User, String), ApiError> {
    let user = crate::http::extract::authenticate(state, token).await?;
    let expires_at = live_token(&*state.store, token.trim(), now_millis())
        .await?
        .and_then(|(_, stored)| stored.expires_at);
    let session = issue_token_expiring(&*state.store, &user.id, expires_at).await?;
    Ok((user, session))
}

/// Signs out: the session's token stops working, and the streams it
/// opened end.
pub async fn sign_out(state: &AppState, session: &str) -> Result<(), ApiError> {
    revoke_token(&*state.store, session).await?;
    state.revocations.notify_waiters();
    Ok(())
}
