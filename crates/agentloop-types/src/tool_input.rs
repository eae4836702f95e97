//! [`ToolInput`]: a tool call's arguments, kept as JSON text.

use std::fmt;
use std::sync::Arc;

use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// A tool call's arguments: JSON text, shared.
///
/// A run copies each call into its history, its events, its tool step and
/// the request that sends it back to the model; as text behind an [`Arc`]
/// each copy is a reference count, and the call holds one small allocation
/// for the rest of the run (a parsed JSON object holds a tree of them).
/// Arguments a model streamed are kept as it wrote them, once checked to
/// be JSON, so they go back to the provider byte for byte; arguments built
/// from a [`Value`] are its compact serialisation.
///
/// Read the arguments with [`value`](Self::value). Two inputs are equal
/// when their JSON values are, and an input displays and serialises as its
/// value (a JSON object, not a string holding one).
#[derive(Clone)]
pub struct ToolInput(Arc<str>);

impl ToolInput {
    /// Arguments as a model streamed them: empty text means no arguments
    /// (`{}`); text that is not JSON is kept as a JSON string, so nothing
    /// is lost and the engine answers the call with an error.
    pub fn from_model_text(text: &str) -> Self {
        let text = text.trim();
        if text.is_empty() {
            return Self(Arc::from("{}"));
        }
        // Checking the text keeps nothing; it is parsed when read.
        if serde_json::from_str::<Checked>(text).is_ok() {
            Self(Arc::from(text))
        } else {
            Self::from(&Value::String(text.to_owned()))
        }
    }

    /// The arguments as JSON text.
    pub fn as_json(&self) -> &str {
        &self.0
    }

    /// The arguments, parsed.
    pub fn value(&self) -> Value {
        // The text was checked to parse when the input was made; the
        // fallback only keeps this total.
        serde_json::from_str(&self.0).unwrap_or_else(|_| Value::String(self.0.to_string()))
    }

    /// Whether the arguments are a JSON object (what a tool expects).
    pub fn is_object(&self) -> bool {
        self.0.starts_with('{')
    }
}

/// A JSON value read through serde_json's full parser and kept nowhere:
/// text it accepts is exactly text a [`Value`] parses from. Its skip path
/// (`IgnoredAny`) would not do: it accepts lone surrogate escapes and
/// numbers beyond `f64`, which a `Value` refuses.
struct Checked;

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Checked)
    }
}

impl<'de> Visitor<'de> for Checked {
    type Value = Checked;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_str<E>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_unit<E>(self) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Checked, A::Error> {
        while items.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Checked, A::Error> {
        while entries.next_entry::<Checked, Checked>()?.is_some() {}
        Ok(Checked)
    }
}

impl Default for ToolInput {
    /// No arguments: `{}`.
    fn default() -> Self {
        Self(Arc::from("{}"))
    }
}

impl From<&Value> for ToolInput {
    fn from(value: &Value) -> Self {
        Self(Arc::from(value.to_string()))
    }
}

impl From<Value> for ToolInput {
    fn from(value: Value) -> Self {
        Self::from(&value)
    }
}

impl PartialEq for ToolInput {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0 || self.value() == other.value()
    }
}

impl PartialEq<Value> for ToolInput {
    fn eq(&self, other: &Value) -> bool {
        self.value() == *other
    }
}

impl fmt::Debug for ToolInput {
    /// As its value, so a call reads the same whatever text held it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value().fmt(f)
    }
}

impl fmt::Display for ToolInput {
    /// The value's compact JSON, on one line whatever the text (a model
    /// may write its arguments over several), as a [`Value`] displays.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value().fmt(f)
    }
}

impl Serialize for ToolInput {
    // Through the parsed value rather than as raw JSON text, so that every
    // serialiser (not only serde_json's) writes the same object.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ToolInput {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for ToolInput {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        Value::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Value::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn model_text_is_kept_as_written_once_it_is_json() {
        let input = ToolInput::from_model_text(" {\"b\": 1, \"a\": [true]} ");
        assert_eq!(input.as_json(), "{\"b\": 1, \"a\": [true]}");
        assert_eq!(input, json!({"a": [true], "b": 1}));
        assert!(input.is_object());
        // It serialises and displays as the object, in the value's form.
        assert_eq!(
            serde_json::to_string(&input).unwrap(),
            r#"{"a":[true],"b":1}"#
        );
        let written_over_lines = ToolInput::from_model_text("{\n  \"path\": \"/\"\n}");
        assert_eq!(written_over_lines.to_string(), r#"{"path":"/"}"#);
    }

    #[test]
    fn empty_text_is_no_arguments_and_broken_text_a_string() {
        assert_eq!(ToolInput::from_model_text("  "), json!({}));
        let cut = ToolInput::from_model_text("{\"path\": \"/tm");
        assert_eq!(cut, json!("{\"path\": \"/tm"));
        assert!(!cut.is_object());
        // Text only a lenient parser takes is not JSON either.
        for lenient in ["1e999", r#"{"a": "\ud800"}"#] {
            let input = ToolInput::from_model_text(lenient);
            assert_eq!(input.value(), json!(lenient));
            assert!(!input.is_object());
        }
    }

    #[test]
    fn equal_values_are_equal_inputs_whatever_their_text() {
        let written = ToolInput::from_model_text("{ \"x\" : 1 , \"y\" : 2 }");
        assert_eq!(written, ToolInput::from(json!({"y": 2, "x": 1})));
        assert_ne!(written, ToolInput::from(json!({"x": 1})));
    }

    #[test]
    fn it_round_trips_through_any_serialiser_as_a_value() {
        let input = ToolInput::from(json!({"q": "rust", "n": 3}));
        let value = serde_json::to_value(&input).unwrap();
        assert_eq!(value, json!({"q": "rust", "n": 3}));
        let back: ToolInput = serde_json::from_value(value).unwrap();
        assert_eq!(back.as_json(), input.as_json());
        assert_eq!(format!("{input:?}"), format!("{:?}", input.value()));
    }
}
