//! A project's webhook registration, kept in its settings under
//! `webhooks`: the URLs, the events they hear, and the signing secret.
//! The project's own JSON never shows it; only its webhook routes do.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::target;

/// The events a registration may name.
pub const EVENTS: [&str; 3] = ["run.ended", "run.waiting", "chain.completed"];
/// At most this many URLs per project.
pub const MAX_URLS: usize = 10;
/// At most this long a URL.
pub const MAX_URL_LEN: usize = 2048;

/// A project's webhooks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registration {
    /// Where deliveries go.
    pub urls: Vec<String>,
    /// Which events they hear.
    pub events: Vec<String>,
    /// The HMAC key deliveries are signed with.
    pub secret: String,
}

impl Registration {
    /// The registration stored in a project's settings, if any.
    pub fn of(settings: &Value) -> Option<Self> {
        settings
            .get("webhooks")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    }

    /// Whether it hears `event`.
    pub fn hears(&self, event: &str) -> bool {
        self.events.iter().any(|e| e == event)
    }
}

/// Checks the URLs and events of a registration request; `events` absent
/// means all of them.
pub fn check(urls: &[String], events: Option<&[String]>) -> Result<Vec<String>, String> {
    if urls.len() > MAX_URLS {
        return Err(format!("at most {MAX_URLS} urls"));
    }
    for url in urls {
        if url.chars().count() > MAX_URL_LEN {
            return Err(format!("a url is longer than {MAX_URL_LEN} characters"));
        }
        target::parse(url).map_err(|e| e.to_string())?;
    }
    let events: Vec<String> = match events {
        None => EVENTS.iter().map(|e| (*e).to_owned()).collect(),
        Some(events) => events.to_vec(),
    };
    if let Some(unknown) = events.iter().find(|e| !EVENTS.contains(&e.as_str())) {
        return Err(format!(
            "unknown event {unknown:?} (events: {})",
            EVENTS.join(", ")
        ));
    }
    Ok(events)
}
