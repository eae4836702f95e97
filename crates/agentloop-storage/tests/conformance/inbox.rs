//! A chat's inbox: messages kept in arrival order until marked delivered,
//! an id kept once, gone with its chat.

use std::sync::Arc;

use agentloop_storage::{StorageError, Store};
use agentloop_types::Message;

use super::{chat, project_with_chat};

pub async fn inbox_keeps_messages_until_delivered(store: Arc<dyn Store>) {
    let c = project_with_chat(&*store).await;
    let other = chat("other", "p", 2);
    store.create_chat(&other).await.unwrap();
    assert!(store.queued_messages("c").await.unwrap().is_empty());
    for (id, text) in [("b", "second"), ("a", "first"), ("c", "third")] {
        store
            .enqueue_message(&c.id, &Message::user_text(id, text), 10)
            .await
            .unwrap();
    }
    store
        .enqueue_message("other", &Message::user_text("a", "elsewhere"), 10)
        .await
        .unwrap();
    let again = store
        .enqueue_message(&c.id, &Message::user_text("a", "again"), 11)
        .await;
    assert!(
        matches!(again, Err(StorageError::AlreadyExists { .. })),
        "{again:?}"
    );
    // Arrival order, not id order.
    let queued: Vec<String> = store
        .queued_messages(&c.id)
        .await
        .unwrap()
        .iter()
        .map(Message::text)
        .collect();
    assert_eq!(queued, ["second", "first", "third"]);

    let marked = store
        .mark_delivered(&c.id, &["a".to_owned(), "zz".to_owned()], 20)
        .await
        .unwrap();
    assert_eq!(marked, 1);
    let again = store
        .mark_delivered(&c.id, &["a".to_owned()], 21)
        .await
        .unwrap();
    assert_eq!(again, 0, "delivered once");
    let ids: Vec<String> = store
        .queued_messages(&c.id)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(ids, ["b", "c"]);
    assert_eq!(store.queued_messages("other").await.unwrap().len(), 1);

    store.delete_chat(&c.id).await.unwrap();
    assert!(store.queued_messages(&c.id).await.unwrap().is_empty());
    assert_eq!(store.queued_messages("other").await.unwrap().len(), 1);
}
