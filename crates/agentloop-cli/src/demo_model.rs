//! The demo's model: scripted conversations played without state. Each
//! request gets the turn its history has reached — the number of model
//! turns since the last prompt — so one provider answers every message of
//! a chat, continued chats and any number of concurrent runs alike. Server
//! agent runs get the script of their agent (named by the system prompt
//! the server gives them); everything else gets the chat script.

use std::collections::HashSet;

use agentloop_engine::scripted::{ScriptStep, ScriptedProvider, ScriptedTurn};
use agentloop_server::runner::agent_of_system_prompt;
use agentloop_storage::model::AgentType;
use agentloop_types::{Message, ModelProvider, ModelRequest, ModelStream, Role};
use serde::Deserialize;

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

    /// The script a request belongs to.
    fn script(&self, request: &ModelRequest) -> &[ScriptedTurn] {
        let agent = request
            .options
            .system_prompt
            .as_deref()
            .and_then(agent_of_system_prompt);
        match agent {
            Some(AgentType::Planification) => &self.agents.planification,
            Some(AgentType::Implementation) => &self.agents.implementation,
            Some(AgentType::Review) => &self.agents.review,
            None => &self.chat,
        }
    }

    /// The turn to play for `messages`: the one after the model turns
    /// since the last prompt (the last turn again once the script is
    /// played, which calls no tool and so ends the run), with call ids no
    /// earlier message uses.
    pub fn turn_for(script: &[ScriptedTurn], messages: &[Message]) -> ScriptedTurn {
        let since_prompt = messages
            .iter()
            .rposition(is_prompt)
            .map_or(messages, |i| &messages[i + 1..]);
        let played = since_prompt
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count();
        let mut turn = script
            .get(played)
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

impl ModelProvider for DemoModel {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        let turn = Self::turn_for(self.script(&request), &request.messages);
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
    fn empty_and_malformed_scripts_are_refused() {
        let turn = r#"{"steps": []}"#;
        let agents =
            format!(r#"{{"planification": [{turn}], "implementation": [{turn}], "review": []}}"#);
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
