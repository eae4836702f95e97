//! The OpenAPI 3.1 description served at `/api/openapi.json`.

use serde_json::{Map, Value, json};

fn op(summary: &str, responses: &[(&str, &str)], body: Option<Value>) -> Value {
    let mut out = Map::new();
    out.insert("summary".into(), json!(summary));
    let mut codes = Map::new();
    for (code, description) in responses {
        codes.insert(
            (*code).to_owned(),
            json!({ "description": description,
                    "content": { "application/json": { "schema": { "type": "object" } } } }),
        );
    }
    out.insert("responses".into(), Value::Object(codes));
    if let Some(schema) = body {
        out.insert(
            "requestBody".into(),
            json!({ "required": true, "content": { "application/json": { "schema": schema } } }),
        );
    }
    Value::Object(out)
}

fn obj(properties: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": properties, "required": required })
}

/// The OpenAPI document.
pub fn document() -> Value {
    let auth = [("401", "Missing or invalid bearer token")];
    let with = |mut codes: Vec<(&'static str, &'static str)>| {
        codes.extend_from_slice(&auth);
        codes
    };
    let agent_run = json!({
        "type": "object",
        "properties": {
            "id": {"type": "string"}, "task_id": {"type": "string"},
            "agent_type": {"enum": ["planification", "implementation", "review"]},
            "status": {"enum": ["running", "completed", "failed", "cancelled"]},
            "conversation_id": {"type": ["string", "null"]},
            "created_at": {"type": "string", "format": "date-time"},
            "completed_at": {"type": ["string", "null"], "format": "date-time"}
        }
    });
    let paths = json!({
        "/api/health": { "get": op("Liveness", &[("200", "OK")], None) },
        "/api/openapi.json": { "get": op("This document", &[("200", "OpenAPI 3.1")], None) },
        "/api/me": { "get": op("The caller", &with(vec![("200", "The user")]), None) },
        "/api/projects": {
            "get": op("The caller's projects", &with(vec![("200", "Projects")]), None),
            "post": op("Create a project with a repository folder",
                &with(vec![("201", "Created"), ("400", "Invalid body")]),
                Some(obj(json!({"name": {"type": "string"}, "repoFolder": {"type": "string"},
                                "model": {"type": "string"}}), &["name", "repoFolder"])))
        },
        "/api/projects/{projectId}": {
            "get": op("A project", &with(vec![("200", "Project"), ("404", "Not found")]), None),
            "delete": op("Delete a project", &with(vec![("204", "Deleted"), ("404", "Not found"),
                ("409", "An agent is running in it")]), None)
        },
        "/api/projects/{projectId}/tasks": {
            "get": op("A project's tasks", &with(vec![("200", "Tasks"), ("404", "Not found")]), None),
            "post": op("Create a task and its document",
                &with(vec![("201", "Created"), ("400", "Invalid body"), ("404", "Not found")]),
                Some(obj(json!({"title": {"type": "string"}, "description": {"type": "string"}}),
                    &["title"])))
        },
        "/api/tasks/{taskId}": {
            "get": op("A task", &with(vec![("200", "Task"), ("400", "Invalid task id"),
                ("404", "Not found")]), None)
        },
        "/api/tasks/{taskId}/document": {
            "get": op("The task document", &with(vec![("200", "Document"), ("404", "Not found")]), None),
            "put": op("Replace the task document", &with(vec![("200", "Document"),
                ("400", "Invalid body"), ("404", "Not found")]),
                Some(obj(json!({"content": {"type": "string"}}), &["content"])))
        },
        "/api/tasks/{taskId}/workflow-complete": {
            "put": op("Set workflow_complete; true force-completes running agent runs",
                &with(vec![("200", "{success, workflow_complete}"), ("400", "complete is not a boolean"),
                    ("404", "Not found")]),
                Some(obj(json!({"complete": {"type": "boolean"}}), &["complete"])))
        },
        "/api/tasks/{taskId}/agent-runs": {
            "get": op("A task's agent runs", &with(vec![("200", "Agent runs"), ("404", "Not found")]), None),
            "post": op("Start an agent run (and its chain)",
                &with(vec![("201", "The agent run"), ("400", "Invalid agent type or task id"),
                    ("404", "Task not found"), ("409", "{error, runningAgent}")]),
                Some(obj(json!({"agentType": {"enum": ["planification", "implementation", "review"]}}),
                    &["agentType"])))
        },
        "/api/agent-runs/{runId}": {
            "get": op("An agent run", &with(vec![("200", "Agent run"), ("404", "Not found")]), None)
        },
        "/api/agent-runs/{runId}/messages": {
            "get": op("The run's stored messages", &with(vec![("200", "Messages"), ("404", "Not found")]), None)
        },
        "/api/agent-runs/{runId}/events": {
            "get": op("The run's events as text/event-stream; honours Last-Event-ID",
                &with(vec![("200", "SSE stream"), ("400", "Bad Last-Event-ID"), ("404", "Not found")]), None)
        },
        "/api/agent-runs/{runId}/cancel": {
            "post": op("Cancel a running agent run; the chain stops",
                &with(vec![("200", "The agent run"), ("404", "Not found"), ("409", "Not running")]), None)
        },
        "/api/ws": {
            "get": op("WebSocket of the caller's notifications (token in ?token= or header)",
                &with(vec![("101", "Switching protocols")]), None)
        }
    });
    json!({
        "openapi": "3.1.0",
        "info": { "title": "agentloop server", "version": env!("CARGO_PKG_VERSION") },
        "components": {
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } },
            "schemas": { "AgentRun": agent_run }
        },
        "security": [{ "bearer": [] }],
        "paths": paths
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_route_is_described() {
        let doc = super::document();
        for (method, path) in crate::routes::ROUTES {
            assert!(
                doc["paths"][*path][*method].is_object(),
                "{method} {path} is missing from the OpenAPI document"
            );
        }
        let described: usize = doc["paths"]
            .as_object()
            .map(|paths| {
                paths
                    .values()
                    .filter_map(|p| p.as_object())
                    .map(|p| p.len())
                    .sum()
            })
            .unwrap_or(0);
        assert_eq!(described, crate::routes::ROUTES.len());
    }
}
