//! Typed answers: [`Agent::run_typed`] asks for a value of a Rust type.
//!
//! The type's JSON Schema (generated like a typed tool's input schema) is
//! the run's output schema; the engine validates the answer against it and
//! sends invalid answers back to the model; the validated `output` is then
//! deserialised into the type.

use std::borrow::Cow;

use agentloop_types::{LoopResult, LoopStatus, OutputSchema};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::agent::Agent;
use crate::text::RunEnded;

/// Why [`Agent::run_typed`] returned no value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TypedRunError {
    /// The run did not complete: it failed (with `output_invalid` when no
    /// answer fit the schema, `refused` when the model refused), was
    /// cancelled, suspended or stopped by a limit.
    #[error(transparent)]
    Ended(#[from] RunEnded),
    /// The run completed without an output: a tool ended it with a return
    /// value instead.
    #[error("the run completed without a structured output")]
    NoOutput {
        /// The run's result.
        result: Box<LoopResult>,
    },
    /// The output fit the schema but not the type (a constraint the schema
    /// cannot express).
    #[error("the output does not deserialise into {type_name}: {message}")]
    Mismatch {
        /// The type asked for.
        type_name: &'static str,
        /// The output.
        output: Value,
        /// What serde said.
        message: String,
    },
}

/// The output schema for `T`: its schema name (cut to what providers
/// accept) and its self-contained JSON Schema. Mode and retries come from
/// `base`, the agent's own output schema, when it has one.
pub(crate) fn schema_for<T: JsonSchema>(base: Option<&OutputSchema>) -> OutputSchema {
    let name = schema_name(T::schema_name());
    let schema = agentloop_tools::schema::input_schema::<T>();
    match base {
        Some(base) => OutputSchema {
            name,
            schema,
            mode: base.mode,
            max_retries: base.max_retries,
        },
        None => OutputSchema::new(name, schema),
    }
}

/// Letters, digits, `_` and `-`, at most 64 characters (OpenAI's rule).
fn schema_name(name: Cow<'static, str>) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if cleaned.is_empty() {
        "output".to_owned()
    } else {
        cleaned
    }
}

/// The typed value of a finished run.
pub(crate) fn typed_value<T: DeserializeOwned>(result: LoopResult) -> Result<T, TypedRunError> {
    let output = match &result.status {
        LoopStatus::Complete {
            output: Some(output),
            ..
        } => output.clone(),
        LoopStatus::Complete { output: None, .. } => {
            return Err(TypedRunError::NoOutput {
                result: Box::new(result),
            });
        }
        LoopStatus::Suspended { .. }
        | LoopStatus::Error { .. }
        | LoopStatus::MaxIterations
        | LoopStatus::Cancelled
        | LoopStatus::LimitExceeded { .. } => {
            return Err(TypedRunError::Ended(RunEnded {
                result: Box::new(result),
            }));
        }
    };
    serde_json::from_value(output.clone()).map_err(|error| TypedRunError::Mismatch {
        type_name: std::any::type_name::<T>(),
        output,
        message: error.to_string(),
    })
}

impl Agent {
    /// Runs `prompt` and returns the answer as a `T`. The model is asked
    /// for JSON fitting `T`'s schema (the provider's structured-output
    /// form, or the `final_output` tool where the API has none or the
    /// agent's options ask for tool mode); an answer that does not fit goes
    /// back to the model with the errors, up to the schema's `max_retries`.
    ///
    /// ```
    /// use agentloop::Agent;
    /// use agentloop::engine::scripted::{ScriptedProvider, ScriptedTurn};
    ///
    /// #[derive(agentloop::Deserialize, agentloop::JsonSchema)]
    /// #[serde(crate = "agentloop::serde")]
    /// #[schemars(crate = "agentloop::schemars")]
    /// struct City {
    ///     name: String,
    ///     population: u64,
    /// }
    ///
    /// # futures::executor::block_on(async {
    /// let answer = r#"{"name": "Oslo", "population": 709000}"#;
    /// // A provider speaking OpenAI Chat is asked through its
    /// // `response_format` field.
    /// let provider = ScriptedProvider::speaking(
    ///     agentloop::types::ApiKind::OpenaiChat,
    ///     [ScriptedTurn::new().text(answer)],
    /// );
    /// let agent = Agent::builder()
    ///     .provider(provider)
    ///     .model("scripted")
    ///     .build()
    ///     .unwrap();
    /// let city: City = agent.run_typed("The capital of Norway?").await.unwrap();
    /// assert_eq!(city.population, 709000);
    /// # });
    /// ```
    pub async fn run_typed<T>(&self, prompt: impl Into<String>) -> Result<T, TypedRunError>
    where
        T: DeserializeOwned + JsonSchema,
    {
        let mut options = self.options().clone();
        options.output_schema = Some(schema_for::<T>(options.output_schema.as_ref()));
        typed_value(self.run_with_options(options, prompt).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_keep_to_what_providers_accept() {
        assert_eq!(schema_name("City".into()), "City");
        assert_eq!(schema_name("Vec<City>".into()), "Vec_City_");
        assert_eq!(schema_name("".into()), "output");
        assert_eq!(schema_name("x".repeat(80).into()).len(), 64);
    }
}
