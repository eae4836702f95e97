//! A project's bodies: creating and changing it, its webhooks and
//! memories, and the policies and bounds they carry.

use agentloop_storage::model::ApprovalMode;
use schemars::JsonSchema;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::body::{Change, RequestBody, from_object};

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
    /// Whether each of its completed runs ends with the memory extraction
    /// step: a model call proposing what of the run to remember, written
    /// to the project's memories (off by default).
    pub memory_extraction: Option<bool>,
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
    /// Whether completed runs end with the memory extraction step (null:
    /// off).
    #[serde(default)]
    pub memory_extraction: Change<bool>,
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
