//! Every standard tool offers a plain object schema any provider accepts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::sync::Arc;

use agentloop_tools::options::resolve_options;
use agentloop_tools::standard_tools;
use agentloop_tools::vfs::MemoryVfs;
use serde_json::Value;

fn walk(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(obj) => {
            for (k, v) in obj {
                if [
                    "oneOf",
                    "anyOf",
                    "allOf",
                    "$ref",
                    "$defs",
                    "definitions",
                    "$schema",
                ]
                .contains(&k.as_str())
                {
                    found.push(k.clone());
                }
                walk(v, found);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| walk(v, found)),
        _ => {}
    }
}

#[test]
fn standard_tools_have_plain_object_schemas_and_valid_option_defaults() {
    let tools = standard_tools(Arc::new(MemoryVfs::new()));
    let names: HashSet<String> = tools.iter().map(|t| t.name().to_owned()).collect();
    assert_eq!(names.len(), tools.len());
    for name in ["memory", "fs", "javascript", "return", "ask_user"] {
        assert!(names.contains(name), "{name}");
    }
    for tool in &tools {
        let def = tool.definition();
        assert_eq!(def.input_schema["type"], "object", "{}", def.name);
        assert!(def.input_schema["properties"].is_object(), "{}", def.name);
        assert!(!def.description.is_empty());
        let mut found = Vec::new();
        walk(&def.input_schema, &mut found);
        assert!(found.is_empty(), "{} schema uses {found:?}", def.name);
        let defaults = resolve_options(&tool.options(), &Default::default()).unwrap();
        assert_eq!(defaults.len(), tool.options().len());
    }
}
