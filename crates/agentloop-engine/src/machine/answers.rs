//! The answers the core gives on a tool's behalf, and the small pure
//! helpers its decisions share: which calls a turn made, which limit is
//! reached, which thinking is sent.

use agentloop_types::{
    ContentBlock, LimitKind, Message, RenderingBlockGroup, Role, TokenTotals, ToolOptionKind,
    ToolOptionSpec, ToolResult, ToolResultBlock, ToolResultRenderBlock, ToolResultStatus,
    ToolUseBlock, UsageLimits,
};
use serde_json::{Map, Value};

/// A call the driver reports no result for.
pub(crate) const NO_RESULT: &str = "The tool ended without a result.";
/// A pending call when the run is cancelled.
pub(crate) const CANCELLED_RUNNING: &str = "Cancelled while running.";
/// A call waiting for a person when the run is cancelled.
pub(crate) const CANCELLED_WAITING: &str = "Cancelled while waiting for the user.";
/// A call of a partial turn when the run is cancelled.
pub(crate) const CANCELLED_NOT_RUN: &str = "Cancelled before the tool ran.";
/// The answer to a call of a model turn a person's message interrupted.
pub(crate) const INTERRUPTED_NOT_RUN: &str =
    "Not run: a person's message interrupted the turn before the tool ran.";
/// The answer to a call still running when a person's message
/// interrupted its step.
pub(crate) const INTERRUPTED_RUNNING: &str =
    "Stopped: a person's message interrupted this call before it finished.";

/// How a finished call ended, as the driver saw it. The core turns each
/// into the result the model reads.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutcome {
    /// The tool returned this result.
    Finished(ToolResult),
    /// The call ran past its time limit and was stopped.
    TimedOut {
        /// The limit, in milliseconds.
        after_ms: u64,
    },
    /// The tool panicked.
    Panicked {
        /// The panic's message.
        message: String,
    },
    /// The tool's stream ended without a result.
    NoResult,
}

impl ToolOutcome {
    /// Whether the model reads it as an error.
    pub fn is_error(&self) -> bool {
        match self {
            ToolOutcome::Finished(result) => result.is_error,
            ToolOutcome::TimedOut { .. } | ToolOutcome::Panicked { .. } | ToolOutcome::NoResult => {
                true
            }
        }
    }

    /// The result committed for a call of tool `name`.
    pub(crate) fn into_result(self, name: &str) -> ToolResult {
        match self {
            ToolOutcome::Finished(result) => result,
            ToolOutcome::TimedOut { after_ms } => {
                ToolResult::error(format!("Tool {name} timed out after {after_ms} ms."))
            }
            ToolOutcome::Panicked { message } => {
                ToolResult::error(format!("Tool {name} failed unexpectedly: {message}"))
            }
            ToolOutcome::NoResult => {
                ToolResult::error(format!("Tool {name} ended without a result."))
            }
        }
    }
}

/// The answer to a call that must not run: an unknown tool or arguments
/// that are not a JSON object. `None`: the call runs.
pub(crate) fn refusal<'a>(
    call: &ToolUseBlock,
    offered: impl Iterator<Item = &'a str> + Clone,
) -> Option<ToolResult> {
    if !offered.clone().any(|name| name == call.name) {
        let offered: Vec<&str> = offered.collect();
        let available = if offered.is_empty() {
            "none".to_owned()
        } else {
            offered.join(", ")
        };
        return Some(ToolResult::error(format!(
            "Unknown tool: {}. Available tools: {available}.",
            call.name
        )));
    }
    if !call.input.is_object() {
        return Some(ToolResult::error(invalid_input_message(
            &call.name,
            &call.input.value(),
        )));
    }
    None
}

/// The answer to a call that may have started in a process that stopped
/// before its result was committed.
pub(crate) fn interrupted(name: &str) -> ToolResult {
    ToolResult::error(format!(
        "The run was interrupted while tool `{name}` was running: it started, but its result \
         was never committed, so it may or may not have taken effect. Check before calling it again."
    ))
}

fn invalid_input_message(name: &str, input: &Value) -> String {
    match input {
        Value::String(raw) => {
            let reason = serde_json::from_str::<Value>(raw)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_else(|| "not a JSON object".to_owned());
            format!(
                "Invalid arguments for {name}: the arguments were not valid JSON ({reason}). \
                 The output may have been cut off; call the tool again with complete arguments."
            )
        }
        other => format!(
            "Invalid arguments for {name}: expected a JSON object, got {}.",
            json_type(other)
        ),
    }
}

/// The option values a call of tool `name` runs with: the declared
/// defaults overlaid with the configured values, each checked against its
/// declared kind. `Err`: what the model reads instead.
pub(crate) fn resolve_options(
    name: &str,
    specs: &[ToolOptionSpec],
    configured: Option<&Map<String, Value>>,
) -> Result<Map<String, Value>, String> {
    let mut options = Map::new();
    for spec in specs {
        options.insert(spec.key.clone(), spec.default.clone());
    }
    for (key, value) in configured.into_iter().flatten() {
        let Some(spec) = specs.iter().find(|s| &s.key == key) else {
            return Err(format!("Option {key} is not an option of tool {name}."));
        };
        let fits = match spec.kind {
            ToolOptionKind::Boolean => value.is_boolean(),
            ToolOptionKind::Longtext | ToolOptionKind::Model => value.is_string(),
        };
        if !fits {
            return Err(format!(
                "Option {key} of tool {name} must be a {:?} value, got {}.",
                spec.kind,
                json_type(value)
            ));
        }
        options.insert(key.clone(), value.clone());
    }
    Ok(options)
}

/// The name of a JSON value's type, for messages.
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The block committed to the history for `result` of call `call_id`.
pub(crate) fn committed_block(call_id: &str, result: ToolResult) -> ToolResultBlock {
    ToolResultBlock {
        tool_use_id: call_id.to_owned(),
        content: result.content,
        is_error: result.is_error,
        rendering_groups: result.rendering_groups,
    }
}

/// The render block of a call still running, showing `rendering_groups`.
pub(crate) fn running_block(
    call: &ToolUseBlock,
    rendering_groups: Vec<RenderingBlockGroup>,
) -> ToolResultRenderBlock {
    ToolResultRenderBlock {
        name: call.name.clone(),
        tool_use_id: call.id.clone(),
        content: String::new(),
        is_error: false,
        status: ToolResultStatus::Running,
        rendered_content: None,
        icon: None,
        rendering_groups,
    }
}

/// The tool calls of an assistant turn, in call order.
pub(crate) fn tool_calls(content: &[ContentBlock]) -> Vec<ToolUseBlock> {
    content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::ToolUse(call) => Some(call.clone()),
            _ => None,
        })
        .collect()
}

/// The text of an assistant turn.
pub(crate) fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The usage limit reached after `requests` model calls spending `totals`,
/// if any; checked before each model call.
pub(crate) fn exceeded_limit(
    limits: &UsageLimits,
    requests: u32,
    totals: &TokenTotals,
) -> Option<LimitKind> {
    if limits.max_requests.is_some_and(|max| requests >= max) {
        return Some(LimitKind::Requests);
    }
    if limits
        .max_total_tokens
        .is_some_and(|max| totals.total_tokens() >= max)
    {
        return Some(LimitKind::TotalTokens);
    }
    if limits.max_cost.is_some_and(|max| totals.cost >= max) {
        return Some(LimitKind::Cost);
    }
    None
}

/// Leaves thinking out of all but the last `keep` assistant messages.
pub(crate) fn trim_thinking(messages: &[Message], keep: Option<u32>) -> Vec<Message> {
    let Some(keep) = keep else {
        return messages.to_vec();
    };
    let assistant_turns = messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count();
    let trim_before = assistant_turns.saturating_sub(keep as usize);
    let mut seen = 0;
    messages
        .iter()
        .map(|message| {
            if message.role != Role::Assistant {
                return message.clone();
            }
            seen += 1;
            if seen > trim_before {
                return message.clone();
            }
            let content = message
                .content
                .iter()
                .filter(|b| {
                    !matches!(
                        b,
                        ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. }
                    )
                })
                .cloned()
                .collect();
            Message::new(message.id.clone(), Role::Assistant, content)
        })
        .collect()
}
