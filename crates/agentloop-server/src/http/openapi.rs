//! The OpenAPI 3.1 description served at `/api/openapi.json`, generated
//! from one table of operations. What every operation can answer follows
//! from its shape, so no status it returns goes undocumented: path
//! parameters (declared from the path) add 400 for a malformed id and 404,
//! a bearer token adds 401, a JSON body adds 400 and 413, a time-limited
//! route 408, a server with a rate limit 429 (with `Retry-After`) on every
//! route, and every operation has a `default` error for 500.

use serde_json::{Map, Value, json};

use super::extract::{MAX_MODEL_CHARS, MAX_TITLE_CHARS};

/// Who may call an operation.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    /// Anyone.
    Public,
    /// A bearer token.
    Bearer,
    /// A bearer token, or `?token=` (the WebSocket route).
    BearerOrQuery,
}

/// One operation of the API.
struct Operation {
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    access: Access,
    /// Whether the request-time limit applies (streaming routes have none).
    time_limited: bool,
    /// Whether the per-client rate limit applies (health is never limited).
    rate_limited: bool,
    body: Option<Value>,
    /// Success status, description and JSON schema (`None`: not JSON).
    success: (&'static str, &'static str, Option<Value>),
    /// Statuses particular to this operation, with their description.
    extra: Vec<(&'static str, &'static str, Value)>,
}

fn schema_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

fn array_of(name: &str) -> Value {
    json!({ "type": "array", "items": schema_ref(name) })
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": properties, "required": required })
}

/// [`object`] that allows no other properties (the server refuses them).
fn closed(properties: Value, required: &[&str]) -> Value {
    let mut value = object(properties, required);
    value["additionalProperties"] = json!(false);
    value
}

/// A string with at least one character that is not white space.
fn text() -> Value {
    json!({ "type": "string", "pattern": "\\S" })
}

/// [`text`] of at most `max` characters (longer is a 400 naming the
/// limit, with `field` and `max_length` in the error).
fn short_text(max: usize) -> Value {
    let mut value = text();
    value["maxLength"] = json!(max);
    value
}

const AGENT_TYPES: [&str; 3] = ["planification", "implementation", "review"];

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

/// The `shell` field of a project body.
/// A project's own `shell` write quota; it only lowers the server's.
fn shell_quota_schema() -> Value {
    json!({
        "type": ["object", "null"],
        "additionalProperties": false,
        "properties": {
            "max_write_mb": {"type": "integer", "minimum": 1, "description": "MiB of allocated blocks one command may add to the project and temporary folders together"},
            "max_write_files": {"type": "integer", "minimum": 1, "description": "Files and folders one command may add there"}
        },
        "description": "The project's own bounds on what one `shell` command may write; each only lowers the server's `[shell]` quota (`max_write_mb`, `max_write_files`), and a command past either is stopped with a result naming it. Null: the server's quota alone."
    })
}

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

fn operations(offers: Offers) -> Vec<Operation> {
    let Offers {
        project_mcp: allow_project_mcp,
        shell,
        rate_limited: _,
    } = offers;
    let op = |method, path, summary, success| Operation {
        method,
        path,
        summary,
        access: Access::Bearer,
        time_limited: true,
        rate_limited: true,
        body: None,
        success,
        extra: Vec::new(),
    };
    let conflict = |description| ("409", description, schema_ref("Error"));
    vec![
        Operation {
            access: Access::Public,
            time_limited: false,
            rate_limited: false,
            extra: vec![(
                "503",
                "The server is starting and does not serve yet (every other route answers 503 too, with the same reason in `error`); `waiting_for` says what it waits for (e.g. `restate: registering the worker endpoint …`). Sent with `Retry-After`.",
                object(
                    json!({
                        "ok": {"const": false},
                        "status": {"const": "starting"},
                        "waiting_for": {"type": "string"}
                    }),
                    &["ok", "status", "waiting_for"],
                ),
            )],
            ..op(
                "get",
                "/api/health",
                "Health, for probes: never rate limited",
                (
                    "200",
                    "The server serves",
                    Some(object(
                        json!({"ok": {"const": true}, "status": {"const": "ok"}}),
                        &["ok", "status"],
                    )),
                ),
            )
        },
        Operation {
            access: Access::Public,
            ..op(
                "get",
                "/api/openapi.json",
                "This document",
                ("200", "OpenAPI 3.1", Some(json!({"type": "object"}))),
            )
        },
        Operation {
            access: Access::Public,
            ..op(
                "get",
                "/.well-known/agent-card.json",
                "The A2A agent card (protocol 1.0, with protocol 0.3's fields beside for older clients): the server's agents, reached over JSON-RPC at `POST /a2a` (described under `x-a2a`) with a bearer token",
                (
                    "200",
                    "An A2A `AgentCard`",
                    Some(object(
                        json!({
                            "name": {"type": "string"},
                            "description": {"type": "string"},
                            "version": {"type": "string"},
                            "supportedInterfaces": {"type": "array", "items": {"type": "object"}},
                            "capabilities": {"type": "object"},
                            "skills": {"type": "array", "items": {"type": "object"}}
                        }),
                        &[
                            "name",
                            "description",
                            "version",
                            "supportedInterfaces",
                            "capabilities",
                            "skills",
                        ],
                    )),
                ),
            )
        },
        op(
            "get",
            "/api/me",
            "The caller",
            ("200", "The user", Some(schema_ref("User"))),
        ),
        op(
            "get",
            "/api/session",
            "The browser session: its user and the CSRF token a change made with the session cookie sends as `x-csrf-token`",
            ("200", "The session", Some(schema_ref("Session"))),
        ),
        Operation {
            access: Access::Public,
            body: Some(object(json!({"token": text()}), &["token"])),
            extra: vec![
                ("401", "The token is not valid", schema_ref("Error")),
                (
                    "415",
                    "The body is not sent as application/json",
                    schema_ref("Error"),
                ),
            ],
            ..op(
                "post",
                "/api/session",
                "Sign in from a browser: exchanges a bearer token for a session cookie (`agentloop_session`, HttpOnly, SameSite=Strict) of its own",
                (
                    "201",
                    "Signed in; the cookie is set",
                    Some(schema_ref("Session")),
                ),
            )
        },
        Operation {
            extra: vec![(
                "403",
                "A change made with the session cookie without its CSRF token",
                schema_ref("Error"),
            )],
            ..op(
                "delete",
                "/api/session",
                "Sign out: the session's token stops working and the cookie is cleared",
                ("204", "Signed out", None),
            )
        },
        op(
            "get",
            "/api/projects",
            "The caller's projects, oldest first",
            ("200", "Projects", Some(array_of("Project"))),
        ),
        Operation {
            body: Some(object(
                json!({
                    "name": short_text(MAX_TITLE_CHARS),
                    "repoFolder": {
                        "type": "string",
                        "pattern": "^[^\\u0000]*\\S[^\\u0000]*$",
                        "description": "The project's folder. Relative paths are taken inside the server's projects folder; absolute ones must lie inside it. Refused (400, nothing created): `..` components, symbolic links anywhere below the projects folder, a path through a file, the projects folder itself. Refused (409): a folder equal to, inside, or around another project's folder, or one a deleted project of another user left behind."
                    },
                    "model": {"type": ["string", "null"], "pattern": "\\S", "maxLength": MAX_MODEL_CHARS},
                    "approvals": approval_mode_schema(true),
                    "tool_approvals": approvals_schema(),
                    "shell": shell_schema(shell),
                    "shell_quota": shell_quota_schema(),
                    "agents": agents_schema(),
                    "mcpServers": if allow_project_mcp {
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
                }),
                &["name", "repoFolder"],
            )),
            extra: vec![conflict("The folder overlaps another project's folder")],
            ..op(
                "post",
                "/api/projects",
                "Create a project and its folder",
                ("201", "The project", Some(schema_ref("Project"))),
            )
        },
        op(
            "get",
            "/api/projects/{projectId}",
            "A project",
            ("200", "The project", Some(schema_ref("Project"))),
        ),
        Operation {
            body: Some(closed(
                json!({
                    "approvals": approval_mode_schema(false),
                    "tool_approvals": approvals_schema(),
                    "shell": shell_schema(shell),
                    "shell_quota": shell_quota_schema(),
                    "agents": agents_schema(),
                }),
                &[],
            )),
            ..op(
                "patch",
                "/api/projects/{projectId}",
                "Change a project's approval policy (`approvals`: `ask`, `unattended`, or null to follow the server's default), its per-tool policies (`tool_approvals`, null for none), `shell`, or its agents (`agents`, null for none; runs started later follow them). Runs follow an approval change at their next tool call; calls already waiting stay waiting. Other fields are refused (400).",
                ("200", "The project", Some(schema_ref("Project"))),
            )
        },
        Operation {
            extra: vec![conflict("An agent is running in the project")],
            ..op(
                "delete",
                "/api/projects/{projectId}",
                "Delete a project with its tasks and their agent runs (its folder stays on disk)",
                ("204", "Deleted", None),
            )
        },
        op(
            "get",
            "/api/projects/{projectId}/tasks",
            "A project's tasks",
            ("200", "Tasks", Some(array_of("Task"))),
        ),
        Operation {
            body: Some(object(
                json!({
                    "title": short_text(MAX_TITLE_CHARS),
                    "description": {
                        "type": ["string", "null"],
                        "description": "The start of the task's document, below the title (bounded by the request body limit)"
                    }
                }),
                &["title"],
            )),
            extra: vec![conflict("The project folder cannot be written")],
            ..op(
                "post",
                "/api/projects/{projectId}/tasks",
                "Create a task and its document",
                ("201", "The task", Some(schema_ref("Task"))),
            )
        },
        op(
            "get",
            "/api/tasks/{taskId}",
            "A task",
            ("200", "The task", Some(schema_ref("Task"))),
        ),
        Operation {
            extra: vec![conflict(
                "One of the task's agent runs is running or waiting (the error names it)",
            )],
            ..op(
                "delete",
                "/api/tasks/{taskId}",
                "Delete a task with its agent runs, their conversations and event logs (its document stays on disk)",
                ("204", "Deleted", None),
            )
        },
        Operation {
            extra: vec![conflict("The document cannot be read")],
            ..op(
                "get",
                "/api/tasks/{taskId}/document",
                "The task document",
                ("200", "The document", Some(schema_ref("Document"))),
            )
        },
        Operation {
            body: Some(object(json!({"content": {"type": "string"}}), &["content"])),
            extra: vec![conflict("The document cannot be written")],
            ..op(
                "put",
                "/api/tasks/{taskId}/document",
                "Replace the task document",
                ("200", "The document", Some(schema_ref("Document"))),
            )
        },
        Operation {
            body: Some(object(
                json!({"complete": {"type": "boolean"}}),
                &["complete"],
            )),
            ..op(
                "put",
                "/api/tasks/{taskId}/workflow-complete",
                "Set workflow_complete (Mark Done). Setting it to true force-completes the task's running and waiting agent runs: their model requests and tools stop at once (a waiting run's pending calls are each answered as cancelled), and each ends `completed` with `stopped_by: workflow_complete` and a `stop_message` — in the agent run, and in its terminal `finished` event, whose result is `complete` with the same `stopped_by` and `stop_message`, so it is not mistaken for a loop that finished on its own. The chain stops. Setting it to false changes no run.",
                (
                    "200",
                    "The new flag",
                    Some(object(
                        json!({"success": {"type": "boolean"}, "workflow_complete": {"type": "boolean"}}),
                        &["success", "workflow_complete"],
                    )),
                ),
            )
        },
        op(
            "get",
            "/api/tasks/{taskId}/agent-runs",
            "A task's agent runs, oldest first",
            ("200", "Agent runs", Some(array_of("AgentRun"))),
        ),
        Operation {
            body: Some(object(
                json!({"agentType": {"enum": AGENT_TYPES}}),
                &["agentType"],
            )),
            extra: vec![(
                "409",
                "An agent is already running for this task, or waiting for a decision (`runningAgent` names it); or the task is marked done (`runningAgent` null): no agent starts on a done task until it is reopened (`PUT /api/tasks/{taskId}/workflow-complete` with `complete: false`)",
                object(
                    json!({"error": {"type": "string"}, "runningAgent": {"oneOf": [schema_ref("AgentRun"), {"type": "null"}]}}),
                    &["error", "runningAgent"],
                ),
            )],
            ..op(
                "post",
                "/api/tasks/{taskId}/agent-runs",
                "Start an agent run (and its chain)",
                ("201", "The agent run", Some(schema_ref("AgentRun"))),
            )
        },
        op(
            "get",
            "/api/agent-runs/{runId}",
            "An agent run",
            ("200", "The agent run", Some(schema_ref("AgentRun"))),
        ),
        op(
            "get",
            "/api/agent-runs/{runId}/pending",
            "What the run waits for: the calls that need a person's approval and the questions it asked (empty unless the run is `waiting`), each with the decision recorded so far",
            (
                "200",
                "The run and its pending calls",
                Some(object(
                    json!({"agent_run": schema_ref("AgentRun"), "pending": array_of("PendingCall")}),
                    &["agent_run", "pending"],
                )),
            ),
        ),
        Operation {
            body: Some(closed(
                json!({"decisions": {"type": "array", "minItems": 1, "items": {"allOf": [schema_ref("Decision"), {"required": ["call_id"]}]}}}),
                &["decisions"],
            )),
            extra: vec![(
                "409",
                "The run is not waiting (`agentRun` says what it is), or a call was already decided",
                object(
                    json!({"error": {"type": "string"}, "agentRun": schema_ref("AgentRun")}),
                    &["error"],
                ),
            )],
            ..op(
                "post",
                "/api/agent-runs/{runId}/decisions",
                "Decide calls a waiting run waits on. Decisions may come one call at a time; each call is decided once. A call the run does not wait on, or a decision that does not fit the call (an answer to an approval, an approval of a question), is a 400 and nothing is recorded. Once every pending call is decided the run resumes as the same agent run (`resumed: true`, status `running`): approved calls run, rejected ones give the model an error result with the reason, answers become the question's result; when it completes the chain goes on.",
                (
                    "200",
                    "The run and its pending calls with their decisions",
                    Some(object(
                        json!({"agent_run": schema_ref("AgentRun"), "pending": array_of("PendingCall"), "resumed": {"type": "boolean"}}),
                        &["agent_run", "pending", "resumed"],
                    )),
                ),
            )
        },
        Operation {
            time_limited: false,
            body: Some(object(
                json!({
                    "threadId": {"type": "string", "minLength": 1},
                    "runId": {"type": "string", "minLength": 1},
                    "messages": {"type": "array", "items": {"type": "object"}},
                    "forwardedProps": {
                        "type": "object",
                        "properties": {"agentType": {"enum": AGENT_TYPES}}
                    },
                    "resume": {"type": "array", "items": {"anyOf": [
                        object(
                            json!({
                                "interruptId": {"type": "string"},
                                "status": {"enum": ["cancelled"]},
                                "payload": {"type": "object"}
                            }),
                            &["interruptId", "status"],
                        ),
                        object(
                            json!({
                                "interruptId": {"type": "string"},
                                "status": {"enum": ["resolved"]},
                                "payload": {"anyOf": [
                                    {
                                        "type": "object",
                                        "properties": {
                                            "approved": {"type": "boolean"},
                                            "arguments": {"type": "object"},
                                            "reason": {"type": "string"}
                                        },
                                        "required": ["approved"],
                                        "not": {"required": ["answer"]}
                                    },
                                    object(json!({"answer": {"type": "string"}}), &["answer"])
                                ]}
                            }),
                            &["interruptId", "status", "payload"],
                        )
                    ]}}
                }),
                &["threadId", "runId"],
            )),
            extra: vec![(
                "409",
                "Without `resume`: an agent is already running or waiting on this task (`runningAgent` names it). With `resume`: no agent run of this task waits for a decision, or a call was decided before",
                object(json!({"error": {"type": "string"}}), &["error"]),
            )],
            ..op(
                "post",
                "/api/tasks/{taskId}/ag-ui",
                "The task's agent runs for an AG-UI client. The body is AG-UI's `RunAgentInput` (other fields are ignored); the answer is `text/event-stream`, one AG-UI event per `data:` line. Without `resume` it starts an agent run (`forwardedProps.agentType`, `implementation` by default; the text of the last `user` message in `messages` is the request, given to the agent in the run's first message after its prompt), as `POST /api/tasks/{taskId}/agent-runs` does. With `resume` it decides the calls the task's waiting run waits on — each entry's `interruptId` is a call id; `status: cancelled` rejects the call; a resolved entry's `payload` is `{\"approved\": bool, \"arguments\"?, \"reason\"?}` for an approval or `{\"answer\": string}` for a question; every waiting call must be answered (else a 400, the decisions given being kept) — and follows the run from there. `tools` are front-end tools (at most 64; a name of 1 to 64 letters, digits, `_` or `-`, not one of the agent's own tools; `parameters` an object schema): the model is offered them, and a call of one makes the run wait; the AG-UI run then ends `success` with `pendingToolCallIds`, and the client answers each call with a `tool` message (`toolCallId`, `content`, optional `error`) among the `messages` of its next request, which resumes the run (the tools a run offers are those its first request declared). The stream opens with `RUN_STARTED` (the input's `threadId` and `runId`), a `STATE_SNAPSHOT` — the input's `state` object with the run's progress under `agentloop`: `status`, `turn`, `agent`, `usage` — kept current by `STATE_DELTA` patches (none when `state` is no object), and a `CUSTOM` event `agentloop.agent_run` naming the agent run; a model turn is a step; text, thinking and tool calls stream as messages, reasoning and tool calls; tool results are `TOOL_CALL_RESULT`; other agentloop events come whole as `CUSTOM` `agentloop.<kind>`. It ends with `RUN_FINISHED` (outcome `success`, `cancelled`, or `interrupt` with one interrupt per waiting call: `id` the call id, `reason` `tool_approval` or `question`) or `RUN_ERROR` (`code` the agentloop status or error kind).",
                ("200", "The AG-UI event stream", None),
            )
        },
        op(
            "get",
            "/api/agent-runs/{runId}/messages",
            "The run's stored messages",
            (
                "200",
                "Messages, oldest first",
                Some(json!({"type": "array", "items": {"type": "object"}})),
            ),
        ),
        Operation {
            time_limited: false,
            ..op(
                "get",
                "/api/agent-runs/{runId}/events",
                "The run's events as `text/event-stream` (`id:` is the event's seq; send `Last-Event-ID` to resume after it). The stream closes after the run's terminal `finished` event (its `result.status` is the loop's: `complete`, `cancelled`, `error`, …; a run a person stopped says who in `result.stopped_by` and `result.stop_message`: `cancel` for a cancelled run, `workflow_complete` for one Mark Done force-completed, whose status is then `complete`), or when the run starts waiting for a person (its `finished` event then has status `suspended`); once decisions resume it, the log goes on after that event, so reconnecting with `Last-Event-ID` shows the rest.",
                ("200", "The event stream", None),
            )
        },
        Operation {
            extra: vec![(
                "409",
                "The run already ended",
                object(
                    json!({"error": {"type": "string"}, "agentRun": schema_ref("AgentRun")}),
                    &["error", "agentRun"],
                ),
            )],
            ..op(
                "post",
                "/api/agent-runs/{runId}/cancel",
                "Cancel a running or waiting agent run: its model request and tools stop at once (a waiting run's pending calls are each answered as cancelled), it ends `cancelled`, and the chain stops.",
                (
                    "200",
                    "The agent run, now cancelled",
                    Some(schema_ref("AgentRun")),
                ),
            )
        },
        op(
            "get",
            "/api/projects/{projectId}/webhooks",
            "The project's webhooks: the URLs, the events they hear and the signing secret; a 404 when none are registered",
            ("200", "The webhooks", Some(schema_ref("Webhooks"))),
        ),
        Operation {
            body: Some(closed(
                json!({
                    "urls": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 2048, "pattern": "^https?://[A-Za-z0-9._~-]+(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4}))?([/?#].*)?$"}, "description": "Absolute http(s) URLs with a host name or IPv4 address (or a bracketed IPv6 address) and no user info. Deliveries reach only public addresses unless the operator allows private ones (`agentloop serve --webhooks-allow-private`)."},
                    "events": {"type": ["array", "null"], "items": {"enum": crate::webhooks::EVENTS}, "description": "The events to hear (all when left out)"},
                    "rotate_secret": {"type": ["boolean", "null"], "description": "Make a new signing secret (the first registration always makes one)"}
                }),
                &["urls"],
            )),
            ..op(
                "put",
                "/api/projects/{projectId}/webhooks",
                "Register the project's webhooks, replacing the URLs and events. Each delivery is a POST of a JSON `WebhookEvent`, with `x-agentloop-event`, `x-agentloop-delivery` (an id, the same on every attempt), `x-agentloop-timestamp` (Unix seconds) and `x-agentloop-signature: sha256=<hex HMAC-SHA256 with the secret over \"{timestamp}.{body}\">`; an answer other than 2xx, or none in time, is retried with backoff.",
                ("200", "The webhooks", Some(schema_ref("Webhooks"))),
            )
        },
        op(
            "delete",
            "/api/projects/{projectId}/webhooks",
            "Remove the project's webhooks and their secret",
            ("204", "Removed", None),
        ),
        op(
            "get",
            "/api/projects/{projectId}/webhook-deliveries",
            "The project's last 100 webhook deliveries (made by any instance sharing the store, kept across restarts), oldest first, with every attempt",
            (
                "200",
                "The deliveries",
                Some(schema_ref("WebhookDeliveries")),
            ),
        ),
        Operation {
            access: Access::BearerOrQuery,
            time_limited: false,
            extra: vec![(
                "400",
                "Not a WebSocket upgrade request",
                schema_ref("Error"),
            )],
            ..op(
                "get",
                "/api/ws",
                "WebSocket of the caller's notices (`streaming-started`, `streaming-ended`, `agent-run-status`, and `agent-run-waiting` with `taskId`, `agentRunId`, `agentType` and `pending` when a run starts waiting for a person) as JSON text messages; a socket that falls more than 1,024 notices behind gets `notices-missed` in place of those it missed, and should read its runs again",
                ("101", "Switching protocols", None),
            )
        },
    ]
}

/// The `approvals` field of a project's create or change body: the
/// project's approval policy (the create body also takes per-tool
/// policies there, as `tool_approvals`, as it did before the policy).
fn approval_mode_schema(on_create: bool) -> Value {
    let description = "The project's approval policy: `unattended` (its runs' fs writes and JavaScript calls run without asking; the fs tool is jailed to the project folder, JavaScript is sandboxed), `ask` (they wait for a person's decision), or null to follow the server's default (`agentloop serve --approvals`, `unattended` unless the operator says otherwise). Tools it does not cover (MCP servers' tools, `minion`) keep their own rule. Any other value is refused (400).";
    let mode = json!({"enum": ["ask", "unattended", null]});
    if on_create {
        json!({
            "description": format!("{description} An object is taken as `tool_approvals`."),
            "anyOf": [mode, approvals_schema()]
        })
    } else {
        let mut mode = mode;
        mode["description"] = json!(description);
        mode
    }
}

/// The `agents` setting of a project: specialists, and whom each agent
/// (the server's own among them) hands off to.
fn agents_schema() -> Value {
    let name = json!({"type": "string", "pattern": "^[A-Za-z0-9_-]{1,48}$"});
    let mut specialist = json!({
        "description": {"type": "string", "description": "What it is for, as a model handing to it reads it"},
        "handoffs": {"type": "array", "items": name, "description": "The agents it may hand the conversation to: declared here or the server's"},
        "history": {"enum": ["full", "text_only", "last_user_message"], "description": "What of the history before a handoff to it it sees (default full)"}
    });
    // The server's own agents keep the server's instructions and model.
    let server_agent = closed(specialist.clone(), &[]);
    specialist["instructions"] =
        json!({"type": "string", "description": "A specialist's system prompt"});
    specialist["model"] =
        json!({"type": "string", "description": "A specialist's model (default: the run's)"});
    json!({
        "type": ["object", "null"],
        "description": "The project's agents and their handoffs (null or {} for none). A key names an agent: one of the server's agents (`planification`, `implementation`, `review`), which may set only `handoffs`, `description` and `history`, or a specialist with its own `instructions` and `model`. An agent that hands off offers the model one `transfer_to_{name}` tool per target; taking it, the same run goes on with the target (the run's tools, the target's instructions and model, the history filtered by its `history`), and the run's events say who speaks (`streaming_start.agent`, `handoff`). A run takes at most 8 handoffs (a cycle then ends it `limit_exceeded`, limit `handoffs`). Refused (400): a bad name, unknown fields, `instructions` or `model` on a server agent, a handoff to an agent neither declared nor the server's. A handoff to another of the server's agents than the run's own is not offered.",
        "propertyNames": name,
        "properties": {
            "planification": server_agent.clone(),
            "implementation": server_agent.clone(),
            "review": server_agent,
        },
        "additionalProperties": closed(specialist, &[])
    })
}

/// The `tool_approvals` setting of a project: a policy per tool name.
fn approvals_schema() -> Value {
    let argument_match = closed(
        json!({"pointer": {"type": "string"}, "any_of": {"type": "array"}}),
        &["pointer", "any_of"],
    );
    json!({
        "type": ["object", "null"],
        "description": "Which tool calls of the project's runs wait for a person's approval, by tool name (`*`: every tool without an entry); these win over the project's `approvals` policy. A policy is `never`, `always`, `{\"when\": {\"pointer\": \"/command\", \"any_of\": [...]}}` (calls whose argument matches wait) or `{\"unless\": ...}` (calls whose argument does not match wait). Tools without an entry follow the project's `approvals` policy for the fs tool and JavaScript, and keep their own default otherwise (the calls of MCP tools their server does not declare read-only wait).",
        "additionalProperties": {"oneOf": [
            {"enum": ["never", "always"]},
            closed(json!({"when": argument_match}), &["when"]),
            closed(json!({"unless": argument_match}), &["unless"]),
        ]}
    })
}

fn schemas() -> Value {
    let call_id = json!({"type": "string", "minLength": 1});
    let timestamp = json!({"type": "string", "format": "date-time"});
    let nullable_timestamp = json!({"type": ["string", "null"], "format": "date-time"});
    let reason = object(
        json!({"kind": {"type": "string"}, "message": {"type": "string"}}),
        &["kind", "message"],
    );
    json!({
        "Error": object(json!({"error": {"type": "string"}}), &["error"]),
        "Session": object(json!({"user": schema_ref("User"), "csrf": {"type": "string"}}), &["user", "csrf"]),
        "User": object(json!({"id": {"type": "string"}, "name": {"type": "string"}, "created_at": {"type": "integer"}}), &["id", "name", "created_at"]),
        "Project": object(json!({
            "id": {"type": "string"}, "name": {"type": "string"},
            "repo_folder": {"type": ["string", "null"]}, "model": {"type": ["string", "null"]},
            "approvals": {"enum": ["ask", "unattended"], "description": "The approval policy the project's runs follow: `unattended` (fs writes and JavaScript calls run without asking, jailed to the project folder and sandboxed) or `ask` (they wait for a person's decision)"},
            "approvals_source": {"enum": ["project", "server"], "description": "Whether the project sets `approvals` or follows the server's default (`agentloop serve --approvals`)"},
            "tool_approvals": {"type": "object", "description": "The project's approval policies by tool name, which win over `approvals` (see `tool_approvals` of the create body)"},
            "shell": {"type": "boolean", "description": "Whether the project's runs get the sandboxed `shell` tool"},
            "shell_quota": shell_quota_schema(),
            "agents": {"type": "object", "description": "The project's agents and their handoffs (see `agents` of the create body)"},
            "created_at": timestamp, "updated_at": timestamp
        }), &["id", "name", "repo_folder", "model", "approvals", "approvals_source", "tool_approvals", "shell", "shell_quota", "agents", "created_at", "updated_at"]),
        "Task": object(json!({
            "id": {"type": "string"}, "project_id": {"type": "string"}, "title": {"type": "string"},
            "workflow_complete": {"type": "boolean"}, "document_path": {"type": "string"},
            "created_at": timestamp, "updated_at": timestamp
        }), &["id", "project_id", "title", "workflow_complete", "document_path", "created_at", "updated_at"]),
        "Document": object(json!({"path": {"type": "string"}, "content": {"type": "string"}}), &["path", "content"]),
        "AgentRun": object(json!({
            "id": {"type": "string"}, "task_id": {"type": "string"},
            "agent_type": {"enum": AGENT_TYPES},
            "status": {"description": "`waiting`: the run waits for a person (approvals or answers, see `pending`); it holds its task's one active slot until decided or cancelled", "enum": ["running", "waiting", "completed", "failed", "cancelled"]},
            "conversation_id": {"type": ["string", "null"]},
            "created_at": timestamp, "completed_at": nullable_timestamp,
            "error": {"description": "Why a failed run failed", "oneOf": [reason, {"type": "null"}]},
            "stopped_by": {"description": "Who stopped the run before its loop ended: `cancel` (a person cancelled it; it is `cancelled`) or `workflow_complete` (Mark Done force-completed it; it is `completed`). Null for a run whose loop ended on its own.", "enum": ["cancel", "workflow_complete", null]},
            "stop_message": {"type": ["string", "null"]},
            "pending": {"description": "What a waiting run waits for (only when `waiting`)", "type": "array", "items": schema_ref("PendingCall")},
            "tokens": {"description": "Tokens and cost the run spent so far (`input_tokens`, `output_tokens`, `cost` in USD, …); null before its conversation exists. Listed and single runs carry it; the answers of create and cancel do not.", "type": ["object", "null"]}
        }), &["id", "task_id", "agent_type", "status", "conversation_id", "created_at", "completed_at", "error", "stopped_by", "stop_message"]),
        "PendingCall": object(json!({
            "call_id": {"type": "string"},
            "tool": {"type": "string"},
            "arguments": {"description": "The call's arguments as the model made them"},
            "kind": {"enum": ["approval", "question"]},
            "reason": {"type": "string", "description": "Why an approval is needed (kind `approval`)"},
            "question": {"type": "string", "description": "What the agent asks (kind `question`)"},
            "path": {"type": "array", "items": {"type": "string"}, "description": "Tool-call ids leading to the nested run (a minion's, a skill's) that made the call; empty for the run's own calls"},
            "decision": {"description": "The decision recorded so far, or null", "oneOf": [schema_ref("Decision"), {"type": "null"}]}
        }), &["call_id", "tool", "arguments", "kind", "path", "decision"]),
        "Webhooks": object(json!({
            "urls": {"type": "array", "items": {"type": "string"}},
            "events": {"type": "array", "items": {"enum": crate::webhooks::EVENTS}},
            "secret": {"type": ["string", "null"], "description": "The HMAC-SHA256 key deliveries are signed with"}
        }), &["urls", "events", "secret"]),
        "WebhookDeliveries": object(json!({"deliveries": {"type": "array", "items": object(json!({
            "id": {"type": "string"}, "event": {"enum": crate::webhooks::EVENTS}, "url": {"type": "string"},
            "state": {"enum": ["pending", "delivered", "failed"]},
            "attempts": {"type": "array", "items": object(json!({
                "at": timestamp, "status": {"type": "integer", "description": "The receiver's HTTP status"},
                "error": {"type": "string", "description": "Why the attempt failed (no answer in time, a refused address, ...)"}
            }), &["at"])}
        }), &["id", "event", "url", "state", "attempts"])}}), &["deliveries"]),
        "WebhookEvent": object(json!({
            "event": {"enum": crate::webhooks::EVENTS, "description": "`run.ended` (an agent run completed, failed or was cancelled), `run.waiting` (it waits for a person), `chain.completed` (a run completed and its task's workflow is complete)"},
            "at": timestamp, "project_id": {"type": "string"}, "task_id": {"type": "string"},
            "agent_run_id": {"type": "string"}, "agent_type": {"enum": AGENT_TYPES},
            "status": {"enum": ["waiting", "completed", "failed", "cancelled"]}
        }), &["event", "at", "project_id", "task_id", "agent_run_id", "agent_type", "status"]),
        "Decision": {
            "description": "A decision on one pending call (`call_id` in a request; left out where a call's recorded decision is shown). `approve` (optionally with edited `arguments`, a JSON object), `approve_always` (this call and every later call of the same tool in this run), `reject` (with a `reason` the model reads; a default one when left out), `answer` (a question's answer `text`).",
            "oneOf": [
                closed(json!({"call_id": call_id, "decision": {"const": "approve"}, "arguments": {"type": ["object", "null"]}}), &["decision"]),
                closed(json!({"call_id": call_id, "decision": {"const": "approve_always"}}), &["decision"]),
                closed(json!({"call_id": call_id, "decision": {"const": "reject"}, "reason": {"type": ["string", "null"]}}), &["decision"]),
                closed(json!({"call_id": call_id, "decision": {"const": "answer"}, "text": {"type": "string", "pattern": "\\S", "description": "The answer; refused when empty or only spaces (reject the question to leave it unanswered)"}}), &["decision", "text"]),
            ]
        },
    })
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
fn links(method: &str, path: &str, all: &[(&str, &str)]) -> Option<Value> {
    let param = created_id(method, path)?;
    let mut links = Map::new();
    for (target_method, target_path) in all {
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
fn too_many_requests() -> Value {
    json!({
        "description": "Too many requests from this client (the user a valid token names, else the address it comes from: the peer, or the client a trusted proxy names in `X-Forwarded-For`); try again after `Retry-After` seconds",
        "headers": {
            "Retry-After": {
                "description": "Whole seconds until a request will be accepted again",
                "required": true,
                "schema": { "type": "integer", "minimum": 1 }
            }
        },
        "content": { "application/json": { "schema": schema_ref("Error") } }
    })
}

const TOO_MANY_REQUESTS: &str = "#/components/responses/TooManyRequests";

fn describe(operation: Operation, all: &[(&str, &str)], rate_limited: bool) -> Value {
    let params = path_params(operation.path);
    let mut responses = Map::new();
    let (code, description, schema) = operation.success;
    let mut success = response(description, schema);
    if let Some(links) = links(operation.method, operation.path, all) {
        success["links"] = links;
    }
    responses.insert(code.into(), success);
    let mut error = |code: &str, description: &str| {
        responses
            .entry(code)
            .or_insert_with(|| response(description, Some(schema_ref("Error"))));
    };
    if !params.is_empty() {
        error("400", "A malformed id");
        error("404", "Not found, or not the caller's");
    }
    if operation.body.is_some() {
        error("400", "A malformed or invalid body");
        error("413", "The body is too large");
    }
    if operation.access != Access::Public {
        error("401", "Missing or invalid bearer token");
    }
    if operation.time_limited {
        error("408", "The request took too long");
    }
    error("default", "An unexpected error");
    if rate_limited && operation.rate_limited {
        responses.insert("429".into(), json!({ "$ref": TOO_MANY_REQUESTS }));
    }
    for (code, description, schema) in operation.extra {
        responses.insert(code.into(), response(description, Some(schema)));
    }
    let mut out = Map::new();
    out.insert("summary".into(), json!(operation.summary));
    out.insert(
        "operationId".into(),
        json!(operation_id(operation.method, operation.path)),
    );
    let mut parameters: Vec<Value> = params
        .iter()
        .map(|name| {
            json!({
                "name": name, "in": "path", "required": true,
                "schema": { "type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$" }
            })
        })
        .collect();
    if operation.access == Access::BearerOrQuery {
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
    if operation.path.ends_with("/events") {
        parameters.push(json!({
            "name": "Last-Event-ID", "in": "header", "required": false,
            "schema": { "type": "string", "pattern": "^[0-9]+$" }
        }));
    }
    if !parameters.is_empty() {
        out.insert("parameters".into(), Value::Array(parameters));
    }
    match operation.access {
        Access::Public => {
            out.insert("security".into(), json!([]));
        }
        Access::BearerOrQuery => {
            out.insert(
                "security".into(),
                json!([{ "bearer": [] }, { "queryToken": [] }]),
            );
        }
        Access::Bearer => {}
    }
    if let Some(schema) = operation.body {
        out.insert(
            "requestBody".into(),
            json!({ "required": true, "content": { "application/json": { "schema": schema } } }),
        );
    }
    out.insert("responses".into(), Value::Object(responses));
    Value::Object(out)
}

/// `POST /a2a`, which speaks JSON-RPC (its errors are JSON-RPC answers
/// with HTTP 200), so it is described in an extension, not under `paths`.
fn a2a(rate_limited: bool) -> Value {
    let mut described = json!({
        "/a2a": {
            "post": {
                "summary": "A2A 1.0 over JSON-RPC 2.0: the caller's agent runs as A2A tasks",
                "description": "One JSON-RPC request per POST (no batches); send `A2A-Version: 1.0` (a missing header is read as 1.0, another major version is error -32009). Authentication and body size as for the API: 401 without a valid bearer token (or session cookie with `x-csrf-token`), 413 over the body limit; every other error is a JSON-RPC error answer. An A2A task is one agent run (`id` = agent run id) and its `contextId` the agentloop task. `SendMessage` without `message.taskId` starts a run: with `message.contextId` a new run of that task (the text is added to its document), otherwise a new task in the project named by `tenant` (the first text line is its title, the text its document); either way the run's first message carries the text after the agent's prompt; `metadata.agentType` picks the agent (`implementation` by default). It answers `{\"task\": Task}` once the run ends or needs input (`configuration.returnImmediately`: at once). A message with `taskId` answers an input-required task: a data part `{\"decisions\": [{\"call_id\", \"decision\": \"approve\"|\"approve_always\"|\"reject\"|\"answer\", ...}]}` as `POST /api/agent-runs/{runId}/decisions` takes, or text when one call waits (`approve`, `reject[: reason]`, or the answer). `SendStreamingMessage` and `SubscribeToTask` answer `text/event-stream`, each `data:` a JSON-RPC answer whose result is a `StreamResponse` (`task`, then `statusUpdate`s while working, then `artifactUpdate`s and the last `statusUpdate`); the stream ends when the task ends or needs input. `GetTask` reads a task; `CancelTask` stops its run (-32002 when it has ended). States: `TASK_STATE_WORKING`, `TASK_STATE_INPUT_REQUIRED` (the status message lists the waiting calls), `TASK_STATE_COMPLETED` (artifacts `answer`, text, and `output`, the structured output), `TASK_STATE_FAILED`, `TASK_STATE_CANCELED`. Another user's task, or an unknown id, is -32001 Task not found. A2A 0.3's methods are served on the same endpoint (the method name tells the version; `A2A-Version`, when sent, must match it): `message/send`, `message/stream`, `tasks/get`, `tasks/cancel`, `tasks/resubscribe` are handled as their 1.0 counterparts and answered in 0.3's shapes: objects tagged `kind` (`task`, `message`, `status-update` with `final`, `artifact-update`), parts `{\"kind\": \"text\"|\"data\"|\"file\", ...}`, states `working`, `input-required`, `completed`, `failed`, `canceled`, roles `user`/`agent`, `configuration.blocking: false` as `returnImmediately`; 0.3 has no tenant, so a new task's project is `metadata.tenant` (of the message or the request). 1.0's errors -32008 and -32009 are -32600 in 0.3.",
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
                    "content": { "application/json": { "schema": object(
                        json!({
                            "jsonrpc": {"const": "2.0"},
                            "id": {"type": ["string", "integer", "null"]},
                            "method": {"type": "string"},
                            "params": {"type": "object"}
                        }),
                        &["jsonrpc", "method"],
                    ) } }
                },
                "responses": {
                    "200": { "description": "A JSON-RPC answer (`application/json`), or for the streaming methods `text/event-stream`" },
                    "401": { "description": "Not authenticated" },
                    "413": { "description": "The body is over the limit" }
                }
            }
        }
    });
    if rate_limited {
        described["/a2a"]["post"]["responses"]["429"] = json!({ "$ref": TOO_MANY_REQUESTS });
    }
    described
}

/// The OpenAPI document of a server offering `offers`.
pub fn document(offers: Offers) -> Value {
    let operations = operations(offers);
    let all: Vec<(&str, &str)> = operations.iter().map(|o| (o.method, o.path)).collect();
    let mut paths = Map::new();
    let mut websockets = Map::new();
    for operation in operations {
        let (method, path) = (operation.method, operation.path);
        // OpenAPI has no words for a WebSocket: its route is described the
        // same way, in an extension, so HTTP clients and fuzzers skip it.
        let target = if operation.access == Access::BearerOrQuery {
            &mut websockets
        } else {
            &mut paths
        };
        let described = describe(operation, &all, offers.rate_limited);
        let entry = target
            .entry(path)
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(methods) = entry {
            methods.insert(method.into(), described);
        }
    }
    json!({
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
            "schemas": schemas(),
            "responses": { "TooManyRequests": too_many_requests() }
        },
        "security": [{ "bearer": [] }, { "sessionCookie": [] }],
        "paths": paths,
        "x-websockets": websockets,
        "x-a2a": a2a(offers.rate_limited),
        "x-mcp": {
            "path": "/mcp",
            "transport": "MCP streamable HTTP",
            "description": "The caller's projects as MCP tools, behind the same authentication as the API (a bearer token, or the session cookie with its CSRF header); each tool answers as its route does, for the caller's own projects, tasks and runs only.",
            "tools": ["list_projects", "list_tasks", "create_task", "start_agent_run", "get_agent_run"]
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_route_is_described_once() {
        let doc = super::document(super::Offers::default());
        for (method, path) in super::super::ROUTES {
            assert!(
                doc["paths"][*path][*method].is_object()
                    || doc["x-websockets"][*path][*method].is_object()
                    || doc["x-a2a"][*path][*method].is_object(),
                "{method} {path} is missing from the OpenAPI document"
            );
        }
        let described: usize = ["paths", "x-websockets", "x-a2a"]
            .iter()
            .filter_map(|section| doc[*section].as_object())
            .flat_map(|paths| paths.values())
            .filter_map(|p| p.as_object())
            .map(|p| p.len())
            .sum();
        assert_eq!(described, super::super::ROUTES.len());
    }

    #[test]
    fn a_rate_limited_server_documents_429_on_every_route_but_health_and_an_unlimited_one_nowhere()
    {
        for rate_limited in [true, false] {
            let doc = super::document(super::Offers {
                rate_limited,
                ..super::Offers::default()
            });
            for (method, path) in super::super::ROUTES {
                let operation = ["paths", "x-websockets", "x-a2a"]
                    .iter()
                    .map(|section| &doc[*section][*path][*method])
                    .find(|o| o.is_object())
                    .unwrap_or_else(|| panic!("{method} {path} undescribed"));
                let answer = &operation["responses"]["429"];
                if rate_limited && *path != "/api/health" {
                    assert_eq!(answer["$ref"], super::TOO_MANY_REQUESTS, "{method} {path}");
                } else {
                    assert!(answer.is_null(), "{method} {path}");
                }
            }
            let shared = &doc["components"]["responses"]["TooManyRequests"];
            assert_eq!(shared["headers"]["Retry-After"]["required"], true);
        }
    }
}
