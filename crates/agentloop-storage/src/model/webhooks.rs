//! A project's webhook deliveries and their attempts.

use serde::{Deserialize, Serialize};

/// One webhook event sent to one URL, with its attempts (a project's
/// webhook delivery log).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookDelivery {
    /// Id (also sent to the receiver).
    pub id: String,
    /// The project whose webhook it is.
    pub project_id: String,
    /// The event's name (`run.ended`, …).
    pub event: String,
    /// The receiver.
    pub url: String,
    /// Where it stands.
    pub state: WebhookDeliveryState,
    /// Its attempts, in order.
    pub attempts: Vec<WebhookAttempt>,
    /// Creation time (Unix ms).
    pub created_at: i64,
}

/// Where a webhook delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WebhookDeliveryState {
    /// Attempts are still being made.
    Pending,
    /// A receiver answered 2xx.
    Delivered,
    /// Every attempt failed, or the URL may not be reached.
    Failed,
}

impl WebhookDeliveryState {
    /// The stored form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Delivered => "delivered",
            Self::Failed => "failed",
        }
    }

    /// Parses the stored form.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "pending" => Some(Self::Pending),
            "delivered" => Some(Self::Delivered),
            "failed" => Some(Self::Failed),
            _ => None,
        }
    }
}

/// One attempt of a webhook delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookAttempt {
    /// When it started (RFC 3339).
    pub at: String,
    /// The receiver's HTTP status, when it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// What went wrong, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
