//! The OpenAPI 3.1 description served at `/api/openapi.json`, generated
//! from the route table ([`super::routes`]) and the schemas of the types
//! each route takes and answers (schemars). What every operation can
//! answer besides follows from its shape, so no status it returns goes
//! undocumented: path parameters add 400 for a malformed id and 404, a
//! bearer token adds 401, a JSON body adds 400 and 413, a time-limited
//! route 408, a server with a rate limit 429 (with `Retry-After`) on every
//! route, and every operation has a `default` error for 500.

use std::collections::BTreeSet;

use schemars::SchemaGenerator;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

mod parameters;

use super::responses::ErrorShape;
use super::route::{Access, Route};

/// What this server offers that changes the document: project MCP servers
/// and the `shell` tool, each only where its operator allowed it, and
/// whether a rate limit can answer 429.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offers {
    /// Projects may name MCP servers (`--allow-project-mcp`).
    pub project_mcp: bool,
    /// Projects may enable the `shell` tool (`--allow-shell`).
    pub shell: bool,
    /// Requests are rate limited per client (`--rate-limit`).
    pub rate_limited: bool,
}

/// The `shell` field of a project body on a server that does or does not
/// offer the tool.
fn shell_schema(offered: bool) -> Value {
    if offered {
        json!({
            "type": ["boolean", "null"],
            "description": "Whether the project's runs get the `shell` tool: commands run in a sandbox (Landlock, namespaces, seccomp) inside the project folder, with no network unless the server allows it. Under the `ask` approval policy each command waits for a person."
        })
    } else {
        json!({
            "enum": [false, null],
            "description": "The `shell` tool; this server does not offer it (its operator can allow it with --allow-shell)."
        })
    }
}

/// The `mcpServers` field of a new project on a server that does or does
/// not run project MCP servers.
fn mcp_servers_schema(offered: bool) -> Value {
    if offered {
        json!({
            "type": ["object", "null"],
            "description": "MCP servers whose tools the project's runs get, in the familiar shape: name → {command, args, env} or {url, headers}. Stdio servers start in the project folder."
        })
    } else {
        json!({
            "type": "null",
            "description": "MCP servers for the project's runs; this server does not run them (its operator can allow them with --allow-project-mcp)."
        })
    }
}

/// Where shared schemas are.
const SCHEMAS: &str = "#/components/schemas/";

/// Where the answers' shared schemas are referred to while the document is
/// built; [`Generators::finish`] gives each its place in [`SCHEMAS`].
const WRITTEN: &str = "#/components/schemas/@written/";

/// The generators of the document's schemas: request bodies as they are
/// read, answers as they are written (a field always written is
/// required), both kept in `components.schemas`. A type read and written
/// with different schemas (a field the server fills in when it is left
/// out, but always writes) has both: the written one as `{name}Written`.
struct Generators {
    requests: SchemaGenerator,
    answers: SchemaGenerator,
}

impl Generators {
    fn new() -> Self {
        let settings = |path: &str| {
            let mut settings = SchemaSettings::draft2020_12();
            settings.definitions_path = path.to_owned().into();
            settings
        };
        Self {
            requests: settings(SCHEMAS).for_deserialize().into_generator(),
            answers: settings(WRITTEN).for_serialize().into_generator(),
        }
    }

    fn error(&mut self) -> Value {
        self.answers.subschema_for::<ErrorShape>().to_value()
    }

    /// The shared schemas by name, and `document` with each answer's
    /// reference pointing at its schema's place among them.
    fn finish(mut self, document: &mut Value) -> Map<String, Value> {
        let mut schemas = self.requests.take_definitions(true);
        let answers = self.answers.take_definitions(true);
        // Written apart: an answer's schema that differs from the request
        // schema of its name, once its own references are placed (so a
        // type holding one written apart is written apart too).
        let mut apart = BTreeSet::new();
        loop {
            let before = apart.len();
            for (name, schema) in &answers {
                let mut placed = schema.clone();
                place_written(&mut placed, &apart);
                if schemas.get(name).is_some_and(|read| *read != placed) {
                    apart.insert(name.clone());
                }
            }
            if apart.len() == before {
                break;
            }
        }
        for (name, mut schema) in answers {
            place_written(&mut schema, &apart);
            schemas.insert(written_name(&name, &apart), schema);
        }
        place_written(document, &apart);
        schemas
    }
}

/// The name in `components.schemas` of answer schema `name`.
fn written_name(name: &str, apart: &BTreeSet<String>) -> String {
    if apart.contains(name) {
        format!("{name}Written")
    } else {
        name.to_owned()
    }
}

/// Points every reference to an answer's shared schema in `value` at its
/// place in [`SCHEMAS`].
fn place_written(value: &mut Value, apart: &BTreeSet<String>) {
    match value {
        Value::Object(fields) => {
            for (key, field) in fields.iter_mut() {
                match field {
                    Value::String(target) if key == "$ref" => {
                        if let Some(name) = target.strip_prefix(WRITTEN) {
                            *target = format!("{SCHEMAS}{}", written_name(name, apart));
                        }
                    }
                    _ => place_written(field, apart),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| place_written(item, apart)),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

fn response(description: &str, schema: Option<Value>) -> Value {
    match schema {
        Some(schema) => json!({
            "description": description,
            "content": { "application/json": { "schema": schema } }
        }),
        None => json!({ "description": description }),
    }
}

/// The id a creating operation returns, as the path parameter that names
/// what it created.
fn created_id(method: &str, path: &str) -> Option<&'static str> {
    match (method, path) {
        ("post", "/api/projects") => Some("projectId"),
        ("post", "/api/projects/{projectId}/tasks") => Some("taskId"),
        ("post", "/api/tasks/{taskId}/agent-runs") => Some("runId"),
        _ => None,
    }
}

fn path_params(path: &str) -> Vec<&str> {
    path.split('/')
        .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
        .collect()
}

fn operation_id(method: &str, path: &str) -> String {
    let words: String = path
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("_");
    format!("{method}_{words}")
}

/// Links from a creating operation's answer to every operation taking the
/// id it returns, so a client (or a fuzzer) can follow them.
fn links(method: &str, path: &str, all: &[(String, &str)]) -> Option<Value> {
    let param = created_id(method, path)?;
    let mut links = Map::new();
    for (target_method, target_path) in all {
        let target_path: &str = target_path;
        if path_params(target_path).last() == Some(&param) {
            let mut parameters = Map::new();
            parameters.insert(param.to_owned(), json!("$response.body#/id"));
            for inherited in path_params(target_path) {
                if inherited != param && path_params(path).contains(&inherited) {
                    parameters.insert(
                        inherited.to_owned(),
                        json!(format!("$request.path.{inherited}")),
                    );
                }
            }
            links.insert(
                operation_id(target_method, target_path),
                json!({
                    "operationId": operation_id(target_method, target_path),
                    "parameters": parameters
                }),
            );
        }
    }
    Some(Value::Object(links))
}

/// The shared 429 answer, in `components.responses`.
fn too_many_requests(error: Value) -> Value {
    json!({
        "description": "Too many requests from this client (the user a valid token names, else the address it comes from: the peer, or the client a trusted proxy names in `X-Forwarded-For`); try again after `Retry-After` seconds",
        "headers": {
            "Retry-After": {
                "description": "Whole seconds until a request will be accepted again",
                "required": true,
                "schema": { "type": "integer", "minimum": 1 }
            }
        },
        "content": { "application/json": { "schema": error } }
    })
}

const TOO_MANY_REQUESTS: &str = "#/components/responses/TooManyRequests";

fn describe(
    route: &Route,
    all: &[(String, &str)],
    rate_limited: bool,
    generators: &mut Generators,
) -> Value {
    let method = route.method_name();
    let params = path_params(route.path);
    let mut responses = Map::new();
    let success = &route.success;
    let mut answer = response(
        success.description,
        success
            .schema
            .map(|schema| schema(&mut generators.answers).to_value()),
    );
    if let Some(links) = links(&method, route.path, all) {
        answer["links"] = links;
    }
    responses.insert(success.status.into(), answer);
    let error_schema = generators.error();
    let mut error = |code: &str, description: &str| {
        responses
            .entry(code)
            .or_insert_with(|| response(description, Some(error_schema.clone())));
    };
    if !params.is_empty() {
        error("400", "A malformed id");
        error("404", "Not found, or not the caller's");
    }
    if route.body.is_some() {
        error("400", "A malformed or invalid body");
        error("413", "The body is too large");
    }
    if route.access != Access::Public {
        error("401", "Missing or invalid bearer token");
    }
    if route.role.is_some() {
        error(
            "403",
            "The caller is a member of the project with a role below the one this needs (`x-role`); the error says which",
        );
    }
    if route.time_limited {
        error("408", "The request took too long");
    }
    error("default", "An unexpected error");
    if rate_limited && route.rate_limited {
        responses.insert("429".into(), json!({ "$ref": TOO_MANY_REQUESTS }));
    }
    for extra in &route.extra {
        let schema = extra
            .schema
            .map(|schema| schema(&mut generators.answers).to_value());
        responses.insert(extra.status.into(), response(extra.description, schema));
    }
    let mut out = Map::new();
    out.insert("summary".into(), json!(route.summary));
    out.insert(
        "operationId".into(),
        json!(operation_id(&method, route.path)),
    );
    let parameters = parameters::of(route, &params, &mut generators.requests);
    if !parameters.is_empty() {
        out.insert("parameters".into(), Value::Array(parameters));
    }
    match route.access {
        Access::Public => {
            out.insert("security".into(), json!([]));
        }
        Access::WebSocket => {
            out.insert(
                "security".into(),
                json!([{ "bearer": [] }, { "queryToken": [] }]),
            );
        }
        Access::Bearer | Access::JsonRpc => {}
    }
    if let Some(schema) = route.body {
        let schema = schema(&mut generators.requests).to_value();
        out.insert(
            "requestBody".into(),
            json!({ "required": true, "content": { "application/json": { "schema": schema } } }),
        );
    }
    if let Some(role) = route.role {
        out.insert("x-role".into(), json!(role.as_str()));
    }
    out.insert("responses".into(), Value::Object(responses));
    Value::Object(out)
}

/// The A2A endpoint, which speaks JSON-RPC (its errors are JSON-RPC
/// answers with HTTP 200), so it is described in an extension, not under
/// `paths`.
fn json_rpc(route: &Route, rate_limited: bool, generators: &mut Generators) -> Value {
    let body = route
        .body
        .map(|schema| schema(&mut generators.requests).to_value());
    let mut described = json!({
        "summary": route.summary,
        "description": A2A_DESCRIPTION,
        "methods": [
            agentloop_a2a::rpc::method::SEND_MESSAGE,
            agentloop_a2a::rpc::method::SEND_STREAMING_MESSAGE,
            agentloop_a2a::rpc::method::GET_TASK,
            agentloop_a2a::rpc::method::CANCEL_TASK,
            agentloop_a2a::rpc::method::SUBSCRIBE_TO_TASK,
            agentloop_a2a::v0_3::method::SEND,
            agentloop_a2a::v0_3::method::STREAM,
            agentloop_a2a::v0_3::method::GET,
            agentloop_a2a::v0_3::method::CANCEL,
            agentloop_a2a::v0_3::method::RESUBSCRIBE
        ],
        "security": [{ "bearer": [] }, { "sessionCookie": [] }],
        "requestBody": {
            "required": true,
            "content": { "application/json": { "schema": body } }
        },
        "responses": {
            (route.success.status): { "description": route.success.description },
            "401": { "description": "Not authenticated" },
            "413": { "description": "The body is over the limit" }
        }
    });
    if rate_limited && route.rate_limited {
        described["responses"]["429"] = json!({ "$ref": TOO_MANY_REQUESTS });
    }
    described
}

const A2A_DESCRIPTION: &str = "One JSON-RPC request per POST (no batches); send `A2A-Version: 1.0` (a missing header is read as 1.0, another major version is error -32009). Authentication and body size as for the API: 401 without a valid bearer token (or session cookie with `x-csrf-token`), 413 over the body limit; every other error is a JSON-RPC error answer. An A2A task is one agent run (`id` = agent run id) and its `contextId` the agentloop task. `SendMessage` without `message.taskId` starts a run: with `message.contextId` a new run of that task (the text is added to its document), otherwise a new task in the project named by `tenant` (the first text line is its title, the text its document); either way the run's first message carries the text after the agent's prompt; `metadata.agentType` picks the agent (`implementation` by default). It answers `{\"task\": Task}` once the run ends or needs input (`configuration.returnImmediately`: at once). A message with `taskId` answers an input-required task: a data part `{\"decisions\": [{\"call_id\", \"decision\": \"approve\"|\"approve_always\"|\"reject\"|\"answer\", ...}]}` as `POST /api/agent-runs/{runId}/decisions` takes, or text when one call waits (`approve`, `reject[: reason]`, or the answer). `SendStreamingMessage` and `SubscribeToTask` answer `text/event-stream`, each `data:` a JSON-RPC answer whose result is a `StreamResponse` (`task`, then `statusUpdate`s while working, then `artifactUpdate`s and the last `statusUpdate`); the stream ends when the task ends or needs input. `GetTask` reads a task; `CancelTask` stops its run (-32002 when it has ended). States: `TASK_STATE_WORKING`, `TASK_STATE_INPUT_REQUIRED` (the status message lists the waiting calls), `TASK_STATE_COMPLETED` (artifacts `answer`, text, and `output`, the structured output), `TASK_STATE_FAILED`, `TASK_STATE_CANCELED`. Another user's task, or an unknown id, is -32001 Task not found. A2A 0.3's methods are served on the same endpoint (the method name tells the version; `A2A-Version`, when sent, must match it): `message/send`, `message/stream`, `tasks/get`, `tasks/cancel`, `tasks/resubscribe` are handled as their 1.0 counterparts and answered in 0.3's shapes: objects tagged `kind` (`task`, `message`, `status-update` with `final`, `artifact-update`), parts `{\"kind\": \"text\"|\"data\"|\"file\", ...}`, states `working`, `input-required`, `completed`, `failed`, `canceled`, roles `user`/`agent`, `configuration.blocking: false` as `returnImmediately`; 0.3 has no tenant, so a new task's project is `metadata.tenant` (of the message or the request). 1.0's errors -32008 and -32009 are -32600 in 0.3.";

/// Sets what depends on the server's offers in the bodies that take it.
fn offer(paths: &mut Map<String, Value>, offers: Offers) {
    for (path, method) in [
        ("/api/projects", "post"),
        ("/api/projects/{projectId}", "patch"),
    ] {
        if let Some(properties) = paths
            .get_mut(path)
            .and_then(|p| p.get_mut(method))
            .and_then(|o| o.pointer_mut("/requestBody/content/application~1json/schema/properties"))
        {
            properties["shell"] = shell_schema(offers.shell);
            if method == "post" {
                properties["mcpServers"] = mcp_servers_schema(offers.project_mcp);
            }
        }
    }
}

/// The OpenAPI document of a server offering `offers`, whose API is
/// `routes`.
pub fn document(offers: Offers, routes: &[Route]) -> Value {
    let all: Vec<(String, &str)> = routes
        .iter()
        .filter(|r| r.access != Access::JsonRpc)
        .map(|r| (r.method_name(), r.path))
        .collect();
    let mut generators = Generators::new();
    let mut paths = Map::new();
    let mut websockets = Map::new();
    let mut a2a = Map::new();
    for route in routes {
        // OpenAPI has no words for a WebSocket or JSON-RPC: those routes
        // are described the same way, in extensions, so HTTP clients and
        // fuzzers skip them.
        let (target, described) = match route.access {
            Access::WebSocket => (
                &mut websockets,
                describe(route, &all, offers.rate_limited, &mut generators),
            ),
            Access::JsonRpc => (
                &mut a2a,
                json_rpc(route, offers.rate_limited, &mut generators),
            ),
            Access::Public | Access::Bearer => (
                &mut paths,
                describe(route, &all, offers.rate_limited, &mut generators),
            ),
        };
        let entry = target
            .entry(route.path)
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(methods) = entry {
            methods.insert(route.method_name(), described);
        }
    }
    offer(&mut paths, offers);
    let error = generators.error();
    let mut document = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "agentloop server",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Projects, tasks and chained agent runs (implementation ⇄ review until the workflow is complete). Every error answer is JSON `{\"error\": ...}`. The WebSocket route `/api/ws` is described under `x-websockets`, the MCP endpoint `/mcp` under `x-mcp`, the A2A endpoint `/a2a` under `x-a2a`."
        },
        "components": {
            "securitySchemes": {
                "bearer": { "type": "http", "scheme": "bearer" },
                "queryToken": { "type": "apiKey", "in": "query", "name": "token" },
                "sessionCookie": { "type": "apiKey", "in": "cookie", "name": "agentloop_session", "description": "From `POST /api/session`. A request that changes anything must also send the session's CSRF token as `x-csrf-token`." }
            },
            "schemas": {},
            "responses": { "TooManyRequests": too_many_requests(error) }
        },
        "security": [{ "bearer": [] }, { "sessionCookie": [] }],
        "paths": paths,
        "x-websockets": websockets,
        "x-a2a": a2a,
        "x-mcp": {
            "path": "/mcp",
            "transport": "MCP streamable HTTP",
            "description": "The caller's projects as MCP tools, behind the same authentication as the API (a bearer token, or the session cookie with its CSRF header); each tool answers as its route does, for the caller's own projects, tasks and runs only.",
            "tools": ["list_projects", "list_tasks", "create_task", "start_agent_run", "get_agent_run"]
        }
    });
    let schemas = generators.finish(&mut document);
    if let Some(components) = document.get_mut("components") {
        components["schemas"] = Value::Object(schemas);
    }
    document
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::collections::BTreeSet;

    use serde_json::Value;

    use super::super::routes::routes;
    use super::{Offers, TOO_MANY_REQUESTS, document, place_written};

    fn operation<'a>(doc: &'a Value, method: &str, path: &str) -> &'a Value {
        ["paths", "x-websockets", "x-a2a"]
            .iter()
            .map(|section| &doc[*section][path][method])
            .find(|o| o.is_object())
            .unwrap_or_else(|| panic!("{method} {path} is missing from the OpenAPI document"))
    }

    /// Follows a `$ref` into `components.schemas`.
    fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
        match schema["$ref"].as_str() {
            Some(reference) => {
                let name = reference
                    .strip_prefix("#/components/schemas/")
                    .unwrap_or_else(|| panic!("{reference} points outside the components"));
                let found = &doc["components"]["schemas"][name];
                assert!(found.is_object(), "{reference} names no schema");
                found
            }
            None => schema,
        }
    }

    #[test]
    fn the_document_describes_every_route_of_the_table_with_its_types_and_nothing_else() {
        let doc = document(Offers::default(), &routes());
        let table = routes();
        let mut generators = super::Generators::new();
        for route in &table {
            let method = route.method_name();
            let described = operation(&doc, &method, route.path);
            assert_eq!(
                described["summary"], route.summary,
                "{method} {}",
                route.path
            );
            match route.body {
                Some(schema) => {
                    let own = schema(&mut generators.requests).to_value();
                    let body = &described["requestBody"]["content"]["application/json"]["schema"];
                    // The shell and MCP fields depend on the server's offers.
                    let strip = |mut v: Value| {
                        if let Some(p) = v["properties"].as_object_mut() {
                            p.remove("shell");
                            p.remove("mcpServers");
                        }
                        v
                    };
                    assert_eq!(strip(body.clone()), strip(own), "{method} {}", route.path);
                }
                None => assert!(
                    described["requestBody"].is_null(),
                    "{method} {}",
                    route.path
                ),
            }
            let success = &described["responses"][route.success.status];
            match route.success.schema {
                Some(schema) => {
                    let mut own = schema(&mut generators.answers).to_value();
                    // Placed as the document places its answers' schemas.
                    let apart: BTreeSet<String> = doc["components"]["schemas"]
                        .as_object()
                        .into_iter()
                        .flat_map(|schemas| schemas.keys())
                        .filter_map(|name| name.strip_suffix("Written"))
                        .map(str::to_owned)
                        .collect();
                    place_written(&mut own, &apart);
                    let answer = &success["content"]["application/json"]["schema"];
                    assert_eq!(answer, &own, "{method} {}", route.path);
                    let items = if answer["items"].is_object() {
                        &answer["items"]
                    } else {
                        answer
                    };
                    assert!(resolve(&doc, items).is_object());
                }
                None => assert!(success["content"].is_null(), "{method} {}", route.path),
            }
        }
        let described: usize = ["paths", "x-websockets", "x-a2a"]
            .iter()
            .filter_map(|section| doc[*section].as_object())
            .flat_map(|paths| paths.values())
            .filter_map(|p| p.as_object())
            .map(serde_json::Map::len)
            .sum();
        assert_eq!(described, table.len());
        // Every reference resolves.
        let text = doc.to_string();
        for reference in text.split("\"$ref\":\"").skip(1) {
            let reference = reference.split('"').next().unwrap();
            if let Some(name) = reference.strip_prefix("#/components/schemas/") {
                assert!(
                    doc["components"]["schemas"][name].is_object(),
                    "{reference}"
                );
            }
        }
    }

    #[test]
    fn a_rate_limited_server_documents_429_on_every_route_but_health_and_an_unlimited_one_nowhere()
    {
        for rate_limited in [true, false] {
            let doc = document(
                Offers {
                    rate_limited,
                    ..Offers::default()
                },
                &routes(),
            );
            for route in routes() {
                let answer = &operation(&doc, &route.method_name(), route.path)["responses"]["429"];
                if rate_limited && route.path != "/api/health" {
                    assert_eq!(answer["$ref"], TOO_MANY_REQUESTS, "{}", route.path);
                } else {
                    assert!(answer.is_null(), "{}", route.path);
                }
            }
            let shared = &doc["components"]["responses"]["TooManyRequests"];
            assert_eq!(shared["headers"]["Retry-After"]["required"], true);
        }
    }

    #[test]
    fn the_bodies_follow_what_the_server_offers() {
        for offered in [true, false] {
            let doc = document(
                Offers {
                    shell: offered,
                    project_mcp: offered,
                    rate_limited: false,
                },
                &routes(),
            );
            let create = &doc["paths"]["/api/projects"]["post"]["requestBody"]["content"]["application/json"]
                ["schema"]["properties"];
            assert_eq!(create["shell"], super::shell_schema(offered));
            assert_eq!(create["mcpServers"], super::mcp_servers_schema(offered));
        }
    }
}
