//! [`History`]: a run's messages, shared between the run's state, the
//! request a provider is sending and a checkpoint being stored, so that
//! handing the history to each of them costs one reference count, not a
//! copy that grows with the run.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::message::Message;

/// Messages in order, shared: [`Clone`] is O(1), and a change (through
/// [`DerefMut`], e.g. `history.push(message)`) copies the messages only
/// when another holder still shares them. The run drops its request before
/// it appends the model's answer, so appending normally copies nothing.
///
/// Reads go through `Deref<Target = Vec<Message>>`; it serialises as a
/// plain JSON array.
#[derive(Clone, Default, PartialEq)]
pub struct History(Arc<Vec<Message>>);

impl History {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// The messages as an owned `Vec`, copied only when shared.
    pub fn into_vec(self) -> Vec<Message> {
        Arc::unwrap_or_clone(self.0)
    }

    /// Whether `self` and `other` share the same messages (no copy was
    /// made between them).
    pub fn shares_with(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Deref for History {
    type Target = Vec<Message>;

    fn deref(&self) -> &Vec<Message> {
        &self.0
    }
}

impl DerefMut for History {
    fn deref_mut(&mut self) -> &mut Vec<Message> {
        Arc::make_mut(&mut self.0)
    }
}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.iter()).finish()
    }
}

impl From<Vec<Message>> for History {
    fn from(messages: Vec<Message>) -> Self {
        Self(Arc::new(messages))
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
        self.0.iter()
    }
}

impl PartialEq<Vec<Message>> for History {
    fn eq(&self, other: &Vec<Message>) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<[Message]> for History {
    fn eq(&self, other: &[Message]) -> bool {
        self.0.as_slice() == other
    }
}

impl Serialize for History {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.as_slice().serialize(serializer)
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
    fn appending_alone_copies_nothing() {
        let mut history = History::from(vec![Message::user_text("u1", "hi")]);
        let before = Arc::as_ptr(&history.0);
        history.push(Message::user_text("u2", "again"));
        assert_eq!(Arc::as_ptr(&history.0), before);
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
