//! [`History`]: a run's messages, shared between the run's state, the
//! request a provider is sending and a checkpoint being stored, so that
//! handing the history to each of them costs one reference count, not a
//! copy that grows with the run.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::message::Message;

/// Messages in order, shared: [`Clone`] is O(1), and a change copies the
/// messages only when another holder still shares them. The run drops its
/// request before it appends the model's answer, so appending normally
/// copies nothing.
///
/// Every history has an [`origin`](Self::origin): histories of one origin
/// only ever grew by [`push`](Self::push) and [`extend`](Self::extend), so
/// any two of them agree on their common prefix. Any other change (through
/// [`DerefMut`]) or a copy made because the messages were shared starts a
/// new origin. A provider uses this to reuse what it wrote for the prefix.
///
/// Reads go through `Deref<Target = Vec<Message>>`; it serialises as a
/// plain JSON array.
#[derive(Clone)]
pub struct History {
    messages: Arc<Vec<Message>>,
    origin: u64,
}

/// A process-unique origin.
fn new_origin() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl Default for History {
    fn default() -> Self {
        Self::from(Vec::new())
    }
}

impl PartialEq for History {
    fn eq(&self, other: &Self) -> bool {
        self.messages == other.messages
    }
}

impl History {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a message, keeping the origin (unless the messages were
    /// shared and had to be copied).
    pub fn push(&mut self, message: Message) {
        self.append().push(message);
    }

    /// Appends messages, keeping the origin (unless the messages were
    /// shared and had to be copied).
    pub fn extend(&mut self, messages: impl IntoIterator<Item = Message>) {
        self.append().extend(messages);
    }

    /// The identity of this line of growth (see the type's docs).
    pub fn origin(&self) -> u64 {
        self.origin
    }

    fn append(&mut self) -> &mut Vec<Message> {
        if Arc::get_mut(&mut self.messages).is_none() {
            self.origin = new_origin();
        }
        Arc::make_mut(&mut self.messages)
    }

    /// The messages as an owned `Vec`, copied only when shared.
    pub fn into_vec(self) -> Vec<Message> {
        Arc::unwrap_or_clone(self.messages)
    }

    /// Whether `self` and `other` share the same messages (no copy was
    /// made between them).
    pub fn shares_with(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.messages, &other.messages)
    }
}

impl Deref for History {
    type Target = Vec<Message>;

    fn deref(&self) -> &Vec<Message> {
        &self.messages
    }
}

/// Any change but appending: the history starts a new origin.
impl DerefMut for History {
    fn deref_mut(&mut self) -> &mut Vec<Message> {
        self.origin = new_origin();
        Arc::make_mut(&mut self.messages)
    }
}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.messages.iter()).finish()
    }
}

impl From<Vec<Message>> for History {
    fn from(messages: Vec<Message>) -> Self {
        Self {
            messages: Arc::new(messages),
            origin: new_origin(),
        }
    }
}

impl From<History> for Vec<Message> {
    fn from(history: History) -> Self {
        history.into_vec()
    }
}

impl FromIterator<Message> for History {
    fn from_iter<I: IntoIterator<Item = Message>>(iter: I) -> Self {
        Self::from(iter.into_iter().collect::<Vec<_>>())
    }
}

impl<'a> IntoIterator for &'a History {
    type Item = &'a Message;
    type IntoIter = std::slice::Iter<'a, Message>;

    fn into_iter(self) -> Self::IntoIter {
        self.messages.iter()
    }
}

impl PartialEq<Vec<Message>> for History {
    fn eq(&self, other: &Vec<Message>) -> bool {
        *self.messages == *other
    }
}

impl PartialEq<History> for Vec<Message> {
    fn eq(&self, other: &History) -> bool {
        *self == *other.messages
    }
}

impl PartialEq<[Message]> for History {
    fn eq(&self, other: &[Message]) -> bool {
        self.messages.as_slice() == other
    }
}

impl Serialize for History {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.messages.as_slice().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for History {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<Message>::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for History {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "History".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Vec::<Message>::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clone_shares_until_one_side_changes() {
        let mut history = History::from(vec![Message::user_text("u1", "hi")]);
        let sent = history.clone();
        assert!(history.shares_with(&sent));
        history.push(Message::user_text("u2", "again"));
        assert!(!history.shares_with(&sent));
        assert_eq!(sent.len(), 1);
        assert_eq!(history.len(), 2);
    }

    #[test]
    fn appending_alone_copies_nothing_and_keeps_the_origin() {
        let mut history = History::from(vec![Message::user_text("u1", "hi")]);
        let (before, origin) = (Arc::as_ptr(&history.messages), history.origin());
        history.push(Message::user_text("u2", "again"));
        history.extend([Message::user_text("u3", "more")]);
        assert_eq!(Arc::as_ptr(&history.messages), before);
        assert_eq!(history.origin(), origin);
    }

    #[test]
    fn histories_of_one_origin_agree_on_their_prefix() {
        let mut first = History::from(vec![Message::user_text("u1", "hi")]);
        let mut second = first.clone();
        first.push(Message::user_text("a", "first"));
        second.push(Message::user_text("b", "second"));
        // The one that had to copy left the origin; the other kept it.
        assert_ne!(first.origin(), second.origin());
        let origin = second.origin();
        second[0] = Message::user_text("u1", "edited");
        assert_ne!(second.origin(), origin);
    }

    #[test]
    fn it_is_a_plain_json_array() {
        let history = History::from(vec![Message::user_text("u1", "hi")]);
        let json = serde_json::to_value(&history).unwrap_or_default();
        assert!(json.is_array());
        let back: History = serde_json::from_value(json).unwrap_or_default();
        assert_eq!(back, history);
    }
}
