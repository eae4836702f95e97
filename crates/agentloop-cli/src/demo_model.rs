//! The demo's model: scripted conversations played without state. Each
//! request gets the turn its history has reached — the number of model
//! turns since the last prompt — so one provider answers every message of
//! a chat, continued chats and any number of concurrent runs alike. Server
//! agent runs get the script of their agent (named by the system prompt
//! the server gives them), and its `after_error` turn once a tool call
//! failed (a rejected write ends the implementation's run saying so);
//! everything else gets the chat script.

use std::collections::HashSet;

use agentloop_engine::scripted::{ScriptStep, ScriptedProvider, ScriptedTurn};
#[cfg(feature = "server")]
use agentloop_server::runner::agent_of_system_prompt;
use agentloop_storage::model::AgentType;
use agentloop_types::{Message, ModelProvider, ModelRequest, ModelStream, Role};
use serde::Deserialize;

/// Without the server no run is one of a task's agents: every run is a
/// chat.
#[cfg(not(feature = "server"))]
fn agent_of_system_prompt(_: &str) -> Option<AgentType> {
    None
}

/// The scripts of the server's agents.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentScripts {
    /// Planification: asks the person a question, then answers.
    pub planification: Vec<ScriptedTurn>,
    /// Implementation: looks at the folder, writes a file, answers.
    pub implementation: Vec<ScriptedTurn>,
    /// Review: reads the file, ends the chain, answers.
    pub review: Vec<ScriptedTurn>,
    /// What each agent says when its last tool call failed (a write a
    /// person rejected, a question declined, a file that is not there):
    /// one turn, calling no tool, that ends its run.
    pub after_error: AfterError,
}

/// The turn each agent plays after a failed tool call.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AfterError {
    /// Planification, after its question was declined.
    pub planification: ScriptedTurn,
    /// Implementation, after its write was rejected.
    pub implementation: ScriptedTurn,
    /// Review, after the file it reads was not there.
    pub review: ScriptedTurn,
}

/// Why a demo script cannot be played.
#[derive(Debug, thiserror::Error)]
pub enum DemoScriptError {
    /// The text is not the expected JSON.
    #[error("the demo script {origin} is not valid: {source}")]
    Json {
        /// Where the script comes from.
        origin: &'static str,
        /// What is wrong.
        source: serde_json::Error,
    },
    /// A script has no turns.
    #[error("the demo script {origin} has no turns for {name}")]
    Empty {
        /// Where the script comes from.
        origin: &'static str,
        /// Which conversation is empty.
        name: &'static str,
    },
}

/// The demo's model (see the module docs).
#[derive(Debug, Clone)]
pub struct DemoModel {
    chat: Vec<ScriptedTurn>,
    agents: AgentScripts,
}

/// The prefix of the tool-call ids the demo makes.
const CALL_ID_PREFIX: &str = "toolu_demo_";

impl DemoModel {
    /// Parses the chat script (a JSON array of turns) and the agents'
    /// scripts (an object of three such arrays).
    pub fn from_json(
        (chat_origin, chat): (&'static str, &str),
        (agents_origin, agents): (&'static str, &str),
    ) -> Result<Self, DemoScriptError> {
        let chat: Vec<ScriptedTurn> =
            serde_json::from_str(chat).map_err(|source| DemoScriptError::Json {
                origin: chat_origin,
                source,
            })?;
        let agents: AgentScripts =
            serde_json::from_str(agents).map_err(|source| DemoScriptError::Json {
                origin: agents_origin,
                source,
            })?;
        for (origin, name, turns) in [
            (chat_origin, "the chat", &chat),
            (agents_origin, "planification", &agents.planification),
            (agents_origin, "implementation", &agents.implementation),
            (agents_origin, "review", &agents.review),
        ] {
            if turns.is_empty() {
                return Err(DemoScriptError::Empty { origin, name });
            }
        }
        Ok(Self { chat, agents })
    }

    /// The script a request belongs to, and the turn its agent plays
    /// after a failed tool call (none for the chat).
    fn script(&self, request: &ModelRequest) -> (&[ScriptedTurn], Option<&ScriptedTurn>) {
        let agent = request
            .options
            .system_prompt
            .as_deref()
            .and_then(agent_of_system_prompt);
        let (agents, after) = (&self.agents, &self.agents.after_error);
        match agent {
            Some(AgentType::Planification) => (&agents.planification, Some(&after.planification)),
            Some(AgentType::Implementation) => {
                (&agents.implementation, Some(&after.implementation))
            }
            Some(AgentType::Review) => (&agents.review, Some(&after.review)),
            None => (&self.chat, None),
        }
    }

    /// The turn to play for `messages`: the one after the model turns
    /// since the last prompt (the last turn again once the script is
    /// played, which calls no tool and so ends the run), with call ids no
    /// earlier message uses.
    pub fn turn_for(script: &[ScriptedTurn], messages: &[Message]) -> ScriptedTurn {
        let mut turn = script
            .get(turns_since_prompt(messages))
            .or_else(|| script.last())
            .cloned()
            .unwrap_or_default();
        // No model is called: whatever a script says, nothing is billed.
        turn.usage.cost = 0.0;
        let used: HashSet<&str> = messages
            .iter()
            .flat_map(Message::tool_uses)
            .map(|call| call.id.as_str())
            .collect();
        let mut next = used.len() + 1;
        for step in &mut turn.steps {
            if let ScriptStep::ToolCall { id, .. } = step {
                while used.contains(format!("{CALL_ID_PREFIX}{next}").as_str()) {
                    next += 1;
                }
                *id = format!("{CALL_ID_PREFIX}{next}");
                next += 1;
            }
        }
        turn
    }
}

/// Whether a message is a prompt: a user message that answers no tool call.
fn is_prompt(message: &Message) -> bool {
    message.role == Role::User && message.tool_results().next().is_none()
}

/// How many model turns `messages` hold since their last prompt: the
/// index of the turn a script plays next.
pub fn turns_since_prompt(messages: &[Message]) -> usize {
    let since_prompt = messages
        .iter()
        .rposition(is_prompt)
        .map_or(messages, |i| &messages[i + 1..]);
    since_prompt
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count()
}

/// Whether the last tool step of `messages` failed: a tool result that is
/// an error (a call a person rejected, a question declined, a tool that
/// failed) answers the model's last turn.
fn last_call_failed(messages: &[Message]) -> bool {
    messages
        .last()
        .is_some_and(|last| last.role == Role::User && last.tool_results().any(|r| r.is_error))
}

impl ModelProvider for DemoModel {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        let (script, after_error) = self.script(&request);
        let turn = match after_error {
            // The demo reacts to a failed call rather than play on as if
            // it had worked.
            Some(turn) if last_call_failed(&request.messages) => turn.clone(),
            _ => Self::turn_for(script, &request.messages),
        };
        ScriptedProvider::unrecorded([turn]).stream(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_types::{ContentBlock, ToolResultBlock, ToolUseBlock};
    use serde_json::json;

    fn script() -> Vec<ScriptedTurn> {
        vec![
            ScriptedTurn::new().text("Looking.").tool_call(
                "x",
                "fs",
                json!({"command": "view", "path": "/"}),
            ),
            ScriptedTurn::new().text("Done."),
        ]
    }

    fn call(id: &str) -> Message {
        Message::new(
            format!("a-{id}"),
            Role::Assistant,
            vec![ContentBlock::ToolUse(ToolUseBlock {
                id: id.to_owned(),
                name: "fs".to_owned(),
                input: json!({}).into(),
            })],
        )
    }

    fn result(id: &str) -> Message {
        Message::new(
            format!("r-{id}"),
            Role::User,
            vec![ContentBlock::ToolResult(ToolResultBlock::ok(id, "ok"))],
        )
    }

    fn texts(turn: &ScriptedTurn) -> Vec<String> {
        turn.steps
            .iter()
            .filter_map(|s| match s {
                ScriptStep::Text { chunks } => Some(chunks.concat()),
                _ => None,
            })
            .collect()
    }

    fn ids(turn: &ScriptedTurn) -> Vec<String> {
        turn.steps
            .iter()
            .filter_map(|s| match s {
                ScriptStep::ToolCall { id, .. } => Some(id.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_turn_follows_the_history_and_starts_again_at_each_prompt() {
        let script = script();
        let mut history = vec![Message::user_text("u1", "hi")];
        let first = DemoModel::turn_for(&script, &history);
        assert_eq!(texts(&first), ["Looking."]);
        assert_eq!(ids(&first), ["toolu_demo_1"]);
        history.extend([call("toolu_demo_1"), result("toolu_demo_1")]);
        assert_eq!(texts(&DemoModel::turn_for(&script, &history)), ["Done."]);
        history.push(Message::new("a2", Role::Assistant, Vec::new()));
        // A second prompt plays the script again, with a new call id.
        history.push(Message::user_text("u2", "again"));
        let again = DemoModel::turn_for(&script, &history);
        assert_eq!(texts(&again), ["Looking."]);
        assert_eq!(ids(&again), ["toolu_demo_2"]);
    }

    #[test]
    fn call_ids_skip_every_id_the_history_holds() {
        let history = vec![
            call("toolu_demo_2"),
            result("toolu_demo_2"),
            Message::user_text("u1", "hi"),
        ];
        assert_eq!(
            ids(&DemoModel::turn_for(&script(), &history)),
            ["toolu_demo_3"]
        );
    }

    #[test]
    fn a_played_script_ends_with_its_last_turn() {
        let history = vec![
            Message::user_text("u1", "hi"),
            call("a"),
            result("a"),
            call("b"),
            result("b"),
        ];
        let turn = DemoModel::turn_for(&script(), &history);
        assert_eq!(texts(&turn), ["Done."]);
        assert!(ids(&turn).is_empty());
    }

    #[test]
    fn only_a_failed_result_of_the_last_turn_counts_as_a_failed_call() {
        let failed = Message::new(
            "r-x",
            Role::User,
            vec![ContentBlock::ToolResult(ToolResultBlock::error(
                "x",
                "The user rejected this call.",
            ))],
        );
        assert!(last_call_failed(&[call("x"), failed.clone()]));
        assert!(!last_call_failed(&[call("x"), result("x")]));
        // A failure an earlier turn already answered is not the last step's.
        assert!(!last_call_failed(&[
            call("x"),
            failed,
            call("y"),
            result("y")
        ]));
        assert!(!last_call_failed(&[Message::user_text("u1", "hi")]));
    }

    #[test]
    fn empty_and_malformed_scripts_are_refused() {
        let turn = r#"{"steps": []}"#;
        let agents = format!(
            r#"{{"planification": [{turn}], "implementation": [{turn}], "review": [],
                    "after_error": {{"planification": {turn}, "implementation": {turn},
                                     "review": {turn}}}}}"#
        );
        let chat = format!("[{turn}]");
        let error = DemoModel::from_json(("c.json", &chat), ("a.json", &agents)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the demo script a.json has no turns for review"
        );
        let error = DemoModel::from_json(("c.json", "{}"), ("a.json", &agents)).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("the demo script c.json is not valid")
        );
    }
}
