//! Messages a run logged: a backend may keep them only in their
//! `message_created` events, and every read of the chat still gives them
//! back whole, while the log stays as it was written.

use std::sync::Arc;

use agentloop_storage::Store;
use agentloop_storage::model::StoredMessage;
use agentloop_storage::store::LoggedEvent;
use agentloop_types::{EventKind, LoopEvent, Message, MessageCreatedEvent, RunPath};

use super::{project_with_chat, run_record};

fn created(seq: u64, message: &Message) -> LoopEvent {
    LoopEvent {
        seq,
        path: RunPath::root(),
        kind: EventKind::MessageCreated(MessageCreatedEvent {
            message: message.clone(),
        }),
    }
}

fn messages(stored: &[StoredMessage]) -> Vec<Message> {
    stored.iter().map(|m| m.message.clone()).collect()
}

/// Logs `message` as event `seq` of run `r1`, then saves it as logged.
async fn log(store: &dyn Store, seq: u64, message: &Message) -> u64 {
    store
        .append_events("r1", &[created(seq, message)])
        .await
        .unwrap();
    let logged = LoggedEvent { run_id: "r1", seq };
    store
        .save_logged_message("c", message, logged)
        .await
        .unwrap()
}

pub async fn logged_messages_read_back_from_their_events(store: Arc<dyn Store>) {
    project_with_chat(&*store).await;
    store
        .create_run(&run_record("r1", Some("c")))
        .await
        .unwrap();
    let prompt = Message::user_text("u1", "Read the key.");
    store.save_message("c", &prompt).await.unwrap();
    let answer = Message::assistant_text("a1", "The key says \"hello\", 世界 <b>&amp;</b>\n");
    let answer_seq = log(&*store, 0, &answer).await;

    // A cold read, one message, and a read of what changed since.
    assert_eq!(
        messages(&store.list_messages("c").await.unwrap()),
        [prompt.clone(), answer.clone()]
    );
    assert_eq!(store.get_message("c", "a1").await.unwrap().message, answer);
    let next = Message::user_text("u2", "And the lock?");
    log(&*store, 1, &next).await;
    assert_eq!(
        messages(&store.list_messages("c").await.unwrap()),
        [prompt.clone(), answer.clone(), next.clone()]
    );

    // A message replaced in place by one no run logged is the new one; the
    // log keeps what was logged.
    let edited = Message::assistant_text("a1", "Edited by a person.");
    assert_eq!(store.save_message("c", &edited).await.unwrap(), answer_seq);
    assert_eq!(store.get_message("c", "a1").await.unwrap().message, edited);
    let logged = store.list_events("r1", None, 10).await.unwrap();
    assert_eq!(logged, [created(0, &answer), created(1, &next)]);

    // And the other way round: a logged message replacing one in place.
    let relogged = Message::assistant_text("a1", "Logged again.");
    assert_eq!(log(&*store, 2, &relogged).await, answer_seq);
    assert_eq!(
        messages(&store.list_messages("c").await.unwrap()),
        [prompt.clone(), relogged.clone(), next]
    );

    // Truncating the chat leaves the log whole.
    store
        .truncate_messages("c", Some(answer_seq))
        .await
        .unwrap();
    assert_eq!(
        messages(&store.list_messages("c").await.unwrap()),
        [prompt, relogged]
    );
    assert_eq!(store.list_events("r1", None, 10).await.unwrap().len(), 3);
}
