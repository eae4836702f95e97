//! Signing in and out.

use crate::http::error::ApiError;
use crate::state::AppState;
use crate::users::{User, issue_token, revoke_token};

/// Signs in with a bearer token: the user and a new session token.
pub async fn sign_in(state: &AppState, token: &str) -> Result<(User, String), ApiError> {
    let user = crate::http::extract::authenticate(state, token).await?;
    let session = issue_token(&*state.store, &user.id).await?;
    Ok((user, session))
}

/// Signs out: the session's token stops working.
pub async fn sign_out(state: &AppState, session: &str) -> Result<(), ApiError> {
    Ok(revoke_token(&*state.store, session).await?)
}
