//! The ask_user tool: suspends the run with a question (seed 000's
//! suspension). The run is resumed by adding the person's answer as the
//! call's tool result.

use std::sync::Arc;

use agentloop_types::{Tool, ToolContext, ToolDefinition, ToolResult, ToolStream, single_result};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::schema::{definition_of, parse, shared_input_schema};

/// Input of the ask_user tool.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct AskUserInput {
    /// The question for the user.
    pub question: String,
    /// Suggested answers, if the question has a few likely ones.
    #[serde(default)]
    pub choices: Vec<String>,
}

/// Asks the user something and waits for the answer.
#[derive(Debug, Default, Clone, Copy)]
pub struct AskUserTool;

impl AskUserTool {
    /// Runs one call.
    pub fn run(&self, input: Value) -> ToolResult {
        let input = match parse::<AskUserInput>(input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        if input.question.trim().is_empty() {
            return ToolResult::error("Invalid input: `question` must not be empty");
        }
        let mut text = input.question;
        if !input.choices.is_empty() {
            text.push_str("\nChoices:");
            for choice in &input.choices {
                text.push_str("\n- ");
                text.push_str(choice);
            }
        }
        ToolResult::suspend(text)
    }
}

impl Tool for AskUserTool {
    fn name(&self) -> &str {
        "ask_user"
    }

    fn description(&self) -> &str {
        "Ask the user a question and wait for the answer, which comes back as this tool's result. \
         Use it when you cannot go on without information or a decision only the user has."
    }

    fn input_schema(&self) -> Value {
        Value::clone(&shared_input_schema::<AskUserInput>())
    }

    fn definition(&self) -> ToolDefinition {
        definition_of::<AskUserInput>(self)
    }

    fn runs_alone(&self) -> bool {
        true
    }

    fn execute(self: Arc<Self>, input: Value, _context: ToolContext) -> ToolStream {
        single_result(async move { self.run(input) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_types::BreakLoop;
    use serde_json::json;

    #[test]
    fn suspends_with_the_question() {
        let r = AskUserTool.run(json!({"question": "Which colour?", "choices": ["red", "blue"]}));
        assert!(!r.is_error);
        assert_eq!(r.break_loop, Some(BreakLoop::Suspend { child: None }));
        assert_eq!(r.content, "Which colour?\nChoices:\n- red\n- blue");
        assert_eq!(AskUserTool.run(json!({"question": "Why?"})).content, "Why?");
        assert!(AskUserTool.runs_alone());
    }

    #[test]
    fn bad_input_is_an_error_and_does_not_suspend() {
        for input in [json!({}), json!({"question": "  "}), json!({"question": 3})] {
            let r = AskUserTool.run(input);
            assert!(r.is_error);
            assert!(r.break_loop.is_none());
        }
    }
}
