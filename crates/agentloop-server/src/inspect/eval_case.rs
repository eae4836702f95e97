//! A step of a run saved as an eval case: a dataset of one case in the
//! JSON form `agentloop eval` reads (`{"name", "cases": [...]}`), whose
//! conversation is the step's history as text — the run's system prompt,
//! then each message's text (tool calls, their results and thinking carry
//! no text and are left out) up to the last message of a person's, which
//! a case must end with. Its expectations are the default (the run
//! completes) for the person to sharpen; secrets are redacted.

use agentloop_types::{Message, Role};
use schemars::JsonSchema;
use serde::Serialize;

use super::redact::redact_text;

/// A dataset of `agentloop eval` holding one case.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct EvalDataset {
    /// The dataset's name.
    pub name: String,
    /// Its one case.
    pub cases: Vec<EvalCase>,
}

/// One case of `agentloop eval`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct EvalCase {
    /// Its name: the run and the step.
    pub name: String,
    /// The conversation to continue, ending with a person's message.
    pub messages: Vec<EvalMessage>,
    /// Labels: where it came from.
    pub tags: Vec<String>,
    /// What the run must show: the default, that it completes.
    pub expect: EvalExpect,
}

/// A message of a case.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct EvalMessage {
    /// `system`, `user` or `assistant`.
    pub role: &'static str,
    /// Its text.
    pub content: String,
}

/// A case's expectations, left at their defaults.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct EvalExpect {}

/// Why a step makes no case.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the step's history holds no message of a person's to end an eval case with")]
pub struct NoPersonsMessage;

/// The case of run `run_id` at step `seq`, whose messages are `messages`
/// and whose requests carry `system_prompt`.
pub fn case_at(
    run_id: &str,
    seq: u64,
    messages: &[Message],
    system_prompt: Option<&str>,
) -> Result<EvalDataset, NoPersonsMessage> {
    let mut said: Vec<EvalMessage> = system_prompt
        .filter(|prompt| !prompt.trim().is_empty())
        .map(|prompt| EvalMessage {
            role: "system",
            content: redact_text(prompt),
        })
        .into_iter()
        .collect();
    for message in messages {
        let text = message.text();
        if text.trim().is_empty() {
            continue;
        }
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::System => "system",
        };
        said.push(EvalMessage {
            role,
            content: redact_text(&text),
        });
    }
    let last_persons = said
        .iter()
        .rposition(|m| m.role == "user")
        .ok_or(NoPersonsMessage)?;
    said.truncate(last_persons + 1);
    let name = format!("run-{run_id}-step-{seq}");
    Ok(EvalDataset {
        name: format!("run-{run_id}"),
        cases: vec![EvalCase {
            name,
            messages: said,
            tags: vec!["from-run".to_owned(), format!("run:{run_id}")],
            expect: EvalExpect::default(),
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_case_ends_with_the_last_persons_message() {
        let messages = [
            Message::user_text("1", "List the files"),
            Message::assistant_text("2", "Here: a.txt"),
            Message::user_text("3", "Now read a.txt, key sk-abcdefghijklmnopqrstuv"),
            Message::assistant_text("4", "It says hi"),
        ];
        let dataset = case_at("r1", 7, &messages, Some("Be brief.")).unwrap();
        let case = &dataset.cases[0];
        assert_eq!(case.name, "run-r1-step-7");
        let roles: Vec<_> = case.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, ["system", "user", "assistant", "user"]);
        assert!(
            !case.messages[3].content.contains("sk-"),
            "{:?}",
            case.messages[3]
        );
        assert_eq!(
            case_at("r1", 1, &messages[1..2], None).unwrap_err(),
            NoPersonsMessage
        );
    }
}
