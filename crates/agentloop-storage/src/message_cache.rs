//! Decoded copies of recently read chats, so reading a long chat again
//! costs what changed since, not the whole chat.
//!
//! The SQL backends number every change to a chat's messages (see
//! `migrations/*/0005_message_revisions.sql`). A copy is kept with the
//! [`MessageCursor`] read *before* its rows, so it is never newer than the
//! rows it holds claim; a later read compares the store's cursor with it:
//! equal — the copy is current; only `rev` grew — the rows written since
//! (appends and in-place replacements) are read and merged by seq; anything
//! else (messages deleted or restored, the chat deleted and created again)
//! — the copy is dropped and the chat read whole. Writes by other store
//! handles and other processes are therefore seen at the next read.
//!
//! Merging is idempotent (a row is placed by its seq), so rows newer than
//! the cursor they were read with are harmless: they are read again next
//! time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::model::StoredMessage;

/// Chats whose decoded messages are kept; the least recently read goes
/// first.
const MAX_CHATS: usize = 32;

/// Where a chat's messages stand in the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MessageCursor {
    /// When the chat was created: a chat deleted and made again under the
    /// same id does not pass for the old one.
    pub created_at: i64,
    /// The number of the last append or replacement.
    pub rev: i64,
    /// How many times messages were deleted or restored.
    pub resets: i64,
}

/// What the cache holds for a chat, given the store's cursor.
pub(crate) enum Lookup {
    /// The copy is current.
    Current(Vec<StoredMessage>),
    /// Only appends and replacements happened: read rows with a `rev`
    /// above this one and [`merge`](MessageCache::merge) them.
    Behind(i64),
    /// Read the chat whole and [`put`](MessageCache::put) it.
    Missing,
}

struct Entry {
    cursor: MessageCursor,
    messages: Arc<Vec<StoredMessage>>,
    used: u64,
}

/// The decoded copies of one store handle.
#[derive(Default)]
pub(crate) struct MessageCache {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    chats: HashMap<String, Entry>,
    clock: u64,
}

impl std::fmt::Debug for MessageCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let chats = self.lock().chats.len();
        f.debug_struct("MessageCache")
            .field("chats", &chats)
            .finish()
    }
}

impl MessageCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves at worst a stale copy,
        // which the next cursor check replaces.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What is kept for `chat_id` against the store's `cursor`.
    pub(crate) fn lookup(&self, chat_id: &str, cursor: MessageCursor) -> Lookup {
        let shared = {
            let mut inner = self.lock();
            inner.clock += 1;
            let now = inner.clock;
            let Some(entry) = inner.chats.get_mut(chat_id) else {
                return Lookup::Missing;
            };
            let kept = entry.cursor;
            if kept.created_at != cursor.created_at
                || kept.resets != cursor.resets
                || kept.rev > cursor.rev
            {
                inner.chats.remove(chat_id);
                return Lookup::Missing;
            }
            if kept.rev < cursor.rev {
                return Lookup::Behind(kept.rev);
            }
            entry.used = now;
            Arc::clone(&entry.messages)
        };
        // Copied outside the lock: other chats' readers do not wait for it.
        Lookup::Current(shared.as_ref().clone())
    }

    /// Keeps a chat read whole with the cursor read before its rows.
    pub(crate) fn put(&self, chat_id: &str, cursor: MessageCursor, messages: &[StoredMessage]) {
        let messages = Arc::new(messages.to_vec());
        let mut inner = self.lock();
        inner.clock += 1;
        let used = inner.clock;
        if !inner.chats.contains_key(chat_id) && inner.chats.len() >= MAX_CHATS {
            let oldest = inner
                .chats
                .iter()
                .min_by_key(|(_, entry)| entry.used)
                .map(|(id, _)| id.clone());
            if let Some(oldest) = oldest {
                inner.chats.remove(&oldest);
            }
        }
        inner.chats.insert(
            chat_id.to_owned(),
            Entry {
                cursor,
                messages,
                used,
            },
        );
    }

    /// Merges rows written since the copy's `rev` (read after `cursor`)
    /// into the copy, and returns the chat's messages; `None` when the copy
    /// went meanwhile (read the chat whole).
    pub(crate) fn merge(
        &self,
        chat_id: &str,
        cursor: MessageCursor,
        changed: Vec<StoredMessage>,
    ) -> Option<Vec<StoredMessage>> {
        let mut inner = self.lock();
        inner.clock += 1;
        let now = inner.clock;
        let entry = inner.chats.get_mut(chat_id)?;
        if entry.cursor.created_at != cursor.created_at || entry.cursor.resets != cursor.resets {
            return None;
        }
        let messages = Arc::make_mut(&mut entry.messages);
        for row in changed {
            match messages.binary_search_by_key(&row.seq, |m| m.seq) {
                Ok(at) => messages[at] = row,
                Err(at) => messages.insert(at, row),
            }
        }
        entry.cursor.rev = entry.cursor.rev.max(cursor.rev);
        entry.used = now;
        let shared = Arc::clone(&entry.messages);
        drop(inner);
        Some(shared.as_ref().clone())
    }

    /// Drops the copy of a chat this handle deleted or reset.
    pub(crate) fn forget(&self, chat_id: &str) {
        self.lock().chats.remove(chat_id);
    }
}

#[cfg(test)]
mod tests {
    use agentloop_types::Message;

    use super::*;

    fn row(seq: u64, text: &str) -> StoredMessage {
        StoredMessage {
            seq,
            message: Message::user_text(format!("m{seq}"), text),
        }
    }

    fn cursor(rev: i64, resets: i64) -> MessageCursor {
        MessageCursor {
            created_at: 1,
            rev,
            resets,
        }
    }

    #[test]
    fn current_behind_and_reset() {
        let cache = MessageCache::default();
        assert!(matches!(cache.lookup("c", cursor(2, 0)), Lookup::Missing));
        cache.put("c", cursor(2, 0), &[row(0, "a"), row(1, "b")]);
        assert!(matches!(cache.lookup("c", cursor(2, 0)), Lookup::Current(m) if m.len() == 2));
        assert!(matches!(cache.lookup("c", cursor(4, 0)), Lookup::Behind(2)));
        let merged = cache
            .merge("c", cursor(4, 0), vec![row(1, "b2"), row(2, "c")])
            .unwrap();
        let texts: Vec<String> = merged.iter().map(|m| m.message.text()).collect();
        assert_eq!(texts, ["a", "b2", "c"]);
        assert!(matches!(cache.lookup("c", cursor(4, 0)), Lookup::Current(m) if m.len() == 3));
        // A reset, or a chat made again, drops the copy.
        assert!(matches!(cache.lookup("c", cursor(4, 1)), Lookup::Missing));
        cache.put("c", cursor(4, 1), &[row(0, "a")]);
        let again = MessageCursor {
            created_at: 2,
            ..cursor(4, 1)
        };
        assert!(matches!(cache.lookup("c", again), Lookup::Missing));
    }

    #[test]
    fn keeps_a_bounded_number_of_chats() {
        let cache = MessageCache::default();
        for i in 0..MAX_CHATS + 5 {
            cache.put(&format!("c{i}"), cursor(0, 0), &[]);
        }
        assert_eq!(cache.lock().chats.len(), MAX_CHATS);
        assert!(matches!(cache.lookup("c0", cursor(0, 0)), Lookup::Missing));
        let last = format!("c{}", MAX_CHATS + 4);
        assert!(matches!(
            cache.lookup(&last, cursor(0, 0)),
            Lookup::Current(_)
        ));
    }
}
