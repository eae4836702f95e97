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

use futures::future::BoxFuture;
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
    /// does; a run that is still going handles it as `strategy` says (see
    /// [`SteerStrategy`]).
    Message {
        /// The message.
        message: Message,
        /// What a run still going does with it; the host's setting (by
        /// default [`SteerStrategy::Enqueue`]) when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        strategy: Option<SteerStrategy>,
    },
    /// Stop the run now: its work so far is kept, the calls it waits on
    /// are answered as cancelled, and it ends `cancelled`. (Braced, like
    /// `Stop`, so that an unknown field is refused as it is elsewhere.)
    Cancel {},
    /// A person declares the work done (the server's Mark Done): the run
    /// ends if it still goes on, and nothing follows it.
    Stop {},
}

/// What a run that is still going does with a message sent to it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SteerStrategy {
    /// Stored on arrival and delivered at the run's next step boundary
    /// (before its next model call), as a user message, in the order
    /// messages arrived; never while a tool runs. A message that arrives
    /// as the run ends is taken by what runs next.
    #[default]
    Enqueue,
    /// The step in flight is cancelled (every call it started is
    /// answered) and the work goes on with the message.
    Interrupt,
    /// The run is ended and started again from its prompt, with the
    /// message after it.
    Rollback,
    /// Refused: the run goes on as it was.
    Reject,
}

impl SteerStrategy {
    /// The strategy's name, as it reads on the wire and in settings.
    pub fn as_str(self) -> &'static str {
        match self {
            SteerStrategy::Enqueue => "enqueue",
            SteerStrategy::Interrupt => "interrupt",
            SteerStrategy::Rollback => "rollback",
            SteerStrategy::Reject => "reject",
        }
    }

    /// The strategy named `name`, if one is.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "enqueue" => Some(SteerStrategy::Enqueue),
            "interrupt" => Some(SteerStrategy::Interrupt),
            "rollback" => Some(SteerStrategy::Rollback),
            "reject" => Some(SteerStrategy::Reject),
            _ => None,
        }
    }
}

impl RunInput {
    /// A message to the run, handled as the host's setting says when the
    /// run is still going.
    pub fn message(message: Message) -> Self {
        RunInput::Message {
            message,
            strategy: None,
        }
    }

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

/// Where a run finds the messages sent to it while it goes on (those
/// [`SteerStrategy::Enqueue`] stored). The driver asks at each step
/// boundary — before each model call, never while a tool runs — and
/// delivers those its history does not hold yet as user messages, under
/// their own ids; the host marks them delivered once the state holding
/// them is stored, so a message is neither lost nor delivered twice when
/// the process stops in between. Implementations return a boxed future
/// (`Box::pin(async move { ... })`).
pub trait Inbox: Send + Sync {
    /// The messages waiting, oldest first. On an error the step goes on
    /// without them (they are asked for again at the next boundary).
    fn queued(&self) -> BoxFuture<'_, Result<Vec<Message>, String>>;
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
            RunInput::message(Message::user_text("m2", "also this")),
            RunInput::Message {
                message: Message::user_text("m3", "stop, do this"),
                strategy: Some(SteerStrategy::Interrupt),
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
        let unknown = r#"{"type":"message","message":{"id":"m","role":"user","content":[]},"strategy":"later"}"#;
        assert!(serde_json::from_str::<RunInput>(unknown).is_err());
    }

    #[test]
    fn strategies_read_as_they_are_named() {
        for strategy in [
            SteerStrategy::Enqueue,
            SteerStrategy::Interrupt,
            SteerStrategy::Rollback,
            SteerStrategy::Reject,
        ] {
            let text = serde_json::to_string(&strategy).unwrap();
            assert_eq!(text, format!("\"{}\"", strategy.as_str()));
            assert_eq!(SteerStrategy::parse(strategy.as_str()), Some(strategy));
        }
        assert_eq!(SteerStrategy::default(), SteerStrategy::Enqueue);
        assert_eq!(SteerStrategy::parse("later"), None);
    }
}
