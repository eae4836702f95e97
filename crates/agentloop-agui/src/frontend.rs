//! Front-end tools: tools an AG-UI client declares in its run input and
//! runs itself.
//!
//! The model is offered each one like any tool. A call of one suspends the
//! run (as `ask_user` does) and the call's arguments go to the client as
//! `TOOL_CALL_*` events; the client runs the tool and starts the next run
//! with a `tool` message for the call, whose content becomes the call's
//! result ([`RunAgentInput::tool_answers`](crate::RunAgentInput::tool_answers)).

use std::sync::Arc;

use agentloop_types::{Tool, ToolContext, ToolDefinition, ToolResult, ToolStream, single_result};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// At most this many front-end tools per run.
pub const MAX_FRONTEND_TOOLS: usize = 64;

/// A tool the client runs, as its run input declares it (AG-UI's `Tool`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrontendToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// A JSON Schema of its arguments (an object schema); absent, it takes
    /// no arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
}

impl FrontendToolSpec {
    /// The tool as a run's input names it (`RunInput::Start`'s client
    /// tools); a tool without parameters takes an empty object.
    pub fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: self.name.clone(),
            description: self.description.clone(),
            input_schema: Arc::new(
                self.parameters
                    .clone()
                    .unwrap_or_else(|| json!({ "type": "object", "properties": {} })),
            ),
        }
    }

    /// The client tool a run's input names.
    pub fn of_definition(tool: &ToolDefinition) -> Self {
        Self {
            name: tool.name.clone(),
            description: tool.description.clone(),
            parameters: Some(Value::clone(&tool.input_schema)),
        }
    }
}

/// Why a run input's front-end tools cannot be offered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrontendToolError {
    /// A name providers refuse.
    #[error("front-end tool name {0:?}: a name is 1 to 64 letters, digits, '_' or '-'")]
    BadName(String),
    /// Two tools of one name.
    #[error("front-end tool {0:?} is declared twice")]
    Duplicate(String),
    /// The name of a tool the agent already has.
    #[error("front-end tool {0:?} has the name of one of the agent's own tools")]
    Taken(String),
    /// Parameters that are no object schema.
    #[error("front-end tool {0:?}: parameters must be a JSON Schema of type \"object\"")]
    BadParameters(String),
    /// More tools than a run takes.
    #[error("at most {MAX_FRONTEND_TOOLS} front-end tools per run")]
    TooMany,
}

/// Checks `specs` against each other and against the names of the agent's
/// own tools (`taken`).
pub fn validate_frontend_tools(
    specs: &[FrontendToolSpec],
    taken: &[&str],
) -> Result<(), FrontendToolError> {
    if specs.len() > MAX_FRONTEND_TOOLS {
        return Err(FrontendToolError::TooMany);
    }
    for (i, spec) in specs.iter().enumerate() {
        let name = &spec.name;
        let well_formed = (1..=64).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !well_formed {
            return Err(FrontendToolError::BadName(name.clone()));
        }
        if specs[..i].iter().any(|other| other.name == *name) {
            return Err(FrontendToolError::Duplicate(name.clone()));
        }
        if taken.contains(&name.as_str()) {
            return Err(FrontendToolError::Taken(name.clone()));
        }
        if let Some(parameters) = &spec.parameters {
            let is_object_schema = parameters.get("type").and_then(Value::as_str) == Some("object");
            if !is_object_schema {
                return Err(FrontendToolError::BadParameters(name.clone()));
            }
        }
    }
    Ok(())
}

/// A front-end tool as the agent holds it: calling it suspends the run
/// until the client answers.
#[derive(Debug, Clone)]
pub struct FrontendTool {
    spec: FrontendToolSpec,
    schema: Value,
}

impl FrontendTool {
    /// The tool `spec` declares.
    pub fn new(spec: FrontendToolSpec) -> Self {
        let schema = spec
            .parameters
            .clone()
            .unwrap_or_else(|| json!({ "type": "object", "properties": {} }));
        Self { spec, schema }
    }
}

impl Tool for FrontendTool {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn description(&self) -> &str {
        &self.spec.description
    }

    fn input_schema(&self) -> Value {
        self.schema.clone()
    }

    fn execute(self: Arc<Self>, _input: Value, _context: ToolContext) -> ToolStream {
        // The question a waiting call shows where the run is listed (the
        // server's page): what it waits for.
        let waiting = format!(
            "Waiting for the application to run its tool `{}`.",
            self.spec.name
        );
        single_result(async move { ToolResult::suspend(waiting) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, parameters: Option<Value>) -> FrontendToolSpec {
        FrontendToolSpec {
            name: name.into(),
            description: "d".into(),
            parameters,
        }
    }

    #[test]
    fn names_and_schemas_are_checked() {
        let object = Some(json!({"type": "object"}));
        assert_eq!(
            validate_frontend_tools(
                &[spec("show_chart", object.clone()), spec("ask", None)],
                &["fs"]
            ),
            Ok(())
        );
        for (specs, error) in [
            (
                vec![spec("has space", None)],
                FrontendToolError::BadName("has space".into()),
            ),
            (vec![spec("", None)], FrontendToolError::BadName("".into())),
            (
                vec![spec("a", None), spec("a", None)],
                FrontendToolError::Duplicate("a".into()),
            ),
            (
                vec![spec("fs", None)],
                FrontendToolError::Taken("fs".into()),
            ),
            (
                vec![spec("a", Some(json!({"type": "string"})))],
                FrontendToolError::BadParameters("a".into()),
            ),
        ] {
            assert_eq!(validate_frontend_tools(&specs, &["fs"]), Err(error));
        }
        let many: Vec<_> = (0..=MAX_FRONTEND_TOOLS)
            .map(|i| spec(&format!("t{i}"), None))
            .collect();
        assert_eq!(
            validate_frontend_tools(&many, &[]),
            Err(FrontendToolError::TooMany)
        );
    }

    #[test]
    fn a_tool_without_parameters_takes_an_empty_object() {
        let tool = FrontendTool::new(spec("ping", None));
        assert_eq!(
            tool.input_schema(),
            json!({"type": "object", "properties": {}})
        );
    }
}
