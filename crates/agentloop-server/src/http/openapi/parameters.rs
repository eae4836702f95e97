//! An operation's parameters: its path's ids (and a step's seq), the
//! properties of its query type, a WebSocket's upgrade headers and an
//! event stream's `Last-Event-ID`.

use schemars::SchemaGenerator;
use serde_json::{Value, json};

use crate::http::route::{Access, Route};

/// The parameters of `route`, whose path names `path`; query schemas are
/// generated in `requests`.
pub(super) fn of(route: &Route, path: &[&str], requests: &mut SchemaGenerator) -> Vec<Value> {
    let mut parameters: Vec<Value> = path
        .iter()
        .map(|name| {
            // A step's seq is a number (one that fits 64 bits); every
            // other parameter is an id.
            let pattern = if *name == "seq" {
                "^[0-9]{1,18}$"
            } else {
                "^[A-Za-z0-9_-]{1,64}$"
            };
            json!({
                "name": name, "in": "path", "required": true,
                "schema": { "type": "string", "pattern": pattern }
            })
        })
        .collect();
    if let Some(query) = route.query {
        parameters.extend(query_parameters(&query(requests).to_value()));
    }
    if route.access == Access::WebSocket {
        for (name, value) in [
            ("Connection", "Upgrade"),
            ("Upgrade", "websocket"),
            ("Sec-WebSocket-Version", "13"),
        ] {
            parameters.push(json!({
                "name": name, "in": "header", "required": true,
                "schema": { "type": "string", "enum": [value] }
            }));
        }
        parameters.push(json!({
            "name": "Sec-WebSocket-Key", "in": "header", "required": true,
            "schema": { "type": "string", "pattern": "^[A-Za-z0-9+/]{22}==$" }
        }));
    }
    if route.path.ends_with("/events") {
        parameters.push(json!({
            "name": "Last-Event-ID", "in": "header", "required": false,
            "schema": { "type": "string", "pattern": "^[0-9]+$" }
        }));
    }
    parameters
}

/// The query parameters a query type's schema (an object) describes: one
/// a property, required as the type says. An optional one is left out of
/// the query, never sent empty, so its schema drops `null` (as a type and
/// as a default).
fn query_parameters(schema: &Value) -> Vec<Value> {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema["properties"].as_object() else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| {
            let mut property = property.clone();
            if let Some(types) = property["type"].as_array() {
                let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
                property["type"] = match kept.as_slice() {
                    [one] => one.clone(),
                    _ => Value::Array(kept),
                };
            }
            if property["default"].is_null()
                && let Some(fields) = property.as_object_mut()
            {
                fields.remove("default");
            }
            let description = property
                .as_object_mut()
                .and_then(|p| p.remove("description"));
            let mut parameter = json!({
                "name": name, "in": "query",
                "required": required.contains(&name.as_str()),
                "schema": property,
            });
            if let Some(description) = description {
                parameter["description"] = description;
            }
            parameter
        })
        .collect()
}
