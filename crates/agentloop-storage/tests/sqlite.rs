//! The conformance suite against SQLite: a WAL file per test, plus a check
//! of `:memory:`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod conformance;

use std::sync::Arc;

use agentloop_storage::{ChatStore, ProjectStore, RunStore, SqliteStore, StorageError, UserStore};
use conformance::Fixture;

async fn open() -> Option<Fixture> {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("agentloop.db"))
        .await
        .unwrap();
    Some(Fixture {
        store: Arc::new(store),
        guard: Some(Box::new(dir)),
    })
}

conformance_suite!(open());

#[tokio::test]
async fn two_handles_on_one_file_read_each_others_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let reader = SqliteStore::open(&path).await.unwrap();
    let writer = SqliteStore::open(&path).await.unwrap();
    conformance::writes_of_another_handle_are_read(&reader, &writer).await;
}

#[tokio::test]
async fn in_memory_database_works() {
    let store = SqliteStore::connect(":memory:").await.unwrap();
    conformance::project_with_chat(&store).await;
    assert_eq!(store.list_chats("p").await.unwrap().len(), 1);
    assert_eq!(store.list_projects().await.unwrap().len(), 1);
}

#[tokio::test]
async fn reopening_a_file_keeps_data_and_migrations_are_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.sqlite");
    {
        let store = SqliteStore::open(&path).await.unwrap();
        conformance::project_with_chat(&store).await;
        store
            .save_message("c", &agentloop_types::Message::user_text("m", "persisted"))
            .await
            .unwrap();
        store.close().await;
    }
    let store = SqliteStore::open(&path).await.unwrap();
    assert_eq!(
        store.list_messages("c").await.unwrap()[0].message.text(),
        "persisted"
    );
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(mode, "wal");
}

#[tokio::test]
async fn open_store_picks_the_backend() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("picked.db");
    for target in [
        "memory".to_owned(),
        ":memory:".to_owned(),
        "sqlite::memory:".to_owned(),
        format!("sqlite://{}", file.display()),
        file.display().to_string(),
    ] {
        let store = agentloop_storage::open_store(&target).await.unwrap();
        let id = format!("p{}", store.list_projects().await.unwrap().len());
        store
            .create_project(&conformance::project(&id, 1))
            .await
            .unwrap();
        assert!(store.get_project(&id).await.is_ok(), "{target}");
    }
    // Both file targets opened the same database.
    let store = SqliteStore::open(&file).await.unwrap();
    assert_eq!(store.list_projects().await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_database_from_before_users_gains_them_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    {
        let store = SqliteStore::open(&path).await.unwrap();
        conformance::project_with_chat(&store).await;
        conformance::reserve_users_project(&store).await;
        sqlx::raw_sql(conformance::UNDO_ONE_RUN_STATUS_SQLITE)
            .execute(store.pool())
            .await
            .unwrap();
        sqlx::raw_sql(conformance::DROP_USER_TABLES)
            .execute(store.pool())
            .await
            .unwrap();
        conformance::write_users_as_files(&store).await;
        store.close().await;
    }
    let store = SqliteStore::open(&path).await.unwrap();
    assert_eq!(store.list_chats("p").await.unwrap().len(), 1);
    store.delete_project("p").await.unwrap();
    conformance::check_users_moved_from_files(&store).await;
    store
        .create_user(&conformance::user("u", "Ada", 9))
        .await
        .unwrap();
    store
        .add_token(&conformance::token("h", "u"))
        .await
        .unwrap();
    assert_eq!(store.find_user_by_token("h").await.unwrap().name, "Ada");
    assert!(matches!(
        store.add_token(&conformance::token("aa11", "u")).await,
        Err(StorageError::AlreadyExists { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn appends_waiting_on_a_failed_batch_each_get_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        SqliteStore::open(dir.path().join("db.sqlite"))
            .await
            .unwrap(),
    );
    conformance::project_with_chat(&*store).await;
    for run in 0..20 {
        store
            .create_run(&conformance::run_record(&format!("r{run}"), Some("c")))
            .await
            .unwrap();
    }
    store.close().await;
    let appends = (0..20).map(|run| {
        let store = store.clone();
        async move {
            store
                .append_events(&format!("r{run}"), &[conformance::event(0)])
                .await
        }
    });
    let results = futures::future::join_all(appends).await;
    assert!(results.iter().all(Result::is_err), "{results:?}");
}

#[tokio::test]
async fn a_finished_event_stores_no_history_the_chat_holds() {
    use sqlx::Connection;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("once.db");
    let store = Arc::new(SqliteStore::open(&path).await.unwrap());
    conformance::finished_events_read_back_whole(store.clone()).await;
    store.close().await;
    let mut db = sqlx::SqliteConnection::connect(path.to_str().unwrap())
        .await
        .unwrap();
    let bodies: Vec<String> =
        sqlx::query_scalar("SELECT body FROM run_events WHERE run_id = 'r1' ORDER BY seq")
            .fetch_all(&mut db)
            .await
            .unwrap();
    // seq 1: a nested run's end, kept whole; seq 2: a history the chat
    // does not hold, kept whole; seq 3: the chat's history, stored once.
    assert!(bodies[1].contains("世界"), "{}", bodies[1]);
    assert!(
        bodies[2].contains("Not what the chat holds"),
        "{}",
        bodies[2]
    );
    assert!(!bodies[3].contains("世界"), "{}", bodies[3]);
    assert!(
        bodies[3].contains("\"history_through_seq\":1"),
        "{}",
        bodies[3]
    );
}

#[tokio::test]
async fn a_message_a_run_logged_is_stored_once_in_its_event() {
    use agentloop_storage::store::LoggedEvent;
    use agentloop_types::{EventKind, LoopEvent, Message, MessageCreatedEvent, RunPath};

    let store = SqliteStore::connect(":memory:").await.unwrap();
    conformance::project_with_chat(&store).await;
    store
        .create_run(&conformance::run_record("r1", Some("c")))
        .await
        .unwrap();
    let answer = Message::assistant_text("a1", "The key says hello.");
    let created = LoopEvent {
        seq: 0,
        path: RunPath::root(),
        kind: EventKind::MessageCreated(MessageCreatedEvent {
            message: answer.clone(),
        }),
    };
    store.append_events("r1", &[created]).await.unwrap();
    let logged = LoggedEvent {
        run_id: "r1",
        seq: 0,
    };
    store
        .save_logged_message("c", &answer, logged)
        .await
        .unwrap();
    let (body, event_run_id): (String, Option<String>) =
        sqlx::query_as("SELECT body, event_run_id FROM messages WHERE id = 'a1'")
            .fetch_one(store.pool())
            .await
            .unwrap();
    assert_eq!(
        body, "",
        "the message is in its event, not again in its row"
    );
    assert_eq!(event_run_id.as_deref(), Some("r1"));
    assert_eq!(store.list_messages("c").await.unwrap()[0].message, answer);
}
