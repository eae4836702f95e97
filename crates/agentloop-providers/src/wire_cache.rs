//! The wire form of history already sent, kept per history origin so that
//! a run's next request writes only the messages added since: each step
//! then costs copying the bytes of the prefix, not serialising it again.

use std::collections::VecDeque;
use std::sync::Mutex;

use agentloop_types::{History, Message, ProviderError};

/// Histories remembered at once (runs in flight on one provider).
const ENTRIES: usize = 64;
/// Bytes remembered at most, over all entries.
const MAX_BYTES: usize = 32 << 20;

/// Written messages by [`History::origin`], most recent first.
#[derive(Debug, Default)]
pub(crate) struct WireCache {
    entries: Mutex<VecDeque<Entry>>,
}

#[derive(Debug)]
struct Entry {
    origin: u64,
    /// Where each written message's part of `bytes` ends.
    ends: Vec<usize>,
    /// Their wire elements, each followed by a comma.
    bytes: Vec<u8>,
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
        let Ok(entries) = self.entries.lock() else {
            return 0;
        };
        entries
            .iter()
            .find(|e| e.origin == history.origin())
            // A longer entry is not this history's prefix: it is rewritten.
            .map_or(0, |e| e.ends.len())
            .min(history.len())
    }

    fn take(&self, origin: u64) -> Option<Entry> {
        let mut entries = self.entries.lock().ok()?;
        let at = entries.iter().position(|e| e.origin == origin)?;
        entries.remove(at)
    }

    fn keep(&self, entry: Entry) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        entries.push_front(entry);
        entries.truncate(ENTRIES);
        let mut total = 0;
        let fits = entries
            .iter()
            .take_while(|e| {
                total += e.bytes.len();
                total <= MAX_BYTES
            })
            .count();
        entries.truncate(fits);
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
}
