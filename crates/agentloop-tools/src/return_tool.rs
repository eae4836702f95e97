//! The return tool: ends the run with `complete` and a value (seed 003).

use std::sync::Arc;

use agentloop_types::{Tool, ToolContext, ToolDefinition, ToolResult, ToolStream, single_result};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::schema::{definition_of, parse, shared_input_schema};

/// Input of the return tool.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ReturnInput {
    /// The final result handed back to whoever started this run.
    #[serde(alias = "value")]
    pub result: String,
}

/// Ends the run: the call's result completes it with the given value.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReturnTool;

impl ReturnTool {
    /// Runs one call.
    pub fn run(&self, input: Value) -> ToolResult {
        match parse::<ReturnInput>(input) {
            Ok(input) => ToolResult::return_value("Result returned.", Value::String(input.result)),
            Err(e) => e,
        }
    }
}

impl Tool for ReturnTool {
    fn name(&self) -> &str {
        "return"
    }

    fn description(&self) -> &str {
        "Finish the task and hand back its final result. Call this once, when the work is done; \
         nothing after it runs."
    }

    fn input_schema(&self) -> Value {
        Value::clone(&shared_input_schema::<ReturnInput>())
    }

    fn definition(&self) -> ToolDefinition {
        definition_of::<ReturnInput>(self)
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
    fn returns_the_value() {
        let r = ReturnTool.run(json!({"result": "42"}));
        assert!(!r.is_error);
        assert_eq!(r.break_loop, Some(BreakLoop::Return { value: json!("42") }));
        let r = ReturnTool.run(json!({"value": "x"}));
        assert_eq!(r.break_loop, Some(BreakLoop::Return { value: json!("x") }));
    }

    #[test]
    fn missing_result_is_an_error_and_does_not_end_the_run() {
        let r = ReturnTool.run(json!({}));
        assert!(r.is_error);
        assert!(r.break_loop.is_none());
        assert!(
            r.content.contains("missing field `result`"),
            "{}",
            r.content
        );
        assert_eq!(ReturnTool.input_schema()["required"], json!(["result"]));
    }
}
