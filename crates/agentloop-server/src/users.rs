//! Users and their bearer tokens.
//!
//! Users and token hashes live in the store every instance shares, through
//! its [`UserStore`](agentloop_storage::UserStore) part: they belong to no
//! project, so project listings and exports never see them. Only the
//! SHA-256 of a token is stored; the token itself is shown once, when the
//! user is created.

use agentloop_storage::model::{UserToken, now_millis};
use agentloop_storage::{StorageError, StorageResult, Store};

use crate::ids::{new_id, new_token, token_hash};

pub use agentloop_storage::model::User;

/// Creates a user and returns it with its bearer token. A name is
/// required and unique: an empty one is [`StorageError::Invalid`], one
/// another user has is [`StorageError::AlreadyExists`] (kind `user`, the
/// name as id), and nothing is created.
pub async fn create_user(store: &dyn Store, name: &str) -> StorageResult<(User, String)> {
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
    let token = issue_token(store, &user.id).await?;
    Ok((user, token))
}

/// Issues another bearer token for an existing user and returns it.
pub async fn issue_token(store: &dyn Store, user_id: &str) -> StorageResult<String> {
    let token = new_token();
    store
        .add_token(&UserToken {
            token_hash: token_hash(&token),
            user_id: user_id.to_owned(),
            created_at: now_millis(),
        })
        .await?;
    Ok(token)
}

/// Revokes a bearer token: it no longer authenticates anyone.
pub async fn revoke_token(store: &dyn Store, token: &str) -> StorageResult<()> {
    store.revoke_token(&token_hash(token)).await
}

/// The user a bearer token belongs to, if any.
pub async fn user_for_token(store: &dyn Store, token: &str) -> StorageResult<Option<User>> {
    match store.find_user_by_token(&token_hash(token)).await {
        Ok(user) => Ok(Some(user)),
        Err(StorageError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
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
