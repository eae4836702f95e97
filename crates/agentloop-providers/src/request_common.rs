//! Request-building rules shared by the adapters.

use std::cell::RefCell;

use agentloop_types::{
    ContentBlock, FINAL_OUTPUT_TOOL, ModelRequest, ProviderError, Role, ToolDefinition,
};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::error;

/// The system prompt: `options.system_prompt`, then the text of every
/// system message in order, joined by blank lines.
pub(crate) fn system_text(request: &ModelRequest) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    if let Some(prompt) = request
        .options
        .system_prompt
        .as_ref()
        .filter(|p| !p.is_empty())
    {
        parts.push(prompt.clone());
    }
    for message in request.messages.iter().filter(|m| m.role == Role::System) {
        for block in &message.content {
            if let ContentBlock::Text { text, .. } = block
                && !text.is_empty()
            {
                parts.push(text.clone());
            }
        }
    }
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// The tools to offer: all of them, or those named in `enabled_tools`
/// (the engine's `final_output` tool is always offered: the run asks for
/// its answer through it).
pub(crate) fn offered_tools(request: &ModelRequest) -> Vec<&ToolDefinition> {
    let enabled = &request.options.enabled_tools;
    request
        .tools
        .iter()
        .filter(|t| {
            enabled.is_empty()
                || t.name == FINAL_OUTPUT_TOOL
                || enabled.iter().any(|name| name == &t.name)
        })
        .collect()
}

/// Tool arguments as a JSON object. Arguments kept as a string (a stream
/// cut mid-call) are parsed when they happen to be valid; otherwise the
/// call is sent with no arguments, since providers reject anything but an
/// object there.
pub(crate) fn input_object(input: &Value) -> Value {
    match input {
        Value::Object(_) => input.clone(),
        Value::String(raw) => match serde_json::from_str::<Value>(raw) {
            Ok(parsed @ Value::Object(_)) => parsed,
            _ => Value::Object(Map::new()),
        },
        _ => Value::Object(Map::new()),
    }
}

/// A JSON schema usable as tool parameters: providers require an object
/// schema, so an empty or missing one becomes `{"type":"object"}`.
pub(crate) fn parameters_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(map) if !map.is_empty() => schema.clone(),
        _ => serde_json::json!({"type": "object", "properties": {}}),
    }
}

/// A temperature as JSON without `f32` widening noise (0.2, not
/// 0.20000000298023224).
pub(crate) fn temperature(t: f32) -> Value {
    let widened: f64 = format!("{t}").parse().unwrap_or(f64::from(t));
    serde_json::json!(widened)
}

/// A temperature without `f32` widening noise, as a number to serialise.
pub(crate) fn temperature_number(t: f32) -> f64 {
    format!("{t}").parse().unwrap_or(f64::from(t))
}

/// Where a typed body's parts that can fail (an attachment that does not
/// resolve, a block the API cannot carry) leave their typed error while
/// serde only passes a message up.
#[derive(Default)]
pub(crate) struct Failure(RefCell<Option<ProviderError>>);

impl Failure {
    /// Keeps `error` and gives serde an error to stop with.
    pub(crate) fn fail<E: serde::ser::Error>(&self, error: ProviderError) -> E {
        let message = error.message.clone();
        *self.0.borrow_mut() = Some(error);
        E::custom(message)
    }
}

/// Serialises a typed request body straight to bytes: no `Value` tree,
/// nothing of the history copied.
pub(crate) fn to_bytes<T: Serialize>(body: &T, failure: &Failure) -> Result<Vec<u8>, ProviderError> {
    serde_json::to_vec(body).map_err(|e| {
        failure
            .0
            .borrow_mut()
            .take()
            .unwrap_or_else(|| error::invalid_request(format!("cannot write the request: {e}")))
    })
}

/// Tool arguments as a JSON object (see [`input_object`]), borrowed.
pub(crate) struct ArgumentsObject<'a>(pub(crate) &'a Value);

impl Serialize for ArgumentsObject<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(_) => self.0.serialize(serializer),
            other => input_object(other).serialize(serializer),
        }
    }
}

/// Tool arguments as the text of a JSON object, written into the string
/// as they are serialised (no intermediate string for the usual object).
pub(crate) struct ArgumentsText<'a>(pub(crate) &'a Value);

impl Serialize for ArgumentsText<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(_) => serializer.collect_str(self.0),
            other => serializer.collect_str(&input_object(other)),
        }
    }
}

/// A tool's parameter schema (see [`parameters_schema`]), borrowed.
pub(crate) struct ParametersSchema<'a>(pub(crate) &'a Value);

impl Serialize for ParametersSchema<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(map) if !map.is_empty() => self.0.serialize(serializer),
            other => parameters_schema(other).serialize(serializer),
        }
    }
}
