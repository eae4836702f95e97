//! What a model request carried, as its run's log records it (in the
//! request's `streaming_start` event), so that each request can be shown
//! later exactly as it was sent.
//!
//! A request mostly repeats what the log already holds, so it is recorded
//! by difference: messages sent as the run's history stores them are named
//! by their place in it, and only what the request alone carried (a
//! compaction's summary, a message with its thinking trimmed or its results
//! cleared, a prompt added for this call) is written out; the options and
//! the tools are written when they differ from the run's previous request.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

use crate::message::Message;
use crate::options::{RequestOptions, ResponseFormat};
use crate::shared_history::History;
use crate::tool_definition::ToolDefinition;

/// What one model request carried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SentRequest {
    /// Its options (model, sampling, system prompt …); absent when they
    /// are those of the run's previous request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<RequestOptions>,
    /// The tools it offered; absent when they are those of the run's
    /// previous request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolDefinition>>,
    /// The schema its answer was held to, when one was sent natively.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    /// Its messages, in the order sent.
    pub messages: Vec<SentMessages>,
}

/// Messages of a request, in the order sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SentMessages {
    /// The run's history messages `from..to` (0-based, `to` excluded),
    /// sent as stored.
    History {
        /// The first.
        from: u64,
        /// One past the last.
        to: u64,
    },
    /// A message this request alone carried.
    Message(Message),
}

/// A recorded request names history messages its history does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the request names history messages {from}..{to}, but the history holds {held}")]
pub struct NotInHistory {
    /// The first named.
    pub from: u64,
    /// One past the last named.
    pub to: u64,
    /// How many messages the history holds.
    pub held: u64,
}

impl SentMessages {
    /// The record of `sent`, a request's messages, against `history`, the
    /// run's. A request that shares the history's messages (the common
    /// case) is one range, found without reading a message; otherwise each
    /// sent message equal to the history's message of the same id is
    /// named by its place.
    pub fn of(sent: &History, history: &History) -> Vec<Self> {
        if sent.shares_with(history) {
            return vec![Self::History {
                from: 0,
                to: history.len() as u64,
            }];
        }
        let places: HashMap<&str, usize> = history
            .iter()
            .enumerate()
            .map(|(i, message)| (message.id.as_str(), i))
            .collect();
        let mut record: Vec<Self> = Vec::new();
        for message in sent.iter() {
            let stored = places
                .get(message.id.as_str())
                .copied()
                .filter(|&i| history.get(i) == Some(message));
            match (stored, record.last_mut()) {
                (Some(i), Some(Self::History { to, .. })) if *to == i as u64 => *to += 1,
                (Some(i), _) => record.push(Self::History {
                    from: i as u64,
                    to: i as u64 + 1,
                }),
                (None, _) => record.push(Self::Message(message.clone())),
            }
        }
        record
    }

    /// The messages `record` stands for, read from `history`, the run's.
    pub fn resolve(record: &[Self], history: &[Message]) -> Result<Vec<Message>, NotInHistory> {
        let mut messages = Vec::new();
        for part in record {
            match part {
                Self::History { from, to } => {
                    let range = usize::try_from(*from).ok().zip(usize::try_from(*to).ok());
                    let named = range
                        .filter(|(from, to)| from <= to)
                        .and_then(|(from, to)| history.get(from..to));
                    let Some(named) = named else {
                        return Err(NotInHistory {
                            from: *from,
                            to: *to,
                            held: history.len() as u64,
                        });
                    };
                    messages.extend_from_slice(named);
                }
                Self::Message(message) => messages.push(message.clone()),
            }
        }
        Ok(messages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(texts: &[(&str, &str)]) -> History {
        texts
            .iter()
            .map(|(id, text)| Message::user_text(*id, *text))
            .collect::<Vec<_>>()
            .into()
    }

    #[test]
    fn a_request_sharing_the_history_is_one_range() {
        let run = history(&[("a", "1"), ("b", "2")]);
        let record = SentMessages::of(&run.clone(), &run);
        assert_eq!(record, vec![SentMessages::History { from: 0, to: 2 }]);
        assert_eq!(SentMessages::resolve(&record, &run).unwrap(), run.to_vec());
    }

    #[test]
    fn what_only_the_request_carried_is_written_out_and_the_rest_named() {
        let run = history(&[("a", "1"), ("b", "2"), ("c", "3"), ("d", "4")]);
        // A summary in place of the first two, the third changed, the
        // fourth as stored, and a prompt of this call's own.
        let sent = history(&[
            ("s", "summary"),
            ("c", "3, trimmed"),
            ("d", "4"),
            ("x", "retry"),
        ]);
        let record = SentMessages::of(&sent, &run);
        assert_eq!(
            record,
            vec![
                SentMessages::Message(Message::user_text("s", "summary")),
                SentMessages::Message(Message::user_text("c", "3, trimmed")),
                SentMessages::History { from: 3, to: 4 },
                SentMessages::Message(Message::user_text("x", "retry")),
            ]
        );
        assert_eq!(SentMessages::resolve(&record, &run).unwrap(), sent.to_vec());
    }

    #[test]
    fn consecutive_stored_messages_make_one_range() {
        let run = history(&[("a", "1"), ("b", "2"), ("c", "3")]);
        let sent = history(&[("b", "2"), ("c", "3")]);
        let record = SentMessages::of(&sent, &run);
        assert_eq!(record, vec![SentMessages::History { from: 1, to: 3 }]);
    }

    #[test]
    fn a_range_past_the_history_is_refused() {
        let run = history(&[("a", "1")]);
        let record = [SentMessages::History { from: 0, to: 3 }];
        assert_eq!(
            SentMessages::resolve(&record, &run),
            Err(NotInHistory {
                from: 0,
                to: 3,
                held: 1
            })
        );
        let backwards = [SentMessages::History { from: 1, to: 0 }];
        assert!(SentMessages::resolve(&backwards, &run).is_err());
    }
}
