//! Request-building rules shared by the adapters.

use agentloop_types::{ContentBlock, FINAL_OUTPUT_TOOL, ModelRequest, Role, ToolDefinition};
use serde_json::{Map, Value};

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
