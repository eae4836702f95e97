//! A chat's inbox: messages kept in arrival order with how and when each
//! was sent until marked delivered, an id kept once, gone with its chat.

use std::sync::Arc;

use agentloop_storage::{StorageError, Store};
use agentloop_types::{Message, SteerStrategy};

use super::{chat, project_with_chat};

pub async fn inbox_keeps_messages_until_delivered(store: Arc<dyn Store>) {
    let c = project_with_chat(&*store).await;
    let other = chat("other", "p", 2);
    store.create_chat(&other).await.unwrap();
    assert!(store.queued_messages("c").await.unwrap().is_empty());
    let sent = [
        ("b", "second", SteerStrategy::Enqueue, 10),
        ("a", "first", SteerStrategy::Interrupt, 11),
        ("c", "third", SteerStrategy::Enqueue, 12),
    ];
    for (id, text, strategy, at) in sent {
        store
            .enqueue_message(&c.id, &Message::user_text(id, text), strategy, at)
            .await
            .unwrap();
    }
    store
        .enqueue_message(
            "other",
            &Message::user_text("a", "elsewhere"),
            SteerStrategy::Enqueue,
            10,
        )
        .await
        .unwrap();
    let again = store
        .enqueue_message(
            &c.id,
            &Message::user_text("a", "again"),
            SteerStrategy::Enqueue,
            13,
        )
        .await;
    assert!(
        matches!(again, Err(StorageError::AlreadyExists { .. })),
        "{again:?}"
    );
    // Arrival order, not id order, each with its strategy and arrival.
    let queued: Vec<(String, SteerStrategy, i64)> = store
        .queued_messages(&c.id)
        .await
        .unwrap()
        .iter()
        .map(|q| (q.message.text(), q.strategy, q.queued_at))
        .collect();
    let expected: Vec<(String, SteerStrategy, i64)> = sent
        .iter()
        .map(|(_, text, strategy, at)| ((*text).to_owned(), *strategy, *at))
        .collect();
    assert_eq!(queued, expected);

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
        .map(|q| q.message.id)
        .collect();
    assert_eq!(ids, ["b", "c"]);
    assert_eq!(store.queued_messages("other").await.unwrap().len(), 1);

    store.delete_chat(&c.id).await.unwrap();
    assert!(store.queued_messages(&c.id).await.unwrap().is_empty());
    assert_eq!(store.queued_messages("other").await.unwrap().len(), 1);
}
