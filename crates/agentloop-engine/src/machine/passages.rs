//! The cited form retrieved passages take in front of the model (see
//! [`retrieval`](crate::retrieval) for the text), and the query a retrieval
//! runs on: pure functions the run core decides with.

use agentloop_types::{Message, Passage, Role};

/// Id of the system message holding retrieved passages.
pub const RETRIEVED_MESSAGE_ID: &str = "retrieved-passages";

/// The cited text of `passages` (see the module docs); `None` when empty.
pub fn cite_passages(passages: &[Passage]) -> Option<String> {
    if passages.is_empty() {
        return None;
    }
    let mut out =
        String::from("Retrieved passages. Cite them by number, like [1], when you use them.");
    for (i, p) in passages.iter().enumerate() {
        out.push_str(&format!("\n\n[{}] {}\n{}", i + 1, p.source, p.text.trim()));
    }
    Some(out)
}

/// The text of the last user message: the query retrieval runs on.
pub fn last_user_text(messages: &[Message]) -> Option<String> {
    messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User && !m.text().trim().is_empty())
        .map(Message::text)
}

/// `messages` with the cited passages inserted before the last message.
pub fn inject_passages(mut messages: Vec<Message>, passages: &[Passage]) -> Vec<Message> {
    if let Some(text) = cite_passages(passages) {
        let at = messages.len().saturating_sub(1);
        messages.insert(at, Message::system_text(RETRIEVED_MESSAGE_ID, text));
    }
    messages
}
