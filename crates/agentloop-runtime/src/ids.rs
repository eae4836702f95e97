//! Ids for runs, messages and chats the runtime creates.

use std::sync::atomic::{AtomicU64, Ordering};

/// A new id `<prefix>-<time>-<pid>-<counter>`: unique among the processes
/// sharing one store, ordered by creation time within a process.
pub fn new_id(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!(
        "{prefix}-{nanos:x}-{:x}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}
