//! Users and token hashes.

use std::collections::HashSet;
use std::sync::Arc;

use agentloop_storage::model::{AuditEntry, AuditFilter, User, UserToken};
use agentloop_storage::{StorageError, Store};

use super::project;

pub fn user(id: &str, name: &str, created_at: i64) -> User {
    User {
        id: id.into(),
        name: name.into(),
        created_at,
    }
}

pub fn token(hash: &str, user_id: &str) -> UserToken {
    UserToken {
        token_hash: hash.into(),
        user_id: user_id.into(),
        created_at: 5,
        expires_at: None,
    }
}

pub async fn users_create_list_get(store: Arc<dyn Store>) {
    assert!(store.list_users().await.unwrap().is_empty());
    store.create_user(&user("b", "Bob", 2)).await.unwrap();
    store.create_user(&user("a", "Ada", 3)).await.unwrap();
    store.create_user(&user("z", "Zed", 1)).await.unwrap();
    store.create_user(&user("c", "Cy", 2)).await.unwrap();
    assert_eq!(
        store.create_user(&user("a", "Another Ada", 9)).await,
        Err(StorageError::exists("user", "a"))
    );
    let ids: Vec<String> = store
        .list_users()
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.id)
        .collect();
    assert_eq!(ids, ["z", "b", "c", "a"], "oldest first, ties by id");
    assert_eq!(store.get_user("a").await.unwrap(), user("a", "Ada", 3));
    assert_eq!(
        store.get_user("nobody").await,
        Err(StorageError::not_found("user", "nobody"))
    );
    assert!(
        store.list_projects().await.unwrap().is_empty(),
        "users are not projects"
    );
}

pub async fn user_tokens(store: Arc<dyn Store>) {
    store.create_user(&user("u1", "one", 1)).await.unwrap();
    store.create_user(&user("u2", "two", 2)).await.unwrap();
    store.add_token(&token("h1", "u1")).await.unwrap();
    store.add_token(&token("h1b", "u1")).await.unwrap();
    store.add_token(&token("h2", "u2")).await.unwrap();
    assert_eq!(store.find_user_by_token("h1").await.unwrap().id, "u1");
    assert_eq!(store.find_user_by_token("h1b").await.unwrap().id, "u1");
    assert_eq!(
        store.find_user_by_token("h2").await.unwrap(),
        user("u2", "two", 2)
    );

    // A hash belongs to one user: adding it again is refused, for the same
    // user or another, and the first owner keeps it.
    assert_eq!(
        store.add_token(&token("h1", "u2")).await,
        Err(StorageError::exists("token", "h1"))
    );
    assert_eq!(
        store.add_token(&token("h1", "u1")).await,
        Err(StorageError::exists("token", "h1"))
    );
    assert_eq!(store.find_user_by_token("h1").await.unwrap().id, "u1");

    assert_eq!(
        store.find_user_by_token("unknown").await,
        Err(StorageError::not_found("token", "unknown"))
    );
    assert!(matches!(
        store.add_token(&token("h3", "ghost")).await,
        Err(StorageError::Invalid(_))
    ));
    assert!(matches!(
        store.find_user_by_token("h3").await,
        Err(StorageError::NotFound { .. })
    ));

    store.revoke_token("h1").await.unwrap();
    assert_eq!(
        store.find_user_by_token("h1").await,
        Err(StorageError::not_found("token", "h1"))
    );
    assert_eq!(store.find_user_by_token("h1b").await.unwrap().id, "u1");
    assert_eq!(
        store.revoke_token("h1").await,
        Err(StorageError::not_found("token", "h1"))
    );
    // A revoked hash may be issued again.
    store.add_token(&token("h1", "u2")).await.unwrap();
    assert_eq!(store.find_user_by_token("h1").await.unwrap().id, "u2");
    assert!(store.list_projects().await.unwrap().is_empty());
}

pub async fn non_ascii_user_names(store: Arc<dyn Store>) {
    let names = [
        "Zoë Ångström",
        "山田 太郎",
        "Мария 👩‍💻",
        "مرحبا",
        "e\u{0301} 𝔘𝔫𝔦",
        "'; DROP TABLE users; --",
    ];
    for (i, name) in names.iter().enumerate() {
        let id = format!("ユーザー-{i}");
        store.create_user(&user(&id, name, i as i64)).await.unwrap();
        store
            .add_token(&token(&format!("hash-ü-{i}"), &id))
            .await
            .unwrap();
    }
    let listed: Vec<String> = store
        .list_users()
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.name)
        .collect();
    assert_eq!(listed, names);
    for (i, name) in names.iter().enumerate() {
        let id = format!("ユーザー-{i}");
        assert_eq!(store.get_user(&id).await.unwrap().name, *name);
        let found = store
            .find_user_by_token(&format!("hash-ü-{i}"))
            .await
            .unwrap();
        assert_eq!(found, user(&id, name, i as i64));
    }
}

const CREATORS: usize = 16;
const PER_CREATOR: usize = 10;

pub async fn concurrent_user_creation(store: Arc<dyn Store>) {
    let mut handles = Vec::new();
    for creator in 0..CREATORS {
        let store = store.clone();
        handles.push(tokio::spawn(async move {
            for i in 0..PER_CREATOR {
                let id = format!("u{creator}-{i}");
                store
                    .create_user(&user(&id, &format!("user {creator}/{i}"), 1))
                    .await
                    .unwrap();
                store
                    .add_token(&token(&format!("t{creator}-{i}"), &id))
                    .await
                    .unwrap();
            }
        }));
    }
    for handle in handles {
        handle.await.unwrap();
    }
    let listed = store.list_users().await.unwrap();
    assert_eq!(listed.len(), CREATORS * PER_CREATOR);
    let ids: HashSet<&str> = listed.iter().map(|u| u.id.as_str()).collect();
    assert_eq!(ids.len(), CREATORS * PER_CREATOR);
    for creator in 0..CREATORS {
        for i in 0..PER_CREATOR {
            let found = store
                .find_user_by_token(&format!("t{creator}-{i}"))
                .await
                .unwrap();
            assert_eq!(found.id, format!("u{creator}-{i}"));
        }
    }

    // Racing creators of one id, and racing owners of one hash: exactly one
    // of each wins and the rest are refused as duplicates.
    let mut handles = Vec::new();
    for creator in 0..CREATORS {
        let store = store.clone();
        handles.push(tokio::spawn(async move {
            let same_id = store
                .create_user(&user("contested", &format!("claimant {creator}"), 2))
                .await;
            let same_hash = store
                .add_token(&token("contested-hash", &format!("u{creator}-0")))
                .await;
            (same_id, same_hash)
        }));
    }
    let (mut users_won, mut tokens_won) = (0, 0);
    let mut hash_owner = None;
    for (creator, handle) in handles.into_iter().enumerate() {
        let (same_id, same_hash) = handle.await.unwrap();
        match same_id {
            Ok(()) => users_won += 1,
            Err(e) => assert_eq!(e, StorageError::exists("user", "contested")),
        }
        match same_hash {
            Ok(()) => {
                tokens_won += 1;
                hash_owner = Some(format!("u{creator}-0"));
            }
            Err(e) => assert_eq!(e, StorageError::exists("token", "contested-hash")),
        }
    }
    assert_eq!((users_won, tokens_won), (1, 1));
    assert_eq!(
        Some(store.find_user_by_token("contested-hash").await.unwrap().id),
        hash_owner
    );
    assert_eq!(
        store.list_users().await.unwrap().len(),
        CREATORS * PER_CREATOR + 1
    );
}

/// Takes a store back to the schema before users had tables.
/// Takes schema script 0009 back on SQLite (its trigger's `DROP` names no
/// table there), before [`DROP_USER_TABLES`].
pub const UNDO_ONE_RUN_STATUS_SQLITE: &str =
    "DROP TRIGGER agent_run_follows_its_record; ALTER TABLE runs DROP COLUMN end_reason;";

/// Takes schema script 0009 back on PostgreSQL, before [`DROP_USER_TABLES`].
pub const UNDO_ONE_RUN_STATUS_POSTGRES: &str = "DROP TRIGGER agent_run_follows_its_record ON runs; \
     DROP FUNCTION agent_run_follows_its_record(); ALTER TABLE runs DROP COLUMN end_reason;";

pub const DROP_USER_TABLES: &str = "ALTER TABLE messages DROP COLUMN event_run_id; \
     ALTER TABLE messages DROP COLUMN event_seq; DROP TABLE project_members; DROP TABLE schedule_runs; \
     DROP TABLE budget_holds; DROP TABLE budget_spend; DROP TABLE budgets; \
     DROP TABLE run_steps; DROP TABLE schedules; DROP TABLE inbox_messages; DROP TABLE audit_log; ALTER TABLE tasks DROP COLUMN chain_end; \
     ALTER TABLE tasks DROP COLUMN chain_started_at; \
     DROP TABLE memories; DROP TABLE webhook_deliveries; \
     ALTER TABLE projects DROP COLUMN approval_mode; \
     DROP INDEX messages_by_rev; \
     ALTER TABLE messages DROP COLUMN rev; ALTER TABLE chats DROP COLUMN message_rev; \
     ALTER TABLE chats DROP COLUMN message_resets; \
     DROP TABLE agent_run_decisions; \
     DROP INDEX agent_runs_one_active; \
     CREATE UNIQUE INDEX agent_runs_one_running ON agent_runs(task_id) WHERE status = 'running'; \
     DROP TABLE project_folder_lock; DROP TABLE project_folders; \
     ALTER TABLE agent_runs DROP COLUMN end_reason; DROP TABLE user_tokens; DROP TABLE users; \
     DELETE FROM _sqlx_migrations WHERE version > 20261122000001;";

/// The reserved project servers kept users in before the users tables.
const RESERVED: &str = "agentloop-server-users";

/// Creates the reserved project users were kept in (and a project of
/// people, which stays), before the schema is
/// taken back ([`DROP_USER_TABLES`]) to a time when projects had fewer
/// columns.
pub async fn reserve_users_project(store: &dyn Store) {
    store.create_project(&project(RESERVED, 1)).await.unwrap();
    store.create_project(&project("kept", 4)).await.unwrap();
}

/// Writes users the way servers kept them before the users tables: as
/// files of the reserved project `agentloop-server-users` (made by
/// [`reserve_users_project`]).
pub async fn write_users_as_files(store: &dyn Store) {
    use agentloop_storage::model::FileRecord;
    use agentloop_types::EntryKind;

    let file = |path: &str, data: serde_json::Value| FileRecord {
        path: path.into(),
        kind: EntryKind::File,
        data: serde_json::to_vec(&data).unwrap(),
        modified_at: 7,
    };
    for dir in ["/users", "/tokens"] {
        store
            .put_file(
                RESERVED,
                &FileRecord {
                    path: dir.into(),
                    kind: EntryKind::Directory,
                    data: Vec::new(),
                    modified_at: 1,
                },
            )
            .await
            .unwrap();
    }
    for (id, name, created_at, hash) in [("a1", "Ada", 3, "aa11"), ("b2", "Zoë 山田", 2, "bb22")]
    {
        let user = serde_json::json!({ "id": id, "name": name, "created_at": created_at });
        store
            .put_file(RESERVED, &file(&format!("/users/{id}.json"), user))
            .await
            .unwrap();
        let entry = serde_json::json!({ "user_id": id });
        store
            .put_file(RESERVED, &file(&format!("/tokens/{hash}"), entry))
            .await
            .unwrap();
    }
    let orphan = serde_json::json!({ "user_id": "gone" });
    store
        .put_file(RESERVED, &file("/tokens/cc33", orphan))
        .await
        .unwrap();
}

/// Checks that the users [`write_users_as_files`] wrote were carried over
/// and the reserved project is gone.
pub async fn check_users_moved_from_files(store: &dyn Store) {
    assert_eq!(
        store.list_users().await.unwrap(),
        [user("b2", "Zoë 山田", 2), user("a1", "Ada", 3)]
    );
    assert_eq!(store.find_user_by_token("aa11").await.unwrap().id, "a1");
    assert_eq!(store.find_user_by_token("bb22").await.unwrap().id, "b2");
    assert!(matches!(
        store.find_user_by_token("cc33").await,
        Err(StorageError::NotFound { .. })
    ));
    let projects: Vec<String> = store
        .list_projects()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(projects, ["kept"]);
}

pub async fn token_expiry_revocation_and_user_deletion(store: Arc<dyn Store>) {
    store.create_user(&user("u1", "one", 1)).await.unwrap();
    store.create_user(&user("u2", "two", 2)).await.unwrap();
    let expiring = UserToken {
        expires_at: Some(1_000),
        ..token("e1", "u1")
    };
    store.add_token(&expiring).await.unwrap();
    store.add_token(&token("n1", "u1")).await.unwrap();
    store.add_token(&token("n2", "u2")).await.unwrap();
    // The stored expiry reads back with its user; the caller's clock
    // decides whether it still authenticates.
    let (owner, found) = store.find_token("e1").await.unwrap();
    assert_eq!(owner, user("u1", "one", 1));
    assert_eq!(found, expiring);
    assert!(found.live_at(999));
    assert!(!found.live_at(1_000));
    assert_eq!(store.find_token("n1").await.unwrap().1.expires_at, None);
    assert_eq!(
        store.find_token("nope").await,
        Err(StorageError::not_found("token", "nope"))
    );
    let hashes: Vec<String> = store
        .list_tokens("u1")
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.token_hash)
        .collect();
    assert_eq!(hashes, ["e1", "n1"]);

    // Revoking a user's tokens revokes them all, and only theirs.
    assert_eq!(store.revoke_user_tokens("u1").await.unwrap(), 2);
    assert!(store.find_token("e1").await.is_err());
    assert!(store.find_token("n1").await.is_err());
    assert_eq!(store.find_token("n2").await.unwrap().0.id, "u2");
    assert_eq!(store.revoke_user_tokens("u1").await.unwrap(), 0);

    // Deleting a user takes its tokens with it.
    store.delete_user("u2").await.unwrap();
    assert_eq!(
        store.get_user("u2").await,
        Err(StorageError::not_found("user", "u2"))
    );
    assert!(store.find_token("n2").await.is_err());
    assert!(store.list_tokens("u2").await.unwrap().is_empty());
    assert_eq!(
        store.delete_user("u2").await,
        Err(StorageError::not_found("user", "u2"))
    );
    // The name is free again.
    store.create_user(&user("u3", "two", 3)).await.unwrap();
}

pub async fn audit_log_filters_and_order(store: Arc<dyn Store>) {
    let entry = |id: &str, at: i64, user: Option<&str>, project: Option<&str>| AuditEntry {
        id: id.into(),
        at,
        user_id: user.map(Into::into),
        action: "run.cancel".into(),
        project_id: project.map(Into::into),
        target: Some("run-1".into()),
        address: Some("203.0.113.9".into()),
        detail: serde_json::json!({ "status": 200 }),
    };
    assert!(
        store
            .list_audit(&AuditFilter {
                limit: 10,
                ..AuditFilter::default()
            })
            .await
            .unwrap()
            .is_empty()
    );
    // Appended out of order; read back by time, then id.
    store
        .append_audit(&entry("c", 30, Some("u1"), Some("p1")))
        .await
        .unwrap();
    store
        .append_audit(&entry("a", 10, Some("u1"), None))
        .await
        .unwrap();
    store
        .append_audit(&entry("b", 20, Some("u2"), Some("p1")))
        .await
        .unwrap();
    store
        .append_audit(&entry("d", 20, None, Some("p2")))
        .await
        .unwrap();
    assert_eq!(
        store.append_audit(&entry("a", 99, None, None)).await,
        Err(StorageError::exists("audit entry", "a"))
    );
    let ids = |entries: Vec<AuditEntry>| entries.into_iter().map(|e| e.id).collect::<Vec<_>>();
    let all = store
        .list_audit(&AuditFilter {
            limit: 10,
            ..AuditFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(all[0], entry("a", 10, Some("u1"), None), "read back whole");
    assert_eq!(ids(all), ["a", "b", "d", "c"]);
    let read = |filter: AuditFilter| {
        let store = store.clone();
        async move { ids(store.list_audit(&filter).await.unwrap()) }
    };
    assert_eq!(
        read(AuditFilter {
            project_id: Some("p1".into()),
            limit: 10,
            ..AuditFilter::default()
        })
        .await,
        ["b", "c"]
    );
    assert_eq!(
        read(AuditFilter {
            user_id: Some("u1".into()),
            limit: 10,
            ..AuditFilter::default()
        })
        .await,
        ["a", "c"]
    );
    assert_eq!(
        read(AuditFilter {
            since: Some(20),
            until: Some(30),
            limit: 10,
            ..AuditFilter::default()
        })
        .await,
        ["b", "d"]
    );
    // The operator's entries on a target ("d" has no user, target run-1).
    assert_eq!(
        read(AuditFilter {
            operator_on: Some("run-1".into()),
            limit: 10,
            ..AuditFilter::default()
        })
        .await,
        ["d"]
    );
    assert!(
        read(AuditFilter {
            operator_on: Some("other".into()),
            limit: 10,
            ..AuditFilter::default()
        })
        .await
        .is_empty()
    );
    // The limit keeps the newest.
    assert_eq!(
        read(AuditFilter {
            limit: 2,
            ..AuditFilter::default()
        })
        .await,
        ["d", "c"]
    );
}
