//! Control tools: how a strategy asks the model for a decision it can read.
//!
//! Each decision is offered as a tool (`agent_decide_next`,
//! `agent_observe_decide`, `agent_plan`). Models that answer in text instead
//! are read through a JSON fallback: the first JSON object (or, for plans,
//! array) in the text, fenced or not. Text with no JSON is kept as the
//! decision's message.

use agentloop_types::{ContentBlock, ToolDefinition};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Name of the reason step's control tool.
pub const DECIDE_NEXT: &str = "agent_decide_next";
/// Name of the observe step's control tool.
pub const OBSERVE_DECIDE: &str = "agent_observe_decide";
/// Name of the planning control tool.
pub const PLAN: &str = "agent_plan";
/// Name of the synthetic call a strategy suspends on to ask the user.
pub const REQUEST_INPUT: &str = "agent_request_input";

/// What the reason step decided.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Decision {
    /// The reasoning, shown as `agent_reason`.
    #[serde(alias = "reasoning", alias = "thought")]
    pub message: String,
    /// Stop now.
    pub finish: bool,
    /// The answer, when the model has it.
    pub final_answer: Option<String>,
    /// A question for the user; the run suspends on it.
    pub request_input: Option<String>,
}

/// What the observe step decided.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default)]
pub struct Observation {
    /// The observation, shown as `agent_observe`.
    #[serde(alias = "observation")]
    pub message: String,
    /// Take another step.
    pub should_continue: bool,
    /// The answer, when the model has it.
    pub final_answer: Option<String>,
}

impl Default for Observation {
    fn default() -> Self {
        Self {
            message: String::new(),
            should_continue: true,
            final_answer: None,
        }
    }
}

/// A plan: steps to run in order.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Plan {
    /// The steps.
    pub steps: Vec<String>,
}

/// The reason step's tool.
pub fn decide_next_tool() -> ToolDefinition {
    ToolDefinition {
        name: DECIDE_NEXT.to_owned(),
        description: "Decide the next step of the task.".to_owned(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "message": {"type": "string", "description": "Your reasoning about what to do next."},
                "finish": {"type": "boolean", "description": "True when you can answer now."},
                "final_answer": {"type": "string", "description": "The answer, when finishing."},
                "request_input": {"type": "string", "description": "A question for the user, when you need their input."}
            },
            "required": ["message"]
        }).into(),
    }
}

/// The observe step's tool.
pub fn observe_decide_tool() -> ToolDefinition {
    ToolDefinition {
        name: OBSERVE_DECIDE.to_owned(),
        description: "Say what the last tool result shows and whether to continue.".to_owned(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "message": {"type": "string", "description": "What the result shows."},
                "should_continue": {"type": "boolean", "description": "False when no more steps are needed."},
                "final_answer": {"type": "string", "description": "The answer, when you have it."}
            },
            "required": ["message", "should_continue"]
        }).into(),
    }
}

/// The planning tool.
pub fn plan_tool() -> ToolDefinition {
    ToolDefinition {
        name: PLAN.to_owned(),
        description: "Write the plan: the steps to take, in order.".to_owned(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "steps": {"type": "array", "items": {"type": "string"}, "minItems": 1}
            },
            "required": ["steps"]
        })
        .into(),
    }
}

/// The reason step's decision from a model turn.
pub fn read_decision(content: &[ContentBlock]) -> Decision {
    read(content, DECIDE_NEXT).unwrap_or_else(|text| Decision {
        message: text,
        ..Decision::default()
    })
}

/// The observe step's decision from a model turn.
pub fn read_observation(content: &[ContentBlock]) -> Observation {
    read(content, OBSERVE_DECIDE).unwrap_or_else(|text| Observation {
        message: text,
        ..Observation::default()
    })
}

/// The plan from a model turn: the tool call, a JSON object or array, or
/// else the text's list items (`1. ...`, `- ...`).
pub fn read_plan(content: &[ContentBlock]) -> Plan {
    let plan = match read::<Plan>(content, PLAN) {
        Ok(plan) => plan,
        Err(text) => match json_in(&text, '[', ']')
            .and_then(|v| serde_json::from_value::<Vec<String>>(v).ok())
        {
            Some(steps) => Plan { steps },
            None => Plan {
                steps: list_items(&text),
            },
        },
    };
    Plan {
        steps: plan
            .steps
            .into_iter()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect(),
    }
}

/// The decision from the control tool call or the text's JSON; `Err` with
/// the text when there is neither.
fn read<T: DeserializeOwned>(content: &[ContentBlock], tool: &str) -> Result<T, String> {
    let call = content.iter().find_map(|b| match b {
        ContentBlock::ToolUse(call) if call.name == tool => Some(call.input.clone()),
        _ => None,
    });
    if let Some(parsed) = call.and_then(|input| serde_json::from_value(input.value()).ok()) {
        return Ok(parsed);
    }
    let text: String = content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    json_in(&text, '{', '}')
        .and_then(|v| serde_json::from_value(v).ok())
        .ok_or_else(|| text.trim().to_owned())
}

/// The widest `open`..`close` span of `text` that parses as JSON.
fn json_in(text: &str, open: char, close: char) -> Option<Value> {
    let start = text.find(open)?;
    let end = text.rfind(close)?;
    if end < start {
        return None;
    }
    serde_json::from_str(&text[start..=end]).ok()
}

fn list_items(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            let rest = line
                .strip_prefix("- ")
                .or_else(|| line.strip_prefix("* "))
                .or_else(|| {
                    let digits = line.chars().take_while(char::is_ascii_digit).count();
                    (digits > 0)
                        .then(|| line[digits..].strip_prefix(". "))
                        .flatten()
                        .or_else(|| {
                            (digits > 0)
                                .then(|| line[digits..].strip_prefix(") "))
                                .flatten()
                        })
                })?;
            Some(rest.to_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_types::ToolUseBlock;

    fn text(t: &str) -> Vec<ContentBlock> {
        vec![ContentBlock::text(t)]
    }

    #[test]
    fn decision_from_tool_or_fenced_json_or_text() {
        let call = vec![ContentBlock::ToolUse(ToolUseBlock {
            id: "c".into(),
            name: DECIDE_NEXT.into(),
            input: json!({"message": "look it up"}).into(),
        })];
        assert_eq!(read_decision(&call).message, "look it up");
        let fenced = text(
            "Sure.\n```json\n{\"reasoning\": \"done\", \"finish\": true, \"final_answer\": \"42\"}\n```",
        );
        let d = read_decision(&fenced);
        assert!(d.finish);
        assert_eq!(d.final_answer.as_deref(), Some("42"));
        assert_eq!(
            read_decision(&text("  just thinking ")).message,
            "just thinking"
        );
        assert!(read_observation(&text("no json")).should_continue);
    }

    #[test]
    fn plan_from_array_or_list() {
        assert_eq!(read_plan(&text("[\"a\", \"b\"]")).steps, ["a", "b"]);
        assert_eq!(
            read_plan(&text("Plan:\n1. first\n2) second\n- third")).steps,
            ["first", "second", "third"]
        );
        assert_eq!(read_plan(&text("{\"steps\": [\"x\", \" \"]}")).steps, ["x"]);
    }
}
