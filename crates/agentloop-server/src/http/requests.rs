//! The request bodies of the API, one type each, as they arrive on the
//! wire (seed 004's names: `agentType`, `repoFolder`, ...). Deserializing
//! checks the shape; what depends on the server or the store (a folder, a
//! project MCP server, a length) is checked by the use case after.
//!
//! A body the server owns refuses unknown fields; the bodies seed 004
//! and earlier clients send (a run's start, a task, a project, a sign-in,
//! a document, Mark Done) ignore them, as they always have.

use agentloop_storage::model::{AgentType, ApprovalMode};
use schemars::JsonSchema;
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::error::ApiError;

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
fn from_object<'de, D: Deserializer<'de>, T: DeserializeOwned>(
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

/// One of the server's agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentName {
    /// Plans with a person: no chaining.
    Planification,
    /// Implements; chains to `review`.
    Implementation,
    /// Reviews; chains to `implementation`.
    Review,
}

impl From<AgentName> for AgentType {
    fn from(name: AgentName) -> Self {
        match name {
            AgentName::Planification => Self::Planification,
            AgentName::Implementation => Self::Implementation,
            AgentName::Review => Self::Review,
        }
    }
}

/// The message of a start without a valid agent type (seed 004's).
pub const INVALID_AGENT_TYPE: &str =
    "Invalid agent type. Must be one of: planification, implementation, review";

/// `POST /api/tasks/{taskId}/agent-runs`: which agent to start.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct NewAgentRun {
    /// The agent to start.
    #[serde(rename = "agentType")]
    pub agent_type: AgentName,
}

impl RequestBody for NewAgentRun {
    fn refused(_: String) -> ApiError {
        ApiError::bad_request(INVALID_AGENT_TYPE)
    }
}

/// `POST /api/tasks/{taskId}/inputs` and `POST /api/agent-runs/{runId}/inputs`:
/// a [`RunInput`](agentloop_types::RunInput), the same typed input every
/// host submits (its schema is `docs/inputs.schema.json`'s).
impl RequestBody for agentloop_types::RunInput {
    /// The body is checked against `RunInput`'s own JSON Schema (the one
    /// the OpenAPI document and `docs/inputs.schema.json` give): serde takes
    /// a variant's index for a tag (`"kind": 0`), which the schema refuses.
    /// The variant its `type` names is checked alone, so the refusal names
    /// the field at fault; an unknown `type` is left to serde's refusal.
    fn check(body: &serde_json::Value) -> Result<(), String> {
        static VARIANTS: std::sync::LazyLock<Result<Vec<(String, jsonschema::Validator)>, String>> =
            std::sync::LazyLock::new(input_variants);
        let variants = VARIANTS
            .as_ref()
            .map_err(|e| format!("the input schema cannot be read: {e}"))?;
        let tag = InputTag::deserialize(body).ok().and_then(|tag| tag.kind);
        let Some((_, validator)) = variants
            .iter()
            .find(|(name, _)| Some(name.as_str()) == tag.as_deref())
        else {
            return Ok(());
        };
        match validator.iter_errors(body).next() {
            None => Ok(()),
            Some(error) => Err(format!("{}: {error}", error.instance_path())),
        }
    }
}

/// The tag of an input body, read alone to pick its variant's schema
/// (absent or not a string: no variant is picked).
#[derive(Deserialize)]
struct InputTag {
    #[serde(rename = "type")]
    kind: Option<String>,
}

/// A validator of each `RunInput` variant, by its `type`, from the
/// schema's `oneOf` (each with the schema's shared definitions).
fn input_variants() -> Result<Vec<(String, jsonschema::Validator)>, String> {
    let schema = serde_json::to_value(schemars::schema_for!(agentloop_types::RunInput))
        .map_err(|e| e.to_string())?;
    let defs = schema.get("$defs").cloned().unwrap_or_default();
    let variants = schema
        .get("oneOf")
        .and_then(serde_json::Value::as_array)
        .ok_or("it has no variants")?;
    variants
        .iter()
        .map(|variant| {
            let name = variant
                .pointer("/properties/type/const")
                .and_then(serde_json::Value::as_str)
                .ok_or("a variant has no `type`")?
                .to_owned();
            let mut alone = variant.clone();
            if let Some(object) = alone.as_object_mut() {
                object.insert("$defs".to_owned(), defs.clone());
            }
            let validator = jsonschema::validator_for(&alone).map_err(|e| e.to_string())?;
            Ok((name, validator))
        })
        .collect()
}

/// `PUT /api/tasks/{taskId}/workflow-complete`: Mark Done, or undo it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct WorkflowComplete {
    /// `true` stops the task's loop and force-completes its active runs;
    /// `false` lets it run again.
    pub complete: bool,
}

impl RequestBody for WorkflowComplete {
    fn refused(_: String) -> ApiError {
        ApiError::bad_request("complete must be a boolean")
    }
}

/// `POST /api/projects/{projectId}/tasks`: a new task.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct NewTask {
    /// The task's title: at most 500 characters, not only white space.
    #[schemars(required, with = "String", length(max = 500), pattern(r"\S"))]
    pub title: Option<String>,
    /// The start of the task's document, below the title (bounded by the
    /// request body limit).
    pub description: Option<String>,
}

impl RequestBody for NewTask {}

/// `PUT /api/tasks/{taskId}/document`: the task document's new content.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct TaskDocumentContent {
    /// The whole document.
    pub content: String,
}

impl RequestBody for TaskDocumentContent {}

/// `POST /api/session`: a bearer token to exchange for a session cookie.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct SignIn {
    /// The user's API token.
    #[schemars(pattern(r"\S"))]
    pub token: String,
}

impl RequestBody for SignIn {
    fn refused(_: String) -> ApiError {
        ApiError::bad_request("`token` (a string) is required")
    }
}

const APPROVALS_ALLOWED: &str = "approvals must be \"ask\", \"unattended\" or null (follow the \
server's default); per-tool policies go in tool_approvals";

/// A project's `approvals`: a mode, or (at creation, as before the mode
/// existed) per-tool policies.
#[derive(Debug, Clone, PartialEq)]
pub enum Approvals {
    /// `"ask"` or `"unattended"`.
    Mode(ApprovalMode),
    /// Per-tool policies, as `tool_approvals` takes them.
    PerTool(ToolApprovals),
}

impl Approvals {
    /// The message refusing per-tool policies where only a mode goes.
    pub const MODE_ONLY: &'static str = APPROVALS_ALLOWED;
}

impl<'de> Deserialize<'de> for Approvals {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(name) => ApprovalMode::parse(&name)
                .map(Self::Mode)
                .ok_or_else(|| D::Error::custom(format!("{APPROVALS_ALLOWED}, not {name:?}"))),
            value @ Value::Object(_) => ToolApprovals::check(value, "approvals")
                .map(Self::PerTool)
                .map_err(D::Error::custom),
            _ => Err(D::Error::custom(APPROVALS_ALLOWED)),
        }
    }
}

impl JsonSchema for Approvals {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Approvals".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "The approval policy: `ask` (a person approves each call the policy marks) or `unattended`; null follows the server's default. At creation an object is taken too, as per-tool policies (what `tool_approvals` takes).",
            "oneOf": [
                { "type": "string", "enum": ["ask", "unattended"] },
                { "type": "object" }
            ]
        })
    }
}

/// Per-tool approval policies (checked as the runtime reads them, kept as
/// sent).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct ToolApprovals(pub Value);

impl ToolApprovals {
    fn check(value: Value, field: &str) -> Result<Self, String> {
        serde_json::from_value::<agentloop_types::ApprovalPolicies>(value.clone())
            .map_err(|e| format!("{field}: {e}"))?;
        Ok(Self(value))
    }
}

impl<'de> Deserialize<'de> for ToolApprovals {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Self::check(Value::deserialize(deserializer)?, "tool_approvals").map_err(D::Error::custom)
    }
}

impl JsonSchema for ToolApprovals {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ToolApprovals".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "description": "Per-tool approval policies, by tool name (`*` for any other tool).",
            "additionalProperties": true
        })
    }
}

/// A project's own bounds on what one `shell` command may write: each
/// only lowers the server's `[shell]` quota, and a command past either is
/// stopped with a result naming it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShellQuota {
    /// Most megabytes one command may write (from 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_write_mb: Option<u64>,
    /// Most files one command may write (from 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_write_files: Option<u64>,
}

/// The fields of a [`ShellQuota`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ShellQuotaFields {
    max_write_mb: Option<u64>,
    max_write_files: Option<u64>,
}

impl<'de> Deserialize<'de> for ShellQuota {
    /// An object only (serde would take a struct from an array too).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let fields: ShellQuotaFields = from_object(deserializer)?;
        Ok(Self {
            max_write_mb: fields.max_write_mb,
            max_write_files: fields.max_write_files,
        })
    }
}

/// A project's own bounds on its tasks' chains of agent runs (see
/// [`crate::chain_bounds`]); an absent bound is the server's (runs) or
/// none (tokens, cost).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChainLimits {
    /// Most agent runs in one chain (from 1; absent: the server's).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_runs: Option<u64>,
    /// Most tokens one chain may spend (from 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_tokens: Option<u64>,
    /// Most US dollars one chain may cost (above 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
}

/// The fields of a [`ChainLimits`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChainLimitsFields {
    max_runs: Option<u64>,
    max_tokens: Option<u64>,
    max_cost_usd: Option<f64>,
}

impl<'de> Deserialize<'de> for ChainLimits {
    /// An object only.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let fields: ChainLimitsFields = from_object(deserializer)?;
        Ok(Self {
            max_runs: fields.max_runs,
            max_tokens: fields.max_tokens,
            max_cost_usd: fields.max_cost_usd,
        })
    }
}

/// `GET /api/audit`: which entries of the audit log to read.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    /// Only this project's (one you own): every user's actions on it.
    /// Without it, your own actions.
    pub project_id: Option<String>,
    /// Only this user's (another user's only with `project_id`).
    pub user_id: Option<String>,
    /// Only at or after this time (Unix milliseconds).
    pub since: Option<i64>,
    /// Only before this time (Unix milliseconds).
    pub until: Option<i64>,
    /// At most this many, the newest (1 to 1000; 100 by default).
    pub limit: Option<u32>,
}

/// An open JSON object, checked by the use case that takes it (a
/// project's MCP servers, its agents).
pub type Object = Map<String, Value>;

/// `POST /api/projects`: a new project.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct NewProject {
    /// The project's name: at most 500 characters, not only white space.
    #[schemars(required, with = "String", length(max = 500), pattern(r"\S"))]
    pub name: Option<String>,
    /// The project's folder. Relative paths are taken inside the server's
    /// projects folder; absolute ones must lie inside it. Refused (400,
    /// nothing created): `..` components, symbolic links anywhere below the
    /// projects folder, a path through a file, the projects folder itself.
    /// Refused (409): a folder equal to, inside, or around another
    /// project's folder, or one a deleted project of another user left
    /// behind. (`repo_folder` is taken too.)
    #[serde(rename = "repoFolder", alias = "repo_folder")]
    #[schemars(required, with = "String", pattern(r"^[^\u0000]*\S[^\u0000]*$"))]
    pub repo_folder: Option<String>,
    /// The model its runs use (at most 200 characters; null: the
    /// server's).
    #[schemars(length(max = 200), pattern(r"\S"))]
    pub model: Option<String>,
    /// The approval policy.
    pub approvals: Option<Approvals>,
    /// Per-tool approval policies.
    pub tool_approvals: Option<ToolApprovals>,
    /// MCP servers its runs get (`mcpServers` of an MCP configuration);
    /// only where the operator allows project MCP servers.
    #[serde(rename = "mcpServers")]
    pub mcp_servers: Option<Value>,
    /// Whether its runs get the sandboxed `shell` tool (only where the
    /// server offers it).
    pub shell: Option<bool>,
    /// Its own bounds on what one `shell` command may write.
    pub shell_quota: Option<ShellQuota>,
    /// Its own bounds on its tasks' chains of agent runs.
    pub chain_limits: Option<ChainLimits>,
    /// Its agents and their handoffs.
    #[serde(default)]
    #[schemars(with = "Agents")]
    pub agents: Option<Value>,
}

impl RequestBody for NewProject {}

/// `PATCH /api/projects/{projectId}`: what to change (an absent field
/// stays, `null` goes back to the default).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectChange {
    /// The approval policy (`ask`, `unattended`; null: the server's).
    #[serde(default)]
    pub approvals: Change<Approvals>,
    /// Per-tool approval policies (null: none).
    #[serde(default)]
    pub tool_approvals: Change<ToolApprovals>,
    /// Whether runs get the `shell` tool.
    #[serde(default)]
    pub shell: Change<bool>,
    /// The project's bounds on a `shell` command's writes (null: the
    /// server's alone).
    #[serde(default)]
    pub shell_quota: Change<ShellQuota>,
    /// The project's bounds on its tasks' chains (null: the server's
    /// alone).
    #[serde(default)]
    pub chain_limits: Change<ChainLimits>,
    /// The project's agents (null or `{}`: none).
    #[serde(default)]
    #[schemars(with = "Agents")]
    pub agents: Change<Value>,
    /// What a run still going does with a message that names no strategy
    /// (null: `enqueue`).
    #[serde(default)]
    pub steer_strategy: Change<agentloop_types::SteerStrategy>,
}

impl RequestBody for ProjectChange {}

/// `PUT /api/projects/{projectId}/webhooks`: the project's webhooks.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhooksChange {
    /// Absolute http(s) URLs with a host name or IPv4 address (or a
    /// bracketed IPv6 address) and no user info. Deliveries reach only
    /// public addresses unless the operator allows private ones
    /// (`agentloop serve --webhooks-allow-private`).
    #[schemars(required, with = "Vec<WebhookUrl>", length(max = 10))]
    pub urls: Option<Vec<String>>,
    /// The events to hear (all when left out).
    #[schemars(with = "Option<Vec<WebhookEventName>>")]
    pub events: Option<Vec<String>>,
    /// Make a new signing secret (the first registration always makes
    /// one).
    pub rotate_secret: Option<bool>,
}

impl RequestBody for WebhooksChange {}

/// `PATCH /api/projects/{projectId}/memories/{memoryId}`: a memory's new
/// text or expiry (a field left out stays).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryChange {
    /// What is remembered.
    pub text: Option<String>,
    /// When it is forgotten, Unix milliseconds (null: never).
    #[serde(default)]
    pub expires_at: Change<i64>,
}

impl RequestBody for MemoryChange {}

/// `POST /api/agent-runs/{runId}/decisions`: decisions on the calls a
/// waiting run waits on.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Decisions {
    /// At least one; each call once.
    #[schemars(required, with = "Vec<DecisionInput>", length(min = 1))]
    pub decisions: Option<Vec<DecisionInput>>,
}

impl RequestBody for Decisions {}

/// What a person decides on one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// Run the call (optionally with edited `arguments`).
    Approve,
    /// Run this call and every later call of the same tool in this run.
    ApproveAlways,
    /// Do not run it (the model reads `reason`).
    Reject,
    /// Answer a question (`text`).
    Answer,
}

impl DecisionKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::ApproveAlways => "approve_always",
            Self::Reject => "reject",
            Self::Answer => "answer",
        }
    }
}

/// A decision on one pending call (its schema: [`DecisionInput::json_schema`]).
#[derive(Debug, Clone)]
pub struct DecisionInput {
    /// The call decided on.
    pub call_id: String,
    /// The decision.
    pub decision: DecisionKind,
    /// `approve`: the call's edited arguments.
    pub arguments: Option<Object>,
    /// `reject`: why (a default reason when left out or blank).
    pub reason: Option<String>,
    /// `answer`: the answer (not empty).
    pub text: Option<String>,
}

impl JsonSchema for DecisionInput {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "DecisionInput".into()
    }
    /// Each decision with the fields that go with it.
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let call_id = serde_json::json!({"type": "string", "minLength": 1});
        let closed = |properties: Value, required: &[&str]| {
            serde_json::json!({
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": false
            })
        };
        schemars::json_schema!({
            "description": "A decision on one pending call. `approve` (optionally with edited `arguments`, a JSON object), `approve_always` (this call and every later call of the same tool in this run), `reject` (with a `reason` the model reads; a default one when left out), `answer` (a question's answer `text`).",
            "oneOf": [
                closed(serde_json::json!({"call_id": call_id, "decision": {"const": "approve"}, "arguments": {"type": ["object", "null"]}}), &["call_id", "decision"]),
                closed(serde_json::json!({"call_id": call_id, "decision": {"const": "approve_always"}}), &["call_id", "decision"]),
                closed(serde_json::json!({"call_id": call_id, "decision": {"const": "reject"}, "reason": {"type": ["string", "null"]}}), &["call_id", "decision"]),
                closed(serde_json::json!({"call_id": call_id, "decision": {"const": "answer"}, "text": {"type": "string", "pattern": "\\S", "description": "The answer; refused when empty or only spaces (reject the question to leave it unanswered)"}}), &["call_id", "decision", "text"]),
            ]
        })
    }
}

/// A webhook URL (its schema only).
struct WebhookUrl;

impl JsonSchema for WebhookUrl {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "WebhookUrl".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "maxLength": 2048,
            "pattern": "^https?://[A-Za-z0-9._~-]+(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4}))?([/?#].*)?$"
        })
    }
}

/// The name of a webhook event (its schema only).
struct WebhookEventName;

impl JsonSchema for WebhookEventName {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "WebhookEventName".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "enum": crate::webhooks::registry::EVENTS })
    }
}

const AGENTS_DESCRIPTION: &str = "The project's agents and their handoffs (null or {} for none). A key names an agent: one of the server's agents (`planification`, `implementation`, `review`), which may set only `handoffs`, `description` and `history`, or a specialist with its own `instructions` and `model`. An agent that hands off offers the model one `transfer_to_{name}` tool per target; taking it, the same run goes on with the target (the run's tools, the target's instructions and model, the history filtered by its `history`), and the run's events say who speaks (`streaming_start.agent`, `handoff`). A run takes at most 8 handoffs (a cycle then ends it `limit_exceeded`, limit `handoffs`). Refused (400): a bad name, unknown fields, `instructions` or `model` on a server agent, a handoff to an agent neither declared nor the server's. A handoff to another of the server's agents than the run's own is not offered.";

/// A project's agents (its schema only): specialists, and whom each agent
/// (the server's own among them) hands off to; checked by
/// [`crate::project_agents`].
struct Agents;

impl JsonSchema for Agents {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Agents".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let name = serde_json::json!({"type": "string", "pattern": "^[A-Za-z0-9_-]{1,48}$"});
        let mut specialist = serde_json::json!({
            "description": {"type": "string", "description": "What it is for, as a model handing to it reads it"},
            "handoffs": {"type": "array", "items": name, "description": "The agents it may hand the conversation to: declared here or the server's"},
            "history": {"enum": ["full", "text_only", "last_user_message"], "description": "What of the history before a handoff to it it sees (default full)"}
        });
        let closed = |properties: &Value| serde_json::json!({"type": "object", "properties": properties, "required": [], "additionalProperties": false});
        // The server's own agents keep the server's instructions and model.
        let server_agent = closed(&specialist);
        specialist["instructions"] =
            serde_json::json!({"type": "string", "description": "A specialist's system prompt"});
        specialist["model"] = serde_json::json!({"type": "string", "description": "A specialist's model (default: the run's)"});
        schemars::json_schema!({
            "type": ["object", "null"],
            "description": AGENTS_DESCRIPTION,
            "propertyNames": name,
            "properties": {
                "planification": server_agent.clone(),
                "implementation": server_agent.clone(),
                "review": server_agent,
            },
            "additionalProperties": closed(&specialist)
        })
    }
}

/// The fields of a [`DecisionInput`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DecisionFields {
    call_id: String,
    decision: DecisionKind,
    arguments: Option<Object>,
    reason: Option<String>,
    text: Option<String>,
}

impl<'de> Deserialize<'de> for DecisionInput {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let fields: DecisionFields = from_object(deserializer)?;
        Ok(Self {
            call_id: fields.call_id,
            decision: fields.decision,
            arguments: fields.arguments,
            reason: fields.reason,
            text: fields.text,
        })
    }
}

/// The reason a model reads when a person rejects a call without saying
/// why.
const DEFAULT_REJECTION: &str = "the user rejected this call";

impl DecisionInput {
    /// The decision it states: each field goes only with its decision.
    pub fn decision(self) -> Result<(String, agentloop_types::Decision), String> {
        use agentloop_types::Decision;
        if self.call_id.is_empty() {
            return Err("call_id must be a non-empty string".to_owned());
        }
        let kind = self.decision;
        let stray = [
            ("arguments", self.arguments.is_some(), DecisionKind::Approve),
            ("reason", self.reason.is_some(), DecisionKind::Reject),
            ("text", self.text.is_some(), DecisionKind::Answer),
        ]
        .into_iter()
        .find(|(_, present, owner)| *present && *owner != kind);
        if let Some((field, _, _)) = stray {
            return Err(format!(
                "{field} does not go with decision {}",
                kind.as_str()
            ));
        }
        let decision = match kind {
            DecisionKind::Approve => Decision::Approve {
                arguments: self.arguments.map(Value::Object),
            },
            DecisionKind::ApproveAlways => Decision::ApproveAlways,
            DecisionKind::Reject => Decision::Reject {
                reason: self
                    .reason
                    .filter(|reason| !reason.trim().is_empty())
                    .unwrap_or_else(|| DEFAULT_REJECTION.to_owned()),
            },
            DecisionKind::Answer => Decision::Answer {
                text: match self.text {
                    // An empty answer tells the model nothing; a person who
                    // means "no answer" rejects the question instead.
                    Some(text) if !text.trim().is_empty() => text,
                    Some(_) => {
                        return Err("text must not be empty (reject the question to leave \
                                    it unanswered)"
                            .to_owned());
                    }
                    None => return Err("text must be a string".to_owned()),
                },
            },
        };
        Ok((self.call_id, decision))
    }
}

impl Decisions {
    /// The decisions, checked: at least one, each call once.
    pub fn parse(self) -> Result<Vec<(String, agentloop_types::Decision)>, ApiError> {
        let items = match self.decisions {
            Some(items) if !items.is_empty() => items,
            Some(_) => return Err(ApiError::bad_request("decisions must not be empty")),
            None => return Err(ApiError::bad_request("decisions must be an array")),
        };
        let mut parsed: Vec<(String, agentloop_types::Decision)> = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            let (call_id, decision) = item
                .decision()
                .map_err(|m| ApiError::bad_request(format!("decisions[{i}]: {m}")))?;
            if parsed.iter().any(|(id, _)| *id == call_id) {
                return Err(ApiError::bad_request(format!(
                    "decisions[{i}]: call {call_id} is decided twice"
                )));
            }
            parsed.push((call_id, decision));
        }
        Ok(parsed)
    }
}

/// `POST /api/tasks/{taskId}/ag-ui`: AG-UI's `RunAgentInput` (other
/// fields are ignored).
#[derive(Debug, Clone)]
pub struct AgUiInput(pub agentloop_agui::RunAgentInput);

impl<'de> Deserialize<'de> for AgUiInput {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        agentloop_agui::RunAgentInput::deserialize(deserializer).map(Self)
    }
}

impl RequestBody for AgUiInput {
    fn refused(problem: String) -> ApiError {
        ApiError::bad_request(format!("not an AG-UI RunAgentInput: {problem}"))
    }
}

impl JsonSchema for AgUiInput {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RunAgentInput".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let decided = |status: &str, payload: Value| {
            serde_json::json!({
                "type": "object",
                "properties": {
                    "interruptId": {"type": "string"},
                    "status": {"enum": [status]},
                    "payload": payload
                },
                "required": if status == "cancelled" {
                    serde_json::json!(["interruptId", "status"])
                } else {
                    serde_json::json!(["interruptId", "status", "payload"])
                }
            })
        };
        let approval = serde_json::json!({
            "type": "object",
            "properties": {
                "approved": {"type": "boolean"},
                "arguments": {"type": "object"},
                "reason": {"type": "string"}
            },
            "required": ["approved"],
            "not": {"required": ["answer"]}
        });
        let answer = serde_json::json!({
            "type": "object",
            "properties": {"answer": {"type": "string"}},
            "required": ["answer"]
        });
        schemars::json_schema!({
            "type": "object",
            "properties": {
                "threadId": {"type": "string", "minLength": 1},
                "runId": {"type": "string", "minLength": 1},
                "messages": {"type": "array", "items": {"type": "object"}},
                "forwardedProps": {
                    "type": "object",
                    "properties": {"agentType": {"enum": ["planification", "implementation", "review"]}}
                },
                "resume": {"type": "array", "items": {"anyOf": [
                    decided("cancelled", serde_json::json!({"type": "object"})),
                    decided("resolved", serde_json::json!({"anyOf": [approval, answer]}))
                ]}}
            },
            "required": ["threadId", "runId"]
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use serde_json::json;

    use super::super::extract::from_body;
    use super::*;

    fn refused<T: RequestBody + std::fmt::Debug>(body: Value) -> String {
        from_body::<T>(body)
            .expect_err("refused")
            .message()
            .to_owned()
    }

    #[test]
    fn a_refused_body_names_the_field_and_what_it_must_be_in_the_apis_words() {
        assert_eq!(
            refused::<NewTask>(json!({"title": 3})),
            "title must be a string"
        );
        assert_eq!(
            refused::<NewTask>(json!({"title": "t", "description": []})),
            "description must be a string"
        );
        assert_eq!(
            refused::<WebhooksChange>(json!({"urls": "x"})),
            "urls must be an array"
        );
        assert_eq!(
            refused::<WebhooksChange>(json!({"urls": [1]})),
            "urls[0] must be a string"
        );
        assert!(
            refused::<WebhooksChange>(json!({"urls": [], "colour": 1}))
                .starts_with("unknown field `colour`")
        );
        assert_eq!(
            refused::<Decisions>(json!({"decisions": [{"decision": "approve"}]})),
            "decisions[0]: call_id is required"
        );
        assert!(
            refused::<Decisions>(json!({"decisions": [{"call_id": "c", "decision": "maybe"}]}))
                .starts_with("decisions[0]: decision: unknown decision `maybe`")
        );
        assert_eq!(
            refused::<Decisions>(
                json!({"decisions": [{"call_id": "c", "decision": "approve", "arguments": [1]}]})
            ),
            "decisions[0]: arguments must be a JSON object"
        );
        assert!(
            refused::<Decisions>(
                json!({"decisions": [{"call_id": "c", "decision": "approve", "x": 1}]})
            )
            .starts_with("decisions[0]: unknown field `x`")
        );
        assert!(
            refused::<ProjectChange>(json!({"shell_quota": {"max_write_mb": -1}}))
                .starts_with("shell_quota: max_write_mb")
        );
        assert!(
            refused::<ProjectChange>(json!({"approvals": "sometimes"}))
                .starts_with("approvals must be \"ask\"")
        );
        // A nested struct is an object, never an array.
        assert_eq!(
            refused::<ProjectChange>(json!({"shell_quota": [null, null]})),
            "shell_quota must be a JSON object"
        );
        assert_eq!(
            refused::<Decisions>(json!({"decisions": [["c", "approve"]]})),
            "decisions[0] must be a JSON object"
        );
        // The seed's bodies keep the seed's messages.
        assert_eq!(
            refused::<NewAgentRun>(json!({"agentType": "x"})),
            INVALID_AGENT_TYPE
        );
        assert_eq!(
            refused::<WorkflowComplete>(json!({"complete": "yes"})),
            "complete must be a boolean"
        );
    }

    #[test]
    fn a_refusal_names_no_rust_type() {
        for message in [
            refused::<NewProject>(json!({"shell_quota": 3})),
            refused::<Decisions>(json!({"decisions": [3]})),
            refused::<NewProject>(json!({"shell_quota": {"max_write_files": 1.5}})),
        ] {
            for rust in ["struct", "ShellQuota", "DecisionInput", "u64", "Option"] {
                assert!(!message.contains(rust), "{message}");
            }
        }
    }

    #[test]
    fn a_change_tells_absent_from_null() {
        let change: ProjectChange = from_body(json!({"shell_quota": null})).unwrap();
        assert_eq!(change.shell_quota, Change::Clear);
        assert_eq!(change.agents, Change::Keep);
        let created: NewProject =
            from_body(json!({"name": "p", "repo_folder": "r", "extra": 1})).unwrap();
        assert_eq!(created.repo_folder.as_deref(), Some("r"));
    }
}
