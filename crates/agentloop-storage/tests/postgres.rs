//! The conformance suite against PostgreSQL, when
//! `AGENTLOOP_TEST_POSTGRES_URL` names a server (e.g.
//! `postgres://postgres@127.0.0.1:5432/postgres`). Each test creates its own
//! uniquely named database and drops it at the end; without the variable
//! every test prints that it skipped and passes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod conformance;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use agentloop_storage::{PostgresStore, ProjectStore};
use conformance::Fixture;
use sqlx::Connection;

const URL_VAR: &str = "AGENTLOOP_TEST_POSTGRES_URL";

/// Drops the test database when the test ends, even by a panic.
struct TestDatabase {
    admin_url: String,
    name: String,
    store: PostgresStore,
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let admin_url = self.admin_url.clone();
        let name = self.name.clone();
        let store = self.store.clone();
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                store.close().await;
                let mut admin = sqlx::PgConnection::connect(&admin_url).await.unwrap();
                sqlx::raw_sql(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
                    .execute(&mut admin)
                    .await
                    .unwrap();
            });
        })
        .join();
        if dropped.is_err() {
            eprintln!("could not drop test database {}", self.name);
        }
    }
}

/// The URL of database `name` on the server of `admin_url`.
fn database_url(admin_url: &str, name: &str) -> String {
    let (base, query) = match admin_url.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (admin_url, String::new()),
    };
    let authority_end = base.find("://").map_or(0, |i| i + 3);
    let base = match base[authority_end..].find('/') {
        Some(slash) => &base[..authority_end + slash],
        None => base,
    };
    format!("{base}/{name}{query}")
}

/// A fresh, uniquely named database with a store on it.
async fn open_database() -> Option<TestDatabase> {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let admin_url = std::env::var(URL_VAR).ok().filter(|u| !u.is_empty())?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let name = format!(
        "agentloop_test_{}_{}_{}",
        std::process::id(),
        nanos,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let mut admin = sqlx::PgConnection::connect(&admin_url).await.unwrap();
    sqlx::raw_sql(&format!("CREATE DATABASE \"{name}\""))
        .execute(&mut admin)
        .await
        .unwrap();
    admin.close().await.unwrap();
    let store = PostgresStore::connect(&database_url(&admin_url, &name))
        .await
        .unwrap();
    Some(TestDatabase {
        admin_url,
        name,
        store,
    })
}

async fn open() -> Option<Fixture> {
    let database = open_database().await?;
    Some(Fixture {
        store: Arc::new(database.store.clone()),
        guard: Some(Box::new(database)),
    })
}

conformance_suite!(open());

#[test]
fn database_urls() {
    assert_eq!(
        database_url("postgres://postgres@127.0.0.1:5432/postgres", "x"),
        "postgres://postgres@127.0.0.1:5432/x"
    );
    assert_eq!(
        database_url("postgres://u:p@h/db?sslmode=disable", "x"),
        "postgres://u:p@h/x?sslmode=disable"
    );
    assert_eq!(
        database_url("postgres://h:5432", "x"),
        "postgres://h:5432/x"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_handles_on_one_database_read_each_others_writes() {
    let Some(database) = open_database().await else {
        eprintln!("skipped two_handles_on_one_database_read_each_others_writes");
        return;
    };
    let writer = PostgresStore::connect(&database_url(&database.admin_url, &database.name))
        .await
        .unwrap();
    conformance::writes_of_another_handle_are_read(&database.store, &writer).await;
    writer.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_from_before_users_gains_them_on_connect() {
    let Some(database) = open_database().await else {
        eprintln!("skipped a_database_from_before_users_gains_them_on_connect");
        return;
    };
    conformance::reserve_users_project(&database.store).await;
    sqlx::raw_sql(conformance::UNDO_ONE_RUN_STATUS_POSTGRES)
        .execute(database.store.pool())
        .await
        .unwrap();
    sqlx::raw_sql(conformance::DROP_USER_TABLES)
        .execute(database.store.pool())
        .await
        .unwrap();
    conformance::write_users_as_files(&database.store).await;
    let reopened = PostgresStore::connect(&database_url(&database.admin_url, &database.name))
        .await
        .unwrap();
    conformance::check_users_moved_from_files(&reopened).await;
    reopened.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_are_announced_to_other_stores_on_the_database() {
    use agentloop_storage::RunStore;
    use futures::StreamExt;
    let Some(database) = open_database().await else {
        eprintln!("skipped: {URL_VAR} is not set");
        return;
    };
    let writer = &database.store;
    let url = database_url(&database.admin_url, &database.name);
    let reader = PostgresStore::connect(&url).await.unwrap();
    let mut announced = reader.watch_appends().await.unwrap().unwrap();
    conformance::project_with_chat(writer).await;
    for run in ["a", "b"] {
        writer
            .create_run(&conformance::run_record(run, Some("c")))
            .await
            .unwrap();
    }
    writer
        .append_events("a", &[conformance::event(0)])
        .await
        .unwrap();
    // A refused append announces nothing: its transaction never commits.
    assert!(
        writer
            .append_events("a", &[conformance::event(0)])
            .await
            .is_err()
    );
    writer
        .append_events("b", &[conformance::event(0), conformance::event(1)])
        .await
        .unwrap();
    let mut runs = Vec::new();
    while runs.len() < 2 {
        let next = tokio::time::timeout(std::time::Duration::from_secs(10), announced.next())
            .await
            .expect("an announcement within 10 s");
        runs.push(next.unwrap().unwrap());
    }
    assert_eq!(runs, ["a", "b"]);
    // The listener holds a connection of the reader's pool until dropped.
    drop(announced);
    reader.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revocations_are_announced_to_other_stores_on_the_database() {
    use agentloop_storage::UserStore;
    use futures::StreamExt;
    let Some(database) = open_database().await else {
        eprintln!("skipped: {URL_VAR} is not set");
        return;
    };
    let writer = &database.store;
    let url = database_url(&database.admin_url, &database.name);
    let reader = PostgresStore::connect(&url).await.unwrap();
    let mut announced = reader.watch_revocations().await.unwrap().unwrap();
    writer
        .create_user(&conformance::user("u1", "one", 1))
        .await
        .unwrap();
    for hash in ["h1", "h2", "h3"] {
        writer
            .add_token(&conformance::token(hash, "u1"))
            .await
            .unwrap();
    }
    // A revocation of nothing announces nothing.
    assert!(writer.revoke_token("unknown").await.is_err());
    writer.revoke_token("h1").await.unwrap();
    assert_eq!(writer.revoke_user_tokens("u1").await.unwrap(), 2);
    assert_eq!(writer.revoke_user_tokens("u1").await.unwrap(), 0);
    writer.delete_user("u1").await.unwrap();
    for _ in 0..3 {
        let next = tokio::time::timeout(std::time::Duration::from_secs(10), announced.next())
            .await
            .expect("an announcement within 10 s");
        next.unwrap().unwrap();
    }
    // Exactly three: the refused revocation and the empty one said nothing.
    assert!(
        tokio::time::timeout(std::time::Duration::from_millis(200), announced.next())
            .await
            .is_err(),
        "no fourth announcement"
    );
    drop(announced);
    reader.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_the_server_ended_while_idle_are_replaced() {
    let Some(database) = open_database().await else {
        eprintln!("skipped connections_the_server_ended_while_idle_are_replaced");
        return;
    };
    let store = &database.store;
    store
        .create_project(&conformance::project("p", 1))
        .await
        .unwrap();
    // The server ends every connection of the store's pool, as a restart
    // would.
    let mut admin = sqlx::PgConnection::connect(&database.admin_url)
        .await
        .unwrap();
    let ended: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1",
    )
    .bind(&database.name)
    .fetch_all(&mut admin)
    .await
    .unwrap();
    assert!(!ended.is_empty() && ended.iter().all(|e| *e), "{ended:?}");
    admin.close().await.unwrap();
    // A connection idle this long is pinged before it is handed out (the
    // idle time is the condition itself, not a stand-in for one).
    tokio::time::sleep(std::time::Duration::from_millis(1_200)).await;
    assert_eq!(store.get_project("p").await.unwrap().id, "p");
}
