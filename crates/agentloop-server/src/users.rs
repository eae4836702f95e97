//! Users and their bearer tokens.
//!
//! Users and token hashes live in the store every instance shares, through
//! its [`UserStore`](agentloop_storage::UserStore) part: they belong to no
//! project, so project listings and exports never see them. Only the
//! SHA-256 of a token is stored; the token itself is shown once, when it
//! is issued. A token may expire; a user's tokens can be reset (new one
//! issued, every other revoked) or revoked, and a user deleted. A stream
//! or WebSocket a token opened ends once the token stops authenticating
//! ([`until_invalid`]).

use std::sync::Arc;
use std::time::Duration;

use agentloop_storage::model::{UserToken, now_millis};
use agentloop_storage::{StorageError, StorageResult, Store};
use agentloop_types::CancellationToken;
use futures::StreamExt;
use tokio::sync::Notify;

use crate::ids::{new_id, new_token, token_hash};

pub use agentloop_storage::model::User;

/// Creates a user and returns it with its bearer token. A name is
/// required and unique: an empty one is [`StorageError::Invalid`], one
/// another user has is [`StorageError::AlreadyExists`] (kind `user`, the
/// name as id), and nothing is created.
pub async fn create_user(store: &dyn Store, name: &str) -> StorageResult<(User, String)> {
    create_user_expiring(store, name, None).await
}

/// [`create_user`] with a token that expires at `expires_at` (Unix ms;
/// `None`: never).
pub async fn create_user_expiring(
    store: &dyn Store,
    name: &str,
    expires_at: Option<i64>,
) -> StorageResult<(User, String)> {
    let name = name.trim();
    if name.is_empty() {
        return Err(StorageError::Invalid(
            "a user needs a name that is not empty".to_owned(),
        ));
    }
    if store
        .list_users()
        .await?
        .iter()
        .any(|user| user.name == name)
    {
        return Err(StorageError::AlreadyExists {
            kind: "user",
            id: name.to_owned(),
        });
    }
    let user = User {
        id: new_id(),
        name: name.to_owned(),
        created_at: now_millis(),
    };
    store.create_user(&user).await?;
    let token = issue_token_expiring(store, &user.id, expires_at).await?;
    Ok((user, token))
}

/// Issues another bearer token for an existing user and returns it.
pub async fn issue_token(store: &dyn Store, user_id: &str) -> StorageResult<String> {
    issue_token_expiring(store, user_id, None).await
}

/// [`issue_token`] with a token that expires at `expires_at` (Unix ms;
/// `None`: never).
pub async fn issue_token_expiring(
    store: &dyn Store,
    user_id: &str,
    expires_at: Option<i64>,
) -> StorageResult<String> {
    let token = new_token();
    store
        .add_token(&UserToken {
            token_hash: token_hash(&token),
            user_id: user_id.to_owned(),
            created_at: now_millis(),
            expires_at,
        })
        .await?;
    Ok(token)
}

/// The user named `name`; `NotFound` (kind `user`, the name as id) when
/// there is none.
pub async fn user_named(store: &dyn Store, name: &str) -> StorageResult<User> {
    let name = name.trim();
    store
        .list_users()
        .await?
        .into_iter()
        .find(|user| user.name == name)
        .ok_or_else(|| StorageError::not_found("user", name))
}

/// Rotates a user's tokens: every token they hold (browser sessions
/// included) is revoked and one new token, expiring at `expires_at`, is
/// returned.
pub async fn reset_tokens(
    store: &dyn Store,
    user_id: &str,
    expires_at: Option<i64>,
) -> StorageResult<String> {
    store.revoke_user_tokens(user_id).await?;
    issue_token_expiring(store, user_id, expires_at).await
}

/// Revokes every token of a user; returns how many there were.
pub async fn revoke_user_tokens(store: &dyn Store, user_id: &str) -> StorageResult<u64> {
    store.revoke_user_tokens(user_id).await
}

/// Deletes a user with their tokens. Refused ([`StorageError::Invalid`])
/// while they own projects: those would be left with no one to reach
/// them.
pub async fn delete_user(store: &dyn Store, user_id: &str) -> StorageResult<()> {
    let owned = store
        .list_projects()
        .await?
        .iter()
        .filter(|p| p.settings.get("owner").and_then(|o| o.as_str()) == Some(user_id))
        .count();
    if owned > 0 {
        return Err(StorageError::Invalid(format!(
            "the user owns {owned} project{}: delete them first",
            if owned == 1 { "" } else { "s" }
        )));
    }
    store.delete_user(user_id).await
}

/// A user's tokens (their hashes only), oldest first.
pub async fn list_tokens(store: &dyn Store, user_id: &str) -> StorageResult<Vec<UserToken>> {
    store.list_tokens(user_id).await
}

/// The stored token `token` is, with its user, while it authenticates at
/// `now` (not revoked, not expired).
pub async fn live_token(
    store: &dyn Store,
    token: &str,
    now: i64,
) -> StorageResult<Option<(User, UserToken)>> {
    match store.find_token(&token_hash(token)).await {
        Ok((user, stored)) if stored.live_at(now) => Ok(Some((user, stored))),
        Ok(_) | Err(StorageError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Resolves once `token` no longer authenticates anyone (revoked, expired,
/// or its user deleted, by any instance or the CLI): looked up every
/// `every`, and at once whenever `revoked` is notified (a revocation on
/// this instance, or one the store announced: [`watch_revocations`]). A
/// lookup the store fails is tried again.
pub async fn until_invalid(store: &dyn Store, token: &str, every: Duration, revoked: &Notify) {
    loop {
        let notified = revoked.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        match live_token(store, token, now_millis()).await {
            Ok(None) => return,
            Ok(Some((_, stored))) => {
                let wait = match stored.expires_at {
                    Some(at) => every.min(Duration::from_millis(
                        u64::try_from(at.saturating_sub(now_millis())).unwrap_or(0),
                    )),
                    None => every,
                };
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = notified => {}
                }
            }
            Err(error) => {
                tracing::warn!(%error, "a session's token could not be looked up");
                tokio::time::sleep(every).await;
            }
        }
    }
}

/// How long to wait before listening again after the store's
/// announcements failed.
const RELISTEN: Duration = Duration::from_secs(1);

/// Listens to the store's announcements of revocations (from any
/// instance, or `agentloop users`) until `shutdown`, notifying `revoked`
/// for each, so every stream's [`until_invalid`] looks its token up at
/// once. Returns at once when the store makes none (streams then look
/// every `token_check`).
pub async fn watch_revocations(
    store: Arc<dyn Store>,
    revoked: Arc<Notify>,
    shutdown: CancellationToken,
) {
    loop {
        let announced = tokio::select! {
            () = shutdown.cancelled() => return,
            announced = store.watch_revocations() => announced,
        };
        match announced {
            Ok(None) => return,
            Ok(Some(mut revocations)) => loop {
                let next = tokio::select! {
                    () = shutdown.cancelled() => return,
                    next = revocations.next() => next,
                };
                match next {
                    Some(Ok(())) => revoked.notify_waiters(),
                    Some(Err(error)) => {
                        tracing::warn!(%error, "revocation announcements failed; streams look their token up every token_check");
                        break;
                    }
                    None => break,
                }
            },
            Err(error) => {
                tracing::warn!(%error, "cannot listen for revocations; streams look their token up every token_check");
            }
        }
        // Announcements may have been missed meanwhile.
        revoked.notify_waiters();
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(RELISTEN) => {}
        }
    }
}

/// Revokes a bearer token: it no longer authenticates anyone.
pub async fn revoke_token(store: &dyn Store, token: &str) -> StorageResult<()> {
    store.revoke_token(&token_hash(token)).await
}

/// The user a bearer token belongs to, if any (not for a revoked or
/// expired token).
pub async fn user_for_token(store: &dyn Store, token: &str) -> StorageResult<Option<User>> {
    Ok(live_token(store, token, now_millis())
        .await?
        .map(|(user, _)| user))
}

/// Every user, oldest first.
pub async fn list_users(store: &dyn Store) -> StorageResult<Vec<User>> {
    store.list_users().await
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use agentloop_storage::{MemoryStore, ProjectStore};

    use super::*;

    #[tokio::test]
    async fn tokens_authenticate_their_user_until_revoked() {
        let store = MemoryStore::new();
        let (ada, token) = create_user(&store, "Ada Lovelace").await.unwrap();
        let (bob, _) = create_user(&store, "Bob").await.unwrap();
        assert_eq!(
            user_for_token(&store, &token).await.unwrap(),
            Some(ada.clone())
        );
        assert_eq!(user_for_token(&store, "al_wrong").await.unwrap(), None);

        let second = issue_token(&store, &ada.id).await.unwrap();
        assert_ne!(second, token);
        revoke_token(&store, &token).await.unwrap();
        assert_eq!(user_for_token(&store, &token).await.unwrap(), None);
        assert_eq!(
            user_for_token(&store, &second).await.unwrap(),
            Some(ada.clone())
        );
        assert!(matches!(
            issue_token(&store, "no-such-user").await,
            Err(StorageError::Invalid(_))
        ));

        let mut ids: Vec<String> = list_users(&store)
            .await
            .unwrap()
            .into_iter()
            .map(|u| u.id)
            .collect();
        ids.sort();
        let mut expected = vec![ada.id, bob.id];
        expected.sort();
        assert_eq!(ids, expected);
        assert!(store.list_projects().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_name_is_required_and_taken_once() {
        let store = MemoryStore::new();
        create_user(&store, "alice").await.unwrap();
        assert_eq!(
            create_user(&store, " alice ").await.unwrap_err(),
            StorageError::AlreadyExists {
                kind: "user",
                id: "alice".to_owned()
            }
        );
        assert!(matches!(
            create_user(&store, "  ").await,
            Err(StorageError::Invalid(_))
        ));
        assert_eq!(list_users(&store).await.unwrap().len(), 1);
    }
}
