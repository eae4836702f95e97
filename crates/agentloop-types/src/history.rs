//! Tool-call pairing rules of a history, checked before every provider
//! request: every `tool_use` gets exactly one `tool_result`, in call order,
//! in the message right after it.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::message::{ContentBlock, Message, Role, ToolResultBlock};

/// A broken pairing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HistoryError {
    /// A tool call has no result in the next message.
    #[error("tool call {tool_use_id} in message {message_id} has no result in the next message")]
    MissingResult {
        /// The message holding the call.
        message_id: String,
        /// The call.
        tool_use_id: String,
    },
    /// A result answers no call of the message before it.
    #[error(
        "tool result for {tool_use_id} in message {message_id} answers no call of the message before it"
    )]
    OrphanResult {
        /// The message holding the result.
        message_id: String,
        /// The id it names.
        tool_use_id: String,
    },
    /// Results are not in call order.
    #[error("tool results in message {message_id} are not in call order")]
    OutOfOrder {
        /// The message holding the results.
        message_id: String,
    },
    /// Two calls share an id.
    #[error("tool call id {tool_use_id} is used twice")]
    DuplicateCall {
        /// The id.
        tool_use_id: String,
    },
}

/// Checks the pairing rules. A trailing assistant message with calls is
/// valid only when `allow_trailing_calls` (the moment before tools run).
pub fn validate_history(
    messages: &[Message],
    allow_trailing_calls: bool,
) -> Result<(), HistoryError> {
    HistoryCheck::default().check(messages, &[], allow_trailing_calls)
}

/// The pairing rules checked as a history grows: each call checks only the
/// messages appended since the last, so checking before every model
/// request costs the new messages, not the whole run.
///
/// The checked prefix must not change between calls; a history that was
/// replaced (its checked part no longer ends with the message it ended
/// with) is checked again from the start.
#[derive(Debug, Clone, Default)]
pub struct HistoryCheck {
    /// Messages of the prefix checked so far.
    checked: usize,
    /// Id of the prefix's last message, to notice a replaced history.
    last_id: Option<String>,
    /// Call ids of the checked prefix.
    seen: HashSet<String>,
}

impl HistoryCheck {
    /// Checks `messages` followed by `extra` (sent once, not kept): the
    /// part of `messages` checked by an earlier call is skipped.
    pub fn check(
        &mut self,
        messages: &[Message],
        extra: &[Message],
        allow_trailing_calls: bool,
    ) -> Result<(), HistoryError> {
        if !self.is_prefix_of(messages) {
            *self = Self::default();
        }
        let from = self.checked;
        for i in from..messages.len() {
            let previous = i.checked_sub(1).map(|p| &messages[p]);
            let seen = &mut self.seen;
            let checked = check_message(previous, &messages[i], |id| seen.insert(id.to_owned()));
            if let Err(error) = checked {
                self.last_id = i.checked_sub(1).map(|p| messages[p].id.clone());
                self.checked = i;
                return Err(error);
            }
        }
        if let Some(last) = messages.get(from..).and_then(<[Message]>::last) {
            self.checked = messages.len();
            // The id's room is reused: ids of one run have one length.
            let last_id = self.last_id.get_or_insert_with(String::new);
            last_id.clear();
            last_id.push_str(&last.id);
        }
        // `extra` is checked against the prefix without joining it.
        let mut extra_ids = HashSet::new();
        let mut previous = messages.last();
        for message in extra {
            check_message(previous, message, |id| {
                !self.seen.contains(id) && extra_ids.insert(id.to_owned())
            })?;
            previous = Some(message);
        }
        match previous {
            Some(last) if !allow_trailing_calls && last.role == Role::Assistant => {
                match last.tool_uses().next() {
                    Some(call) => Err(HistoryError::MissingResult {
                        message_id: last.id.clone(),
                        tool_use_id: call.id.clone(),
                    }),
                    None => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }
}

impl HistoryCheck {
    /// Whether `id` is the id of a tool call in `messages`. The prefix an
    /// earlier [`check`](Self::check) passed is answered from its record,
    /// so only what was appended since is read: a run asks this for every
    /// call of every turn.
    pub fn has_call_id(&self, messages: &[Message], id: &str) -> bool {
        let (known, from) = if self.is_prefix_of(messages) {
            (self.seen.contains(id), self.checked)
        } else {
            (false, 0)
        };
        known
            || messages[from..]
                .iter()
                .flat_map(Message::tool_uses)
                .any(|call| call.id == id)
    }

    /// Whether `messages` still begins with the prefix checked so far.
    fn is_prefix_of(&self, messages: &[Message]) -> bool {
        self.checked <= messages.len()
            && self.checked.checked_sub(1).map(|i| &messages[i].id) == self.last_id.as_ref()
    }
}

/// Checks one message against the one before it; `is_new_call` records a
/// call id and says whether it was unused so far.
fn check_message(
    previous: Option<&Message>,
    message: &Message,
    mut is_new_call: impl FnMut(&str) -> bool,
) -> Result<(), HistoryError> {
    for call in message.tool_uses() {
        if !is_new_call(&call.id) {
            return Err(HistoryError::DuplicateCall {
                tool_use_id: call.id.clone(),
            });
        }
    }
    // Iterated, not collected: this runs for every message of every run,
    // and a turn has a handful of calls.
    let previous_calls = || {
        previous
            .filter(|prev| prev.role == Role::Assistant)
            .into_iter()
            .flat_map(Message::tool_uses)
            .map(|c| c.id.as_str())
    };
    let results = || message.tool_results().map(|r| r.tool_use_id.as_str());
    if let Some(orphan) = results().find(|r| !previous_calls().any(|c| c == *r)) {
        return Err(HistoryError::OrphanResult {
            message_id: message.id.clone(),
            tool_use_id: orphan.to_owned(),
        });
    }
    if let Some(prev) = previous {
        if let Some(missing) = previous_calls().find(|c| !results().any(|r| r == *c)) {
            return Err(HistoryError::MissingResult {
                message_id: prev.id.clone(),
                tool_use_id: missing.to_owned(),
            });
        }
        if !results().eq(previous_calls()) {
            return Err(HistoryError::OutOfOrder {
                message_id: message.id.clone(),
            });
        }
    }
    Ok(())
}

/// Closes every tool call that has no result with an error result saying
/// `reason`, inserting or completing the result message after each call
/// message. Used to recover an interrupted run; valid histories are returned
/// unchanged. New messages get ids from `new_id`.
pub fn close_dangling_calls(
    messages: Vec<Message>,
    reason: &str,
    mut new_id: impl FnMut() -> String,
) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len() + 1);
    let mut iter = messages.into_iter().peekable();
    while let Some(message) = iter.next() {
        let calls: Vec<String> = if message.role == Role::Assistant {
            message.tool_uses().map(|c| c.id.clone()).collect()
        } else {
            Vec::new()
        };
        out.push(message);
        if calls.is_empty() {
            continue;
        }
        let mut existing: Vec<ToolResultBlock> = Vec::new();
        let mut other_blocks: Vec<ContentBlock> = Vec::new();
        let mut id = None;
        if let Some(next) =
            iter.next_if(|m| m.role == Role::User && m.tool_results().next().is_some())
        {
            id = Some(next.id);
            for block in next.content {
                match block {
                    ContentBlock::ToolResult(r) => existing.push(r),
                    other => other_blocks.push(other),
                }
            }
        }
        let mut content: Vec<ContentBlock> = calls
            .iter()
            .map(|call| {
                let found = existing.iter().position(|r| &r.tool_use_id == call);
                ContentBlock::ToolResult(match found {
                    Some(pos) => existing.remove(pos),
                    None => ToolResultBlock::error(call.clone(), reason),
                })
            })
            .collect();
        content.extend(other_blocks);
        out.push(Message::new(
            id.unwrap_or_else(&mut new_id),
            Role::User,
            content,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;
    use crate::{ContentBlock, ToolResultBlock, ToolUseBlock};

    fn call(message_id: &str, call_id: &str) -> Message {
        let call: ToolUseBlock =
            serde_json::from_value(json!({"id": call_id, "name": "t", "input": {}})).unwrap();
        Message::new(
            message_id,
            Role::Assistant,
            vec![ContentBlock::ToolUse(call)],
        )
    }

    fn result(message_id: &str, call_id: &str) -> Message {
        Message::new(
            message_id,
            Role::User,
            vec![ContentBlock::ToolResult(ToolResultBlock::ok(call_id, "ok"))],
        )
    }

    #[test]
    fn call_ids_are_found_in_the_checked_prefix_the_rest_and_a_replaced_history() {
        let mut messages = vec![
            Message::user_text("u", "hi"),
            call("a1", "w1"),
            result("r1", "w1"),
        ];
        let mut check = HistoryCheck::default();
        check.check(&messages, &[], false).unwrap();
        assert!(check.has_call_id(&messages, "w1"));
        assert!(!check.has_call_id(&messages, "w2"));

        // Appended after the check: read from the messages.
        messages.push(call("a2", "w2"));
        assert!(check.has_call_id(&messages, "w2"));

        // A history that no longer begins with the checked prefix is read
        // whole, not answered from the record.
        let replaced = vec![Message::user_text("u2", "hi"), call("b1", "x1")];
        assert!(check.has_call_id(&replaced, "x1"));
        assert!(!check.has_call_id(&replaced, "w1"));
    }
}
