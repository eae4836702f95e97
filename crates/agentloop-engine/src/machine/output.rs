//! Structured output: how a run with an output schema finishes. The core
//! validates the final answer (the answer text in native mode, the
//! `final_output` call's input in tool mode) against the schema; a valid
//! answer completes the run with it as `output`, an invalid one goes back
//! to the model with the validation errors while retries remain, then
//! ends the run `output_invalid`; a refusal ends it `refused`. This module
//! holds the rules and the checks; the run core applies them
//! (`run_core::final_answer`).

use std::sync::Arc;

use agentloop_types::{
    ApiKind, FINAL_OUTPUT_TOOL, LoopError, LoopOptions, OutputSchema, ResponseFormat,
    ToolDefinition,
};
use serde_json::Value;

use super::strategies::names;

/// What a run with an output schema is held to, and how the model is asked
/// for it: decided once per run, from the schema's mode and the provider's
/// API.
#[derive(Debug, Clone)]
pub(crate) struct OutputRules {
    pub(crate) schema: OutputSchema,
    /// How the answer is asked for.
    ask: Ask,
}

/// How the model is asked for a structured answer.
#[derive(Debug, Clone)]
enum Ask {
    /// Through the `final_output` tool, offered with the run's tools.
    Tool(ToolDefinition),
    /// Through the request's structured-output field.
    Native(Arc<ResponseFormat>),
}

/// What a run's options ask of its answer, for a run of a strategy whose
/// provider speaks `api`.
#[derive(Debug, Clone)]
pub(crate) enum OutputPlan {
    /// Free text: no output schema.
    Free,
    /// Held to a schema.
    Held(OutputRules),
    /// An output schema the strategy cannot honour: the run is refused
    /// with this error before its first step.
    Refused(LoopError),
}

impl OutputPlan {
    /// The plan for a run of `strategy` under `options` whose provider
    /// speaks `api`.
    pub(crate) fn for_run(options: &LoopOptions, strategy: &str, api: Option<ApiKind>) -> Self {
        let Some(schema) = &options.output_schema else {
            return Self::Free;
        };
        match check_output_schema(strategy, options) {
            Ok(()) => Self::Held(OutputRules::new(schema.clone(), api)),
            Err(error) => Self::Refused(error),
        }
    }
}

/// The one rule for which runs an output schema applies to: a run of the
/// native strategy, whose core validates the answer it finishes with. The
/// other strategies' prompts expect free text (a plan step's nested run
/// answers its plan, not the caller), so a run of one that asks for a
/// schema is refused with [`LoopError::OutputSchemaUnsupported`] — by the
/// machine before its first step, and by callers that check first with
/// this function. Child runs started by tools never get a schema
/// ([`LoopOptions::for_child`]).
pub fn check_output_schema(strategy: &str, options: &LoopOptions) -> Result<(), LoopError> {
    if options.output_schema.is_none() || strategy == names::NATIVE {
        return Ok(());
    }
    Err(LoopError::OutputSchemaUnsupported {
        strategy: strategy.to_owned(),
    })
}

impl OutputRules {
    /// How `schema` is asked for from a provider speaking `api`
    /// ([`OutputSchema::uses_tool`]).
    fn new(schema: OutputSchema, api: Option<ApiKind>) -> Self {
        let ask = if schema.uses_tool(api) {
            Ask::Tool(ToolDefinition {
                name: FINAL_OUTPUT_TOOL.to_owned(),
                description: format!(
                    "Give your final answer as this tool's input, which must fit the `{}` schema. \
                     Calling it ends the run.",
                    schema.name
                ),
                input_schema: schema.schema.clone().into(),
            })
        } else {
            Ask::Native(Arc::new(schema.response_format()))
        };
        Self { schema, ask }
    }

    /// The form the provider is asked to hold the answer to with its own
    /// request field; `None` in tool mode.
    pub(crate) fn native(&self) -> Option<&Arc<ResponseFormat>> {
        match &self.ask {
            Ask::Native(format) => Some(format),
            Ask::Tool(_) => None,
        }
    }

    /// The `final_output` tool, in tool mode.
    pub(crate) fn tool(&self) -> Option<&ToolDefinition> {
        match &self.ask {
            Ask::Tool(tool) => Some(tool),
            Ask::Native(_) => None,
        }
    }
}

/// The verdict on one answer.
pub(crate) enum Check {
    Valid(Value),
    Invalid { answer: String, errors: Vec<String> },
}

/// Validates `value` (given as `answer`) against the schema.
pub(crate) fn check_value(schema: &OutputSchema, value: Value, answer: String) -> Check {
    let validator = match jsonschema::validator_for(&schema.schema) {
        Ok(validator) => validator,
        Err(error) => {
            return Check::Invalid {
                answer,
                errors: vec![format!("the output schema itself is invalid: {error}")],
            };
        }
    };
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|error| {
            let path = error.instance_path().to_string();
            if path.is_empty() {
                error.to_string()
            } else {
                format!("{path}: {error}")
            }
        })
        .collect();
    if errors.is_empty() {
        Check::Valid(value)
    } else {
        Check::Invalid { answer, errors }
    }
}

/// Parses an answer text as JSON (a fenced code block around it is
/// allowed) and validates it.
pub(crate) fn check_text(schema: &OutputSchema, text: &str) -> Check {
    match serde_json::from_str::<Value>(unfenced(text)) {
        Ok(value) => check_value(schema, value, text.to_owned()),
        Err(error) => Check::Invalid {
            answer: text.to_owned(),
            errors: vec![format!("the answer is not JSON: {error}")],
        },
    }
}

/// The text inside a Markdown code fence, or the trimmed text.
fn unfenced(text: &str) -> &str {
    let trimmed = text.trim();
    let Some(rest) = trimmed.strip_prefix("```") else {
        return trimmed;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return trimmed;
    };
    // Drop the info string (`json`) on the opening line.
    body.split_once('\n')
        .map_or(body, |(_, inner)| inner)
        .trim()
}

/// What the model reads when its answer did not fit.
pub(crate) fn feedback(rules: &OutputRules, errors: &[String]) -> String {
    let list: String = errors.iter().map(|e| format!("\n- {e}")).collect();
    let ask = if rules.tool().is_some() {
        format!("Call the {FINAL_OUTPUT_TOOL} tool again with input that fits the schema.")
    } else {
        "Answer again with JSON that fits the schema, and nothing else.".to_owned()
    };
    format!(
        "Your answer does not fit the required output schema `{}`:{list}\n{ask}",
        rules.schema.name
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> OutputSchema {
        OutputSchema::new(
            "city",
            json!({
                "type": "object",
                "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
                "required": ["name", "population"],
                "additionalProperties": false
            }),
        )
    }

    #[test]
    fn fenced_and_plain_json_validate() {
        for text in [
            r#"{"name":"Oslo","population":700000}"#,
            "```json\n{\"name\":\"Oslo\",\"population\":700000}\n```",
        ] {
            assert!(
                matches!(check_text(&schema(), text), Check::Valid(_)),
                "{text}"
            );
        }
    }

    #[test]
    fn errors_name_the_place_and_the_problem() {
        let Check::Invalid { errors, answer } =
            check_text(&schema(), r#"{"name":"Oslo","population":"many"}"#)
        else {
            panic!("valid");
        };
        assert_eq!(answer, r#"{"name":"Oslo","population":"many"}"#);
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("/population: "), "{errors:?}");
        let Check::Invalid { errors, .. } = check_text(&schema(), "Oslo, about 700k") else {
            panic!("valid");
        };
        assert!(
            errors[0].starts_with("the answer is not JSON"),
            "{errors:?}"
        );
    }
}
