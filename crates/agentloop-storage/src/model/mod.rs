//! The records a store keeps.
//!
//! Ids are strings chosen by the caller; timestamps are Unix milliseconds
//! chosen by the caller (see [`now_millis`]), so a record reads back exactly
//! as it was written and export/import is lossless.

mod chats;
mod files;
mod memories;
mod projects;
mod runs;
mod tasks;
mod users;
mod webhooks;

pub use chats::*;
pub use files::*;
pub use memories::*;
pub use projects::*;
pub use runs::*;
pub use tasks::*;
pub use users::*;
pub use webhooks::*;

/// The current time in Unix milliseconds.
pub fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
