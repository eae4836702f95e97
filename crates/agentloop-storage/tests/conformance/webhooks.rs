//! The webhook delivery log.

use std::sync::Arc;

use agentloop_storage::model::{WebhookAttempt, WebhookDelivery, WebhookDeliveryState};
use agentloop_storage::{StorageError, Store, WEBHOOK_DELIVERIES_KEPT};

use super::project;

fn delivery(id: &str, project_id: &str, created_at: i64) -> WebhookDelivery {
    WebhookDelivery {
        id: id.into(),
        project_id: project_id.into(),
        event: "run.ended".into(),
        url: "https://example.com/hook".into(),
        state: WebhookDeliveryState::Pending,
        attempts: Vec::new(),
        created_at,
    }
}

pub async fn webhook_deliveries_log(store: Arc<dyn Store>) {
    store.create_project(&project("p", 1)).await.unwrap();
    store.create_project(&project("q", 1)).await.unwrap();
    assert!(matches!(
        store.save_webhook_delivery(&delivery("x", "nope", 1)).await,
        Err(StorageError::Invalid(_))
    ));

    // Saved again as it goes: the attempts and state are replaced, the
    // rest kept.
    let mut first = delivery("d1", "p", 10);
    store.save_webhook_delivery(&first).await.unwrap();
    first.attempts.push(WebhookAttempt {
        at: "2026-11-25T00:00:00Z".into(),
        status: Some(500),
        error: None,
    });
    first.attempts.push(WebhookAttempt {
        at: "2026-11-25T00:00:01Z".into(),
        status: None,
        error: Some("no answer within 5 s — «timeout»".into()),
    });
    first.state = WebhookDeliveryState::Failed;
    first.event = "ignored on update".into();
    store.save_webhook_delivery(&first).await.unwrap();
    store
        .save_webhook_delivery(&delivery("d0", "p", 5))
        .await
        .unwrap();
    store
        .save_webhook_delivery(&delivery("e1", "q", 7))
        .await
        .unwrap();
    let log = store.list_webhook_deliveries("p", 10).await.unwrap();
    let ids: Vec<&str> = log.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, ["d0", "d1"], "oldest first, this project's only");
    assert_eq!(log[1].state, WebhookDeliveryState::Failed);
    assert_eq!(log[1].attempts, first.attempts);
    assert_eq!(log[1].event, "run.ended");
    assert_eq!(
        store.list_webhook_deliveries("p", 1).await.unwrap()[0].id,
        "d1",
        "a limit keeps the newest"
    );

    // Past the kept number, the oldest go.
    for n in 0..WEBHOOK_DELIVERIES_KEPT {
        store
            .save_webhook_delivery(&delivery(&format!("n{n:03}"), "p", 100 + i64::from(n)))
            .await
            .unwrap();
    }
    let log = store.list_webhook_deliveries("p", 1000).await.unwrap();
    assert_eq!(log.len(), WEBHOOK_DELIVERIES_KEPT as usize);
    assert_eq!(log[0].id, "n000");
    assert_eq!(
        store
            .list_webhook_deliveries("q", 1000)
            .await
            .unwrap()
            .len(),
        1
    );

    // Deleted with the project.
    store.delete_project("p").await.unwrap();
    assert!(
        store
            .list_webhook_deliveries("p", 1000)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store
            .list_webhook_deliveries("q", 1000)
            .await
            .unwrap()
            .len(),
        1
    );
}
