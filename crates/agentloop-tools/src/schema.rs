//! Input schemas generated from Rust input types, and input parsing.

use agentloop_types::ToolResult;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The JSON schema of `T` as a provider wants it: a self-contained object
/// schema (no `$schema`, `title` or `$defs`).
pub fn input_schema<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft07()
        .with(|s| s.inline_subschemas = true)
        .into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    if let Some(obj) = value.as_object_mut() {
        obj.remove("$schema");
        obj.remove("title");
        obj.remove("$defs");
        obj.remove("definitions");
    }
    simplify_enums(&mut value);
    value
}

/// Rewrites `oneOf` lists of string constants (what a documented Rust enum
/// becomes) into a plain `enum`, which every provider accepts; the variant
/// docs move into the description.
fn simplify_enums(value: &mut Value) {
    match value {
        Value::Object(obj) => {
            let consts: Option<Vec<(Value, Option<String>)>> = obj
                .get("oneOf")
                .and_then(Value::as_array)
                .and_then(|items| {
                    items
                        .iter()
                        .map(|item| {
                            let c = item.get("const").filter(|c| c.is_string())?.clone();
                            let d = item.get("description").and_then(Value::as_str);
                            Some((c, d.map(str::to_owned)))
                        })
                        .collect()
                });
            if let Some(consts) = consts {
                obj.remove("oneOf");
                let notes: Vec<String> = consts
                    .iter()
                    .filter_map(|(c, d)| Some(format!("{}: {}", c.as_str()?, d.as_deref()?)))
                    .collect();
                if !notes.is_empty() {
                    let lead = obj
                        .get("description")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let text = format!("{lead} ({})", notes.join("; ")).trim().to_owned();
                    obj.insert("description".into(), Value::String(text));
                }
                obj.insert("type".into(), Value::String("string".into()));
                obj.insert(
                    "enum".into(),
                    Value::Array(consts.into_iter().map(|(c, _)| c).collect()),
                );
            }
            obj.values_mut().for_each(simplify_enums);
        }
        Value::Array(items) => items.iter_mut().for_each(simplify_enums),
        _ => {}
    }
}

/// Parses a tool input, or an error result saying what is wrong with it.
pub fn parse<T: DeserializeOwned>(input: Value) -> Result<T, ToolResult> {
    if !input.is_object() {
        return Err(ToolResult::error(format!(
            "Invalid input: expected a JSON object, got {input}"
        )));
    }
    agentloop_types::parse_input(input)
}
