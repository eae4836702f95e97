//! One delivery: the signed POST, retried with exponential backoff while
//! the receiver fails or does not answer in time, each attempt saved to
//! the project's delivery log in the store (so every instance's API shows
//! it, and a restart keeps it). A URL that may not be reached is not
//! retried.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::sign::{DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, signature};
use super::target::{self, TargetError};
use agentloop_storage::Store;
use agentloop_storage::model::{WebhookAttempt, WebhookDelivery, WebhookDeliveryState};

use crate::config::WebhookSettings;
use crate::ids::{new_id, rfc3339};

/// What to deliver where.
#[derive(Debug, Clone)]
pub struct Job {
    /// The project whose log records it.
    pub project: String,
    /// The receiver.
    pub url: String,
    /// The event's name.
    pub event: String,
    /// The JSON body.
    pub body: Vec<u8>,
    /// The project's signing secret.
    pub secret: String,
}

/// Delivers `job`, saving it to the project's log in `store` as it goes;
/// returns the final state.
pub async fn deliver(
    settings: &WebhookSettings,
    store: &Arc<dyn Store>,
    job: Job,
) -> WebhookDeliveryState {
    let mut delivery = WebhookDelivery {
        id: new_id(),
        project_id: job.project.clone(),
        event: job.event.clone(),
        url: job.url.clone(),
        state: WebhookDeliveryState::Pending,
        attempts: Vec::new(),
        created_at: now_millis(),
    };
    save(store, &delivery).await;
    let attempts = settings.attempts.max(1);
    for n in 0..attempts {
        if n > 0 {
            // The backoff itself: 1, 2, 4... times the base.
            tokio::time::sleep(settings.retry_base * 2u32.saturating_pow(n - 1)).await;
        }
        let at = rfc3339(now_millis());
        let (made, state) = match attempt(settings, &job, &delivery.id).await {
            Ok(status) if (200..300).contains(&status) => {
                (attempt_ok(at, status), WebhookDeliveryState::Delivered)
            }
            Ok(status) => (attempt_ok(at, status), WebhookDeliveryState::Pending),
            Err(Failure::Refused(error)) => (
                attempt_err(at, error.to_string()),
                WebhookDeliveryState::Failed,
            ),
            Err(Failure::Send(error)) => (attempt_err(at, error), WebhookDeliveryState::Pending),
        };
        delivery.attempts.push(made);
        delivery.state = state;
        if state != WebhookDeliveryState::Pending {
            save(store, &delivery).await;
            return state;
        }
        if n + 1 < attempts {
            save(store, &delivery).await;
        }
    }
    delivery.state = WebhookDeliveryState::Failed;
    save(store, &delivery).await;
    WebhookDeliveryState::Failed
}

/// Saves the delivery as it stands; a store that fails loses that step
/// of the log, never the delivery itself.
async fn save(store: &Arc<dyn Store>, delivery: &WebhookDelivery) {
    if let Err(error) = store.save_webhook_delivery(delivery).await {
        tracing::warn!(delivery = %delivery.id, project_id = %delivery.project_id, %error,
                       "webhooks: the delivery log could not be saved");
    }
}

enum Failure {
    /// The URL may not be reached: no retry.
    Refused(TargetError),
    /// The attempt failed (connection, timeout): retried.
    Send(String),
}

async fn attempt(settings: &WebhookSettings, job: &Job, id: &str) -> Result<u16, Failure> {
    let target = target::parse(&job.url).map_err(Failure::Refused)?;
    let address = target::resolve(&target, settings.allow_private)
        .await
        .map_err(Failure::Refused)?;
    // HTTPS needs a process-wide crypto provider; a host may have set one.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        // Redirects could lead anywhere, private addresses included.
        .redirect(reqwest::redirect::Policy::none())
        .timeout(settings.timeout)
        // The address checked is the one connected to.
        .resolve(&target.host, address)
        .build()
        .map_err(|e| Failure::Send(format!("cannot build the HTTP client: {e}")))?;
    let timestamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs();
    let response = client
        .post(&job.url)
        .header("content-type", "application/json")
        .header(
            "user-agent",
            concat!("agentloop-webhooks/", env!("CARGO_PKG_VERSION")),
        )
        .header(EVENT_HEADER, &job.event)
        .header(DELIVERY_HEADER, id)
        .header(TIMESTAMP_HEADER, timestamp.to_string())
        .header(
            SIGNATURE_HEADER,
            signature(&job.secret, timestamp, &job.body),
        )
        .body(job.body.clone())
        .send()
        .await
        .map_err(|e| {
            Failure::Send(if e.is_timeout() {
                format!("no answer within {} s", settings.timeout.as_secs_f64())
            } else {
                format!("cannot send: {e}")
            })
        })?;
    Ok(response.status().as_u16())
}

fn attempt_ok(at: String, status: u16) -> WebhookAttempt {
    WebhookAttempt {
        at,
        status: Some(status),
        error: None,
    }
}

fn attempt_err(at: String, error: String) -> WebhookAttempt {
    WebhookAttempt {
        at,
        status: None,
        error: Some(error),
    }
}

fn now_millis() -> i64 {
    agentloop_storage::model::now_millis()
}
