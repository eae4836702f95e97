//! Two handles on one database (two server instances): what one writes,
//! the other reads, also when it keeps decoded copies of chats.

use std::sync::Arc;

use agentloop_storage::Store;
use agentloop_storage::model::{Checkpoint, RunStatus};
use agentloop_types::Message;

use super::{chat, project_with_chat, run_record};

fn texts(messages: &[agentloop_storage::model::StoredMessage]) -> Vec<String> {
    messages.iter().map(|m| m.message.text()).collect()
}

/// `reader` sees every kind of message change `writer` makes.
pub async fn writes_of_another_handle_are_read(reader: &dyn Store, writer: &dyn Store) {
    let c = project_with_chat(reader).await;
    reader
        .save_message(&c.id, &Message::user_text("m0", "zero"))
        .await
        .unwrap();
    reader
        .save_message(&c.id, &Message::user_text("m1", "one"))
        .await
        .unwrap();
    assert_eq!(
        texts(&reader.list_messages(&c.id).await.unwrap()),
        ["zero", "one"]
    );

    writer
        .save_message(&c.id, &Message::user_text("m2", "two"))
        .await
        .unwrap();
    assert_eq!(
        texts(&reader.list_messages(&c.id).await.unwrap()),
        ["zero", "one", "two"]
    );

    writer
        .save_message(&c.id, &Message::user_text("m1", "one again"))
        .await
        .unwrap();
    assert_eq!(
        texts(&reader.list_messages(&c.id).await.unwrap()),
        ["zero", "one again", "two"]
    );

    writer.truncate_messages(&c.id, Some(0)).await.unwrap();
    assert_eq!(texts(&reader.list_messages(&c.id).await.unwrap()), ["zero"]);

    let checkpoint = Checkpoint {
        chat_id: c.id.clone(),
        name: "cp".into(),
        message_seq: Some(0),
        totals: Default::default(),
        created_at: 5,
    };
    writer.create_checkpoint(&checkpoint).await.unwrap();
    writer
        .save_message(&c.id, &Message::user_text("m3", "three"))
        .await
        .unwrap();
    assert_eq!(
        texts(&reader.list_messages(&c.id).await.unwrap()),
        ["zero", "three"]
    );
    writer.rollback_to_checkpoint(&c.id, "cp").await.unwrap();
    assert_eq!(texts(&reader.list_messages(&c.id).await.unwrap()), ["zero"]);

    // Deleted and made again under the same id: the old copy is not used.
    writer.delete_chat(&c.id).await.unwrap();
    assert!(reader.list_messages(&c.id).await.is_err());
    writer
        .create_chat(&chat(&c.id, &c.project_id, c.created_at + 1))
        .await
        .unwrap();
    writer
        .save_message(&c.id, &Message::user_text("n0", "new"))
        .await
        .unwrap();
    assert_eq!(texts(&reader.list_messages(&c.id).await.unwrap()), ["new"]);
}

/// `list_runs_in` and `last_run` agree with `list_runs`.
pub async fn runs_by_status_and_last(store: Arc<dyn Store>) {
    let store = store.as_ref();
    let c = project_with_chat(store).await;
    assert!(store.last_run(&c.id).await.unwrap().is_none());
    for (i, status) in [
        RunStatus::Completed,
        RunStatus::Running,
        RunStatus::Suspended,
    ]
    .into_iter()
    .enumerate()
    {
        let mut run = run_record(&format!("r{i}"), Some(&c.id));
        run.status = status;
        run.created_at = i as i64;
        store.create_run(&run).await.unwrap();
    }
    let open = store
        .list_runs_in(&c.id, &[RunStatus::Running, RunStatus::Suspended])
        .await
        .unwrap();
    let ids: Vec<&str> = open.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["r1", "r2"]);
    assert!(store.list_runs_in(&c.id, &[]).await.unwrap().is_empty());
    assert_eq!(store.last_run(&c.id).await.unwrap().unwrap().id, "r2");
}
