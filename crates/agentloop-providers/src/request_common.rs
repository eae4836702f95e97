//! Request-building rules shared by the adapters.

use std::borrow::Cow;
use std::sync::Arc;

use agentloop_types::{
    ContentBlock, ModelRequest, ProviderError, RequestOptions, Role, ToolDefinition, ToolInput,
};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::error;
use crate::schema_texts::SchemaTexts;

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

/// Refuses a prefill: only the Anthropic Messages API continues a
/// started answer.
pub(crate) fn refuse_prefill(options: &RequestOptions) -> Result<(), ProviderError> {
    if options
        .prefill_response
        .as_deref()
        .is_some_and(|p| !p.is_empty())
    {
        return Err(error::unsupported(
            "prefill_response is supported only by the Anthropic Messages API",
        ));
    }
    Ok(())
}

/// The tools to offer: the request's, as the engine chose them (narrowed
/// to the run's enabled tools, with `final_output` when the run asks
/// through it).
pub(crate) fn offered_tools(request: &ModelRequest) -> Vec<&ToolDefinition> {
    request.tools.iter().collect()
}

/// Tool arguments as a JSON object. Arguments kept as a string (a stream
/// cut mid-call) are parsed when they happen to be valid; otherwise the
/// call is sent with no arguments, since providers reject anything but an
/// object there.
pub(crate) fn input_object(input: &ToolInput) -> Value {
    match input.value() {
        object @ Value::Object(_) => object,
        Value::String(raw) => match serde_json::from_str::<Value>(&raw) {
            Ok(parsed @ Value::Object(_)) => parsed,
            _ => Value::Object(Map::new()),
        },
        _ => Value::Object(Map::new()),
    }
}

/// Tool arguments as the text of a JSON object: the text the call holds
/// (the model's own, byte for byte) when it is one, else
/// [`input_object`]'s.
pub(crate) fn arguments_text(input: &ToolInput) -> Cow<'_, str> {
    if input.is_object() {
        Cow::Borrowed(input.as_json())
    } else {
        Cow::Owned(input_object(input).to_string())
    }
}

/// A temperature without `f32` widening noise, as a number to serialise.
pub(crate) fn temperature_number(t: f32) -> f64 {
    format!("{t}").parse().unwrap_or(f64::from(t))
}

/// Tool arguments as a JSON string holding [`arguments_text`], written
/// without a copy.
pub(crate) struct ArgumentsText<'a>(pub(crate) &'a ToolInput);

impl Serialize for ArgumentsText<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&arguments_text(self.0))
    }
}

/// A tool's parameter schema, written from the text [`SchemaTexts`] keeps
/// for it.
pub(crate) struct ParametersSchema<'a> {
    schema: &'a Arc<Value>,
    texts: &'a SchemaTexts,
}

impl<'a> ParametersSchema<'a> {
    pub(crate) fn new(schema: &'a Arc<Value>, texts: &'a SchemaTexts) -> Self {
        Self { schema, texts }
    }
}

impl Serialize for ParametersSchema<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let text = self
            .texts
            .text(self.schema)
            .map_err(serde::ser::Error::custom)?;
        text.serialize(serializer)
    }
}

/// Writes `value` as JSON.
pub(crate) fn write_json(out: &mut Vec<u8>, value: &impl Serialize) -> Result<(), ProviderError> {
    serde_json::to_writer(out, value)
        .map_err(|e| error::invalid_request(format!("cannot write the request: {e}")))
}

/// Writes `{…head,"<list>":[…],…rest}`: the fields of `head` and `rest`
/// (typed structs that serialise as objects) around one list whose
/// elements `elements` writes, each followed by a comma. The list is
/// framed by hand so that its elements can be copied from what earlier
/// requests wrote (see `WireCache`); everything inside is written by serde.
pub(crate) fn write_body(
    capacity: usize,
    head: &impl Serialize,
    list: &str,
    elements: impl FnOnce(&mut Vec<u8>) -> Result<(), ProviderError>,
    rest: &impl Serialize,
) -> Result<Vec<u8>, ProviderError> {
    let mut out = Vec::with_capacity(capacity);
    write_json(&mut out, head)?;
    // Reopen the head object: drop its `}`.
    out.pop();
    if out.len() > 1 {
        out.push(b',');
    }
    write_json(&mut out, &list)?;
    out.extend_from_slice(b":[");
    elements(&mut out)?;
    if out.last() == Some(&b',') {
        out.pop();
    }
    out.push(b']');
    // The rest object is written in place, then joined: its `{` becomes
    // the `,` after the list, or, with no fields, `{}` becomes `}`.
    let at = out.len();
    write_json(&mut out, rest)?;
    if out.len() - at <= 2 {
        out.truncate(at);
        out.push(b'}');
    } else {
        out[at] = b',';
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(head: &Value, rest: &Value) -> String {
        let bytes = write_body(
            0,
            head,
            "list",
            |out| {
                out.extend_from_slice(b"1,2,");
                Ok(())
            },
            rest,
        )
        .unwrap_or_default();
        String::from_utf8(bytes).unwrap_or_default()
    }

    #[test]
    fn the_list_is_joined_between_head_and_rest_fields() {
        assert_eq!(
            body(&json!({"a": 1}), &json!({"b": true, "c": "x"})),
            r#"{"a":1,"list":[1,2],"b":true,"c":"x"}"#
        );
        assert_eq!(body(&json!({}), &json!({})), r#"{"list":[1,2]}"#);
        assert_eq!(
            body(&json!({"a": 1}), &json!({})),
            r#"{"a":1,"list":[1,2]}"#
        );
    }
}
