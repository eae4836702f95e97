//! What every request body shares: how a body is refused in the API's
//! words, a change's three states, an open object.

use schemars::JsonSchema;
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::http::error::ApiError;

/// A request body type: how a body that is JSON but not of this type is
/// refused. By default the answer names the field and what it must be
/// (see [`refusal`]); a seed 004 body keeps the seed's
/// message.
pub trait RequestBody: DeserializeOwned {
    /// The 400 for `problem`, a sentence naming the field at fault.
    fn refused(problem: String) -> ApiError {
        ApiError::bad_request(problem)
    }

    /// What the body breaks of its documented schema that deserializing
    /// would let through, checked before it is read; nothing by default.
    fn check(body: &serde_json::Value) -> Result<(), String> {
        let _ = body;
        Ok(())
    }
}

/// A sentence saying which field of a body is wrong and how, in the API's
/// words (`title must be a string`, `decisions[0].call_id is required`),
/// never the name of a Rust type.
pub fn refusal(error: &serde_path_to_error::Error<serde_json::Error>) -> String {
    let path = error.path().to_string();
    let path = (path != ".").then_some(path);
    let message = error.inner().to_string();
    let at = |name: &str| match &path {
        Some(path) => format!("{path}.{name}"),
        None => name.to_owned(),
    };
    let last = path
        .as_deref()
        .and_then(|p| p.rsplit(['.', '[']).next())
        .unwrap_or_default()
        .to_owned();
    if let Some(field) = message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.strip_suffix('`'))
    {
        return format!("{} is required", at(field));
    }
    if message.starts_with("unknown field `") {
        return match path_without(&path, &last, &message) {
            Some(parent) => format!("{parent}: {message}"),
            None => message,
        };
    }
    let Some(path) = path else {
        return message;
    };
    if let Some(expected) = message
        .strip_prefix("invalid type: ")
        .and_then(|rest| rest.split_once(", expected "))
        .map(|(_, expected)| expected)
    {
        return format!("{path} must be {}", plain_expected(expected));
    }
    if let Some(rest) = message.strip_prefix("unknown variant ") {
        return format!("{path}: unknown {last} {rest}");
    }
    if message.starts_with(&last) && !last.is_empty() {
        return message;
    }
    format!("{path}: {}", plain_type_names(&message))
}

/// The path of an unknown field's parent: serde names the unknown key as
/// the path's last segment.
fn path_without(path: &Option<String>, last: &str, message: &str) -> Option<String> {
    let path = path.as_deref()?;
    if message.contains(&format!("`{last}`")) {
        let parent = path.strip_suffix(last)?.trim_end_matches('.');
        (!parent.is_empty()).then(|| parent.to_owned())
    } else {
        Some(path.to_owned())
    }
}

/// What serde says a field expects, in the API's words.
fn plain_expected(expected: &str) -> String {
    match expected {
        "a sequence" => "an array".to_owned(),
        "a map" => "a JSON object".to_owned(),
        "a boolean" | "a string" => expected.to_owned(),
        _ if expected.starts_with("struct ") => "a JSON object".to_owned(),
        _ => plain_type_names(expected),
    }
}

/// A serde message without Rust's names of number types.
fn plain_type_names(message: &str) -> String {
    let mut text = message.to_owned();
    for (rust, plain) in [
        ("expected u64", "expected a whole number"),
        ("expected u32", "expected a whole number"),
        ("expected usize", "expected a whole number"),
        ("expected i64", "expected an integer"),
        ("expected f64", "expected a number"),
    ] {
        text = text.replace(rust, plain);
    }
    for rust in ["u64", "u32", "usize", "i64"] {
        if text == rust {
            return "a whole number".to_owned();
        }
    }
    text
}

/// `T` from an object, refused in the API's words: a struct nested in a
/// body is an object only (serde would take one from an array too).
pub(super) fn from_object<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    deserializer: D,
) -> Result<T, D::Error> {
    let object = Object::deserialize(deserializer)?;
    serde_path_to_error::deserialize(Value::Object(object))
        .map_err(|e| D::Error::custom(refusal(&e)))
}

/// A field a change may leave as it is (absent), clear (`null`) or set.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Change<T> {
    /// Absent: nothing changes.
    #[default]
    Keep,
    /// `null`: back to the default.
    Clear,
    /// A value.
    Set(T),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Change<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Option::<T>::deserialize(deserializer)?.map_or(Self::Clear, Self::Set))
    }
}

impl<T: JsonSchema> JsonSchema for Change<T> {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        Option::<T>::schema_name()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Option::<T>::json_schema(generator)
    }
}

/// An open JSON object, checked by the use case that takes it (a
/// project's MCP servers, its agents).
pub type Object = Map<String, Value>;
