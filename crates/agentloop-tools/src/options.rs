//! Typed tool options (seed 003): declared with defaults, validated before a
//! call runs.

use agentloop_types::{ToolOptionKind, ToolOptionSpec};
use serde_json::{Map, Value};

/// Longest accepted model id.
const MAX_MODEL_LEN: usize = 200;

/// Why option values were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionError {
    /// The tool declares no option of this name.
    #[error("unknown option `{0}`")]
    Unknown(String),
    /// The value has the wrong type.
    #[error("option `{key}` must be {expected}, got {got}")]
    WrongType {
        /// Option name.
        key: String,
        /// What the option's kind accepts.
        expected: &'static str,
        /// The JSON type given.
        got: &'static str,
    },
    /// A model option is empty or not a plausible model id.
    #[error("option `{key}` is not a valid model id: {reason}")]
    BadModel {
        /// Option name.
        key: String,
        /// What is wrong.
        reason: &'static str,
    },
}

/// A boolean option.
pub fn boolean_option(key: &str, default: bool, description: &str) -> ToolOptionSpec {
    spec(
        key,
        ToolOptionKind::Boolean,
        Value::Bool(default),
        description,
    )
}

/// A long free-text option.
pub fn longtext_option(key: &str, default: &str, description: &str) -> ToolOptionSpec {
    spec(
        key,
        ToolOptionKind::Longtext,
        Value::String(default.into()),
        description,
    )
}

/// A model-id option; an empty default means "the run's model".
pub fn model_option(key: &str, default: &str, description: &str) -> ToolOptionSpec {
    spec(
        key,
        ToolOptionKind::Model,
        Value::String(default.into()),
        description,
    )
}

fn spec(key: &str, kind: ToolOptionKind, default: Value, description: &str) -> ToolOptionSpec {
    ToolOptionSpec {
        key: key.to_owned(),
        kind,
        default,
        description: description.to_owned(),
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn check(spec: &ToolOptionSpec, value: &Value) -> Result<(), OptionError> {
    let wrong = |expected| OptionError::WrongType {
        key: spec.key.clone(),
        expected,
        got: json_type(value),
    };
    match spec.kind {
        ToolOptionKind::Boolean => value
            .as_bool()
            .map(|_| ())
            .ok_or_else(|| wrong("a boolean")),
        ToolOptionKind::Longtext => value.as_str().map(|_| ()).ok_or_else(|| wrong("a string")),
        ToolOptionKind::Model => {
            let id = value.as_str().ok_or_else(|| wrong("a model id string"))?;
            let bad = |reason| OptionError::BadModel {
                key: spec.key.clone(),
                reason,
            };
            if id.len() > MAX_MODEL_LEN {
                Err(bad("it is too long"))
            } else if id.chars().any(|c| c.is_whitespace() || c.is_control()) {
                Err(bad("it contains whitespace or control characters"))
            } else {
                Ok(())
            }
        }
    }
}

/// Validates `given` against `specs` and fills in defaults. A `null` value
/// means "use the default".
pub fn resolve_options(
    specs: &[ToolOptionSpec],
    given: &Map<String, Value>,
) -> Result<Map<String, Value>, OptionError> {
    if let Some(key) = given.keys().find(|k| !specs.iter().any(|s| &s.key == *k)) {
        return Err(OptionError::Unknown(key.clone()));
    }
    let mut out = Map::new();
    for spec in specs {
        let value = match given.get(&spec.key) {
            None | Some(Value::Null) => spec.default.clone(),
            Some(v) => v.clone(),
        };
        check(spec, &value)?;
        out.insert(spec.key.clone(), value);
    }
    Ok(out)
}

/// Reads a boolean option (resolved by [`resolve_options`]).
pub fn bool_option(options: &Map<String, Value>, key: &str) -> bool {
    options.get(key).and_then(Value::as_bool).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn specs() -> Vec<ToolOptionSpec> {
        vec![
            boolean_option("keep", false, "keep it"),
            longtext_option("prompt", "be brief", "system prompt"),
            model_option("model", "", "model id"),
        ]
    }

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn defaults_fill_in() {
        let out = resolve_options(&specs(), &Map::new()).unwrap();
        assert_eq!(
            Value::Object(out),
            json!({"keep": false, "prompt": "be brief", "model": ""})
        );
        let out = resolve_options(
            &specs(),
            &map(json!({"keep": true, "model": "claude-x", "prompt": null})),
        )
        .unwrap();
        assert!(bool_option(&out, "keep"));
        assert_eq!(out["prompt"], "be brief");
        assert_eq!(out["model"], "claude-x");
    }

    #[test]
    fn bad_values_are_refused() {
        let err = |v| resolve_options(&specs(), &map(v)).unwrap_err().to_string();
        assert_eq!(err(json!({"nope": 1})), "unknown option `nope`");
        assert_eq!(
            err(json!({"keep": "yes"})),
            "option `keep` must be a boolean, got a string"
        );
        assert_eq!(
            err(json!({"prompt": 3})),
            "option `prompt` must be a string, got a number"
        );
        assert!(err(json!({"model": "a b"})).contains("whitespace"));
        assert!(err(json!({"model": "m".repeat(300)})).contains("too long"));
        assert!(err(json!({"model": []})).contains("model id string"));
    }
}
