//! What can be submitted to a run from outside: the counterpart of
//! [`EventKind`](crate::EventKind). A run's output is one typed stream of
//! events; its input is one typed value, [`RunInput`], whatever the host
//! (the CLI, the HTTP API, MCP, A2A, AG-UI, a durable engine) it came
//! through. A host turns its own wire shape into a `RunInput` and submits
//! it; what the run does with it is decided in one place (the runtime),
//! not once per host.
//!
//! Inputs are serde-tagged by `type`, like events:
//!
//! ```
//! use agentloop_types::{Decision, RunInput};
//!
//! let input: RunInput = serde_json::from_str(
//!     r#"{"type":"decide","decisions":{"call_1":{"decision":"approve"}}}"#,
//! ).unwrap();
//! assert_eq!(input.kind(), "decide");
//! assert!(matches!(input, RunInput::Decide { .. }));
//! ```

use serde::{Deserialize, Serialize};

use crate::approval::Decisions;
use crate::message::Message;
use crate::tool::ToolDefinition;

/// One thing submitted to a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum RunInput {
    /// Start a run over the chat's history, after `message` when one is
    /// given; without one, the chat's history is continued as it stands.
    Start {
        /// The agent to run, for a host that offers several (the server's
        /// agent types); the host's default when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
        /// The person's message that starts the run.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<Message>,
        /// Tools the client runs itself (an AG-UI front end's): offered to
        /// the model beside the host's, their calls wait for the client's
        /// answer as a person's decision.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        client_tools: Vec<ToolDefinition>,
    },
    /// A person's decisions for the calls the run waits on, by call id:
    /// approvals, rejections and answers to its questions. The run resumes
    /// once every call it waits on is decided.
    Decide {
        /// The decisions, by tool-call id.
        decisions: Decisions,
    },
    /// A message to the run from the person driving it. A run that has
    /// ended continues with it, as [`RunInput::Start`] with a message
    /// does; a run that is still going refuses it.
    Message {
        /// The message.
        message: Message,
    },
    /// Stop the run now: its work so far is kept, the calls it waits on
    /// are answered as cancelled, and it ends `cancelled`. (Braced, like
    /// `Stop`, so that an unknown field is refused as it is elsewhere.)
    Cancel {},
    /// A person declares the work done (the server's Mark Done): the run
    /// ends if it still goes on, and nothing follows it.
    Stop {},
}

impl RunInput {
    /// A start of the host's default agent, after `message` when one is
    /// given, offering no client tools.
    pub fn start(message: impl Into<Option<Message>>) -> Self {
        RunInput::Start {
            agent: None,
            message: message.into(),
            client_tools: Vec::new(),
        }
    }

    /// The input's `type` tag, as it reads on the wire and in logs.
    pub fn kind(&self) -> &'static str {
        match self {
            RunInput::Start { .. } => "start",
            RunInput::Decide { .. } => "decide",
            RunInput::Message { .. } => "message",
            RunInput::Cancel {} => "cancel",
            RunInput::Stop {} => "stop",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::Decision;

    #[test]
    fn every_input_round_trips_under_its_tag() {
        let inputs = [
            RunInput::start(None),
            RunInput::start(Message::user_text("m1", "hello")),
            RunInput::Start {
                agent: Some("review".to_owned()),
                message: None,
                client_tools: vec![ToolDefinition {
                    name: "pick_color".to_owned(),
                    description: "Asks the person for a colour.".to_owned(),
                    input_schema: std::sync::Arc::new(serde_json::json!({"type": "object"})),
                }],
            },
            RunInput::Decide {
                decisions: [(
                    "call_1".to_owned(),
                    Decision::Reject {
                        reason: "no".to_owned(),
                    },
                )]
                .into(),
            },
            RunInput::Message {
                message: Message::user_text("m2", "also this"),
            },
            RunInput::Cancel {},
            RunInput::Stop {},
        ];
        for input in inputs {
            let text = serde_json::to_string(&input).unwrap();
            let value: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(value["type"], input.kind(), "{text}");
            assert_eq!(serde_json::from_str::<RunInput>(&text).unwrap(), input);
        }
    }

    #[test]
    fn an_unknown_type_or_field_is_refused() {
        assert!(serde_json::from_str::<RunInput>(r#"{"type":"rewind"}"#).is_err());
        assert!(serde_json::from_str::<RunInput>(r#"{"type":"cancel","why":"x"}"#).is_err());
        assert!(serde_json::from_str::<RunInput>(r#"{"type":"decide"}"#).is_err());
    }
}
