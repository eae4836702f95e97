//! The webhook delivery log (see [`crate::webhooks`]): the last
//! deliveries of each project on this instance, each with its attempts,
//! for the API to show.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};

use serde::Serialize;

/// Deliveries kept per project; older ones are dropped.
const KEPT: usize = 100;

/// One attempt to deliver.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attempt {
    /// When it started (RFC 3339).
    pub at: String,
    /// The receiver's HTTP status, when it answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// What went wrong, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryState {
    /// Attempts are still being made.
    Pending,
    /// A receiver answered 2xx.
    Delivered,
    /// Every attempt failed, or the URL may not be reached.
    Failed,
}

/// One event sent to one URL.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Delivery {
    /// Its id (also sent as `X-Agentloop-Delivery`).
    pub id: String,
    /// The event.
    pub event: String,
    /// The URL.
    pub url: String,
    /// Where it stands.
    pub state: DeliveryState,
    /// Its attempts, in order.
    pub attempts: Vec<Attempt>,
}

/// The log of every project.
#[derive(Debug, Default)]
pub struct Deliveries {
    by_project: Mutex<HashMap<String, VecDeque<Delivery>>>,
}

impl Deliveries {
    /// Adds `delivery` to `project`'s log.
    pub fn record(&self, project: &str, delivery: Delivery) {
        let mut all = self
            .by_project
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let log = all.entry(project.to_owned()).or_default();
        if log.len() == KEPT {
            log.pop_front();
        }
        log.push_back(delivery);
    }

    /// Changes `project`'s delivery `id`, if it is still kept.
    pub fn update(&self, project: &str, id: &str, change: impl FnOnce(&mut Delivery)) {
        let mut all = self
            .by_project
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(delivery) = all
            .get_mut(project)
            .and_then(|log| log.iter_mut().find(|d| d.id == id))
        {
            change(delivery);
        }
    }

    /// `project`'s deliveries, oldest first.
    pub fn list(&self, project: &str) -> Vec<Delivery> {
        let all = self
            .by_project
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        all.get(project)
            .map(|log| log.iter().cloned().collect())
            .unwrap_or_default()
    }
}
