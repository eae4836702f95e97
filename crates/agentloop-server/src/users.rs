//! Users and their bearer tokens.
//!
//! Users live in the store every instance shares, as file records of one
//! reserved project ([`USERS_PROJECT_ID`]): `/users/<id>.json` holds the
//! user and `/tokens/<sha256 of token>` the id of the user it belongs to.
//! Only token hashes are stored; the token itself is shown once, when the
//! user is created.

use agentloop_storage::model::{FileRecord, Project, now_millis};
use agentloop_storage::{StorageError, StorageResult, Store};
use agentloop_types::EntryKind;
use serde::{Deserialize, Serialize};

use crate::ids::{new_id, new_token, token_hash};

/// The reserved project that holds users and token hashes.
pub const USERS_PROJECT_ID: &str = "agentloop-server-users";

/// A user of the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    /// Id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Creation time (Unix ms).
    pub created_at: i64,
}

#[derive(Serialize, Deserialize)]
struct TokenEntry {
    user_id: String,
}

async fn ensure_users_project(store: &dyn Store) -> StorageResult<()> {
    match store.get_project(USERS_PROJECT_ID).await {
        Ok(_) => Ok(()),
        Err(StorageError::NotFound { .. }) => {
            let now = now_millis();
            let project = Project {
                id: USERS_PROJECT_ID.to_owned(),
                name: "agentloop server users".to_owned(),
                settings: serde_json::json!({ "reserved": true }),
                created_at: now,
                updated_at: now,
            };
            match store.create_project(&project).await {
                Ok(()) | Err(StorageError::AlreadyExists { .. }) => Ok(()),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

fn record(path: String, data: Vec<u8>) -> FileRecord {
    FileRecord {
        path,
        kind: EntryKind::File,
        data,
        modified_at: now_millis(),
    }
}

/// Creates a user and returns it with its bearer token.
pub async fn create_user(store: &dyn Store, name: &str) -> StorageResult<(User, String)> {
    ensure_users_project(store).await?;
    let user = User {
        id: new_id(),
        name: name.to_owned(),
        created_at: now_millis(),
    };
    let token = new_token();
    store
        .put_file(
            USERS_PROJECT_ID,
            &record(
                format!("/users/{}.json", user.id),
                serde_json::to_vec(&user)?,
            ),
        )
        .await?;
    let entry = TokenEntry {
        user_id: user.id.clone(),
    };
    store
        .put_file(
            USERS_PROJECT_ID,
            &record(
                format!("/tokens/{}", token_hash(&token)),
                serde_json::to_vec(&entry)?,
            ),
        )
        .await?;
    Ok((user, token))
}

/// The user a bearer token belongs to, if any.
pub async fn user_for_token(store: &dyn Store, token: &str) -> StorageResult<Option<User>> {
    let path = format!("/tokens/{}", token_hash(token));
    let Some(entry) = store.get_file(USERS_PROJECT_ID, &path).await? else {
        return Ok(None);
    };
    let entry: TokenEntry = serde_json::from_slice(&entry.data)?;
    let path = format!("/users/{}.json", entry.user_id);
    match store.get_file(USERS_PROJECT_ID, &path).await? {
        Some(user) => Ok(Some(serde_json::from_slice(&user.data)?)),
        None => Ok(None),
    }
}

/// Every user, sorted by id.
pub async fn list_users(store: &dyn Store) -> StorageResult<Vec<User>> {
    let records = match store.list_files(USERS_PROJECT_ID, "/users").await {
        Ok(records) => records,
        Err(StorageError::NotFound { .. }) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    records
        .iter()
        .map(|r| serde_json::from_slice(&r.data).map_err(StorageError::from))
        .collect()
}
