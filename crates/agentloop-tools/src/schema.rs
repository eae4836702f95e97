//! Input schemas generated from Rust input types, and input parsing.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use agentloop_types::{Tool, ToolDefinition, ToolResult};
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

/// `T`'s input schema, generated once per process and shared: a server
/// offers its tools to every run anew, and a schema generated per run
/// would cost each run its own tree of JSON (kilobytes for a tool with
/// several commands).
pub fn shared_input_schema<T: JsonSchema + 'static>() -> Arc<Value> {
    static SCHEMAS: OnceLock<RwLock<HashMap<TypeId, Arc<Value>>>> = OnceLock::new();
    let schemas = SCHEMAS.get_or_init(Default::default);
    let id = TypeId::of::<T>();
    // A panic while the lock was held cannot leave the map half-written
    // (an insert either happened or not), so a poisoned lock is still read.
    if let Some(schema) = schemas
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&id)
    {
        return schema.clone();
    }
    let schema = Arc::new(input_schema::<T>());
    schemas
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(id)
        .or_insert(schema)
        .clone()
}

/// The definition of `tool`, whose input is `T`, with `T`'s shared schema
/// (see [`shared_input_schema`]).
pub fn definition_of<T: JsonSchema + 'static>(tool: &(impl Tool + ?Sized)) -> ToolDefinition {
    ToolDefinition {
        name: tool.name().to_owned(),
        description: tool.description().to_owned(),
        input_schema: shared_input_schema::<T>(),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AskUserTool;

    #[test]
    fn each_definition_of_a_tool_shares_one_schema() {
        let first = AskUserTool.definition();
        let second = AskUserTool.definition();
        assert!(Arc::ptr_eq(&first.input_schema, &second.input_schema));
        assert_eq!(*first.input_schema, AskUserTool.input_schema());
        assert_eq!(first.name, "ask_user");
        assert_eq!(first.description, AskUserTool.description());
    }
}
