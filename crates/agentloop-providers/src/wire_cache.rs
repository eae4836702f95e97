//! The wire form of history already sent, kept per history origin so that
//! a run's next request writes only the messages added since: each step
//! then costs copying the bytes of the prefix, not serialising it again.
//! The tools' schemas, which every request repeats too, are kept beside it
//! (`SchemaTexts`).

use std::collections::HashMap;
use std::sync::Mutex;

use agentloop_types::{History, Message, ProviderError};

use crate::schema_texts::SchemaTexts;

/// Histories remembered at once: one per run in flight on one provider,
/// so it is far above the runs a process keeps in flight (a smaller bound
/// would make every run past it write its whole history each step).
const ENTRIES: usize = 16_384;
/// Bytes remembered at most, over all entries.
const MAX_BYTES: usize = 32 << 20;

/// Written messages by [`History::origin`]; the least recently used go
/// first when a bound is passed.
#[derive(Debug, Default)]
pub(crate) struct WireCache {
    inner: Mutex<Entries>,
    schemas: SchemaTexts,
}

#[derive(Debug, Default)]
struct Entries {
    by_origin: HashMap<u64, Entry>,
    /// Sum of the entries' `bytes` lengths.
    bytes: usize,
    /// Incremented at each keep: an entry's `used` orders it by recency.
    clock: u64,
}

#[derive(Debug)]
struct Entry {
    origin: u64,
    /// Where each written message's part of `bytes` ends.
    ends: Vec<usize>,
    /// Their wire elements, each followed by a comma.
    bytes: Vec<u8>,
    /// The clock when it was last kept.
    used: u64,
}

impl Entries {
    fn remove(&mut self, origin: u64) -> Option<Entry> {
        let entry = self.by_origin.remove(&origin)?;
        self.bytes -= entry.bytes.len();
        Some(entry)
    }

    fn insert(&mut self, mut entry: Entry) {
        self.clock += 1;
        entry.used = self.clock;
        self.bytes += entry.bytes.len();
        if let Some(old) = self.by_origin.insert(entry.origin, entry) {
            self.bytes -= old.bytes.len();
        }
        if self.by_origin.len() > ENTRIES || self.bytes > MAX_BYTES {
            self.evict();
        }
    }

    /// Drops the least recently used entries until both bounds are met
    /// with an eighth to spare, so that eviction (a sort) is rare.
    fn evict(&mut self) {
        let mut by_age: Vec<(u64, u64)> = self
            .by_origin
            .values()
            .map(|e| (e.used, e.origin))
            .collect();
        by_age.sort_unstable();
        for (_, origin) in by_age {
            if self.by_origin.len() <= ENTRIES - ENTRIES / 8
                && self.bytes <= MAX_BYTES - MAX_BYTES / 8
            {
                break;
            }
            self.remove(origin);
        }
    }
}

/// The wire elements of every message of a history, each followed by a
/// comma, and where each message's part ends.
pub(crate) struct Segments<'a> {
    pub(crate) bytes: &'a [u8],
    ends: &'a [usize],
}

impl Segments<'_> {
    /// The part of message `index`.
    pub(crate) fn message(&self, index: usize) -> &[u8] {
        let start = index.checked_sub(1).map_or(0, |i| self.ends[i]);
        &self.bytes[start..self.ends[index]]
    }
}

impl WireCache {
    /// The texts of the tools' schemas written so far.
    pub(crate) fn schemas(&self) -> &SchemaTexts {
        &self.schemas
    }

    /// Appends the elements of every message of `history` to `out`, each
    /// followed by a comma: the prefix written for an earlier request of
    /// the same origin is copied, and `write` writes the rest (one
    /// message's elements, each followed by a comma, given its index).
    pub(crate) fn write(
        &self,
        history: &History,
        out: &mut Vec<u8>,
        write: impl FnMut(usize, &Message, &mut Vec<u8>) -> Result<(), ProviderError>,
    ) -> Result<(), ProviderError> {
        self.with_segments(history, write, |segments| {
            out.extend_from_slice(segments.bytes);
            Ok(())
        })
    }

    /// Like [`write`](Self::write), but hands the written parts to `read`,
    /// message by message, for a body that frames them itself.
    pub(crate) fn with_segments<R>(
        &self,
        history: &History,
        mut write: impl FnMut(usize, &Message, &mut Vec<u8>) -> Result<(), ProviderError>,
        read: impl FnOnce(&Segments<'_>) -> Result<R, ProviderError>,
    ) -> Result<R, ProviderError> {
        let origin = history.origin();
        let mut entry = self
            .take(origin)
            .filter(|e| e.ends.len() <= history.len())
            .unwrap_or(Entry {
                origin,
                ends: Vec::new(),
                bytes: Vec::new(),
                used: 0,
            });
        for (index, message) in history.iter().enumerate().skip(entry.ends.len()) {
            write(index, message, &mut entry.bytes)?;
            entry.ends.push(entry.bytes.len());
        }
        let result = read(&Segments {
            bytes: &entry.bytes,
            ends: &entry.ends,
        });
        self.keep(entry);
        result
    }

    /// How many messages of `history` (from its start) an earlier request
    /// of the same origin wrote: the next body copies them.
    pub(crate) fn written(&self, history: &History) -> usize {
        let Ok(inner) = self.inner.lock() else {
            return 0;
        };
        inner
            .by_origin
            .get(&history.origin())
            // A longer entry is not this history's prefix: it is rewritten.
            .map_or(0, |e| e.ends.len())
            .min(history.len())
    }

    fn take(&self, origin: u64) -> Option<Entry> {
        self.inner.lock().ok()?.remove(origin)
    }

    fn keep(&self, entry: Entry) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.insert(entry);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_text(_: usize, message: &Message, out: &mut Vec<u8>) -> Result<(), ProviderError> {
        out.extend_from_slice(message.text().as_bytes());
        out.push(b',');
        Ok(())
    }

    #[test]
    fn a_grown_history_writes_only_its_new_messages() {
        let cache = WireCache::default();
        let mut history = History::from(vec![Message::user_text("u1", "a")]);
        let mut out = Vec::new();
        cache
            .write(&history, &mut out, write_text)
            .unwrap_or_default();
        assert_eq!(out, b"a,");

        history.push(Message::user_text("u2", "b"));
        let mut written = Vec::new();
        let mut out = Vec::new();
        cache
            .write(&history, &mut out, |i, m, out| {
                written.push(m.id.clone());
                write_text(i, m, out)
            })
            .unwrap_or_default();
        assert_eq!(out, b"a,b,");
        assert_eq!(written, ["u2"]);
    }

    #[test]
    fn a_changed_history_is_written_again() {
        let cache = WireCache::default();
        let mut history = History::from(vec![Message::user_text("u1", "a")]);
        cache
            .write(&history, &mut Vec::new(), write_text)
            .unwrap_or_default();
        history[0] = Message::user_text("u1", "edited");
        let mut out = Vec::new();
        cache
            .write(&history, &mut out, write_text)
            .unwrap_or_default();
        assert_eq!(out, b"edited,");
    }

    /// Far more histories in flight than the old bound of 64: each one's
    /// next request still writes only its new message.
    #[test]
    fn thousands_of_histories_in_flight_stay_written() {
        let cache = WireCache::default();
        let mut histories: Vec<History> = (0..2_000)
            .map(|i| History::from(vec![Message::user_text("u1", format!("{i}"))]))
            .collect();
        for history in &histories {
            cache
                .write(history, &mut Vec::new(), write_text)
                .unwrap_or_default();
        }
        for (i, history) in histories.iter_mut().enumerate() {
            history.push(Message::user_text("u2", "next"));
            let mut rewritten = 0;
            let mut out = Vec::new();
            cache
                .write(history, &mut out, |index, m, out| {
                    rewritten += 1;
                    write_text(index, m, out)
                })
                .unwrap_or_default();
            assert_eq!(out, format!("{i},next,").as_bytes());
            assert_eq!(rewritten, 1, "history {i} was written again whole");
        }
    }

    /// Past the byte bound the least recently used histories go first.
    #[test]
    fn the_least_recently_used_history_goes_first() {
        let cache = WireCache::default();
        let big = "x".repeat(MAX_BYTES / 4);
        let histories: Vec<History> = (0..5)
            .map(|_| History::from(vec![Message::user_text("u1", big.clone())]))
            .collect();
        for history in &histories {
            cache
                .write(history, &mut Vec::new(), write_text)
                .unwrap_or_default();
        }
        let kept: Vec<usize> = histories.iter().map(|h| cache.written(h)).collect();
        assert_eq!(kept, [0, 0, 1, 1, 1]);
        let inner = cache.inner.lock().map(|i| i.bytes).unwrap_or_default();
        assert_eq!(inner, 3 * (big.len() + 1));
    }
}
