//! The configuration file, `$XDG_CONFIG_HOME/agentloop/config.toml` (else
//! `~/.config/agentloop/config.toml`): defaults for `run`, `chat` and
//! `models`, and under `[serve]` for `agentloop serve`. Flags win over the environment, which wins over the file.
//! Keys never go in it: they stay in the environment.
//!
//! ```toml
//! provider = "anthropic"        # or openai-chat, openai-responses, openai-compatible, gemini
//! model = "claude-sonnet-4-5"
//! base_url = "https://proxy.example/v1"
//! tools = ["fs", "javascript"]  # or one string: "fs,javascript"
//! approve = "none"              # default --approve: all, none, or "fs,javascript" (or a list)
//!
//! [approvals]                   # per-tool approval policies, over each tool's own
//! javascript = "always"         # never | always | { when = {...} } | { unless = {...} }
//! fs = { when = { pointer = "/command", any_of = ["delete", "rename"] } }
//!
//! [mcp_servers.files]           # MCP servers every `run` starts, as in mcpServers
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
//!
//! [mcp_servers.web]
//! url = "http://localhost:3001/mcp"
//!
//! [a2a_agents.reviewer]         # a remote A2A agent, offered to `run` as the tool a2a_reviewer
//! url = "http://127.0.0.1:8080"  # its base URL (card at /.well-known/agent-card.json)
//! token_env = "REVIEWER_TOKEN"  # the variable holding its bearer token
//! tenant = "PROJECT_ID"         # for an agentloop server: the project its tasks go to
//!
//! [shell]                       # the shell tool's sandbox (`--tools shell`)
//! read = ["/srv/datasets"]      # more read-only paths, besides the system and toolchain list
//! network = false               # true: commands keep the host's network
//! env = ["RUST_LOG"]            # variables passed when set (names like *_KEY, *TOKEN* refused)
//! timeout_secs = 300            # wall time of one command at most
//! max_processes = 512           # processes at once
//! max_memory_mb = 8192          # data memory of one process
//! max_total_memory_mb = 8192    # of all its processes (where a memory cgroup can be made)
//! max_write_mb = 4096           # bytes (allocated blocks) one command may add to the project and temp folders
//! max_write_files = 100000      # files one command may add to them
//!
//! agent = "triage"              # default --agent: the declared agent runs start with
//!
//! [agents.triage]               # agents that hand off to each other (see `agents`)
//! instructions = "Hand the customer to the specialist who can answer."
//! handoffs = ["billing"]
//!
//! [agents.billing]
//! description = "Invoices and refunds."
//! instructions = "You answer billing questions."
//! model = "claude-haiku-4-5"
//! tools = ["fs"]
//!
//! [serve]                       # defaults of `agentloop serve`
//! approvals = "ask"             # projects' policy when they set none: unattended (default) or ask
//! engine = "restate"            # how runs execute: builtin (default) or restate (durable workflows)
//! restate_ingress = "http://127.0.0.1:8080"
//! restate_admin = "http://127.0.0.1:9070"
//! restate_bind = "127.0.0.1:9080"   # this process's Restate service endpoint
//! restate_protocol = "http1"         # http2 (default) or http1 (one request per step)
//! rate_limit = 100              # requests a second per client (user, else address), or "off"
//! rate_burst = 200              # requests at once above that (default: twice rate_limit)
//! ```
//!
//! Keys go in the environment or in `keys.env` beside this file (see
//! `keys`).

use std::path::PathBuf;
use std::process::ExitCode;

use agentloop_types::{ApprovalPolicies, HandoffHistory};
use clap::Subcommand;
use serde::{Deserialize, Serialize};

use crate::out::{Failure, Outcome, Stdout};

#[cfg(feature = "server")]
use agentloop_server::config::TrustedProxy;
/// Without the server (feature `server`) the `[serve]` table is still read,
/// so one configuration file serves every build; nothing uses it.
#[cfg(not(feature = "server"))]
type TrustedProxy = String;

/// What the file may set.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Default `--provider`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Default `--model` (after `AGENTLOOP_MODEL`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Default `--base-url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Default `--tools`: a list, or one comma-separated string.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "names_list"
    )]
    pub tools: Vec<String>,
    /// Default `--approve` (`all`, `none` or tool names, comma-separated
    /// or as a list).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "names_text"
    )]
    pub approve: Option<String>,
    /// Approval policies by tool name, over each tool's own default (`"*"`:
    /// every tool without an entry).
    #[serde(default, skip_serializing_if = "ApprovalPolicies::is_empty")]
    pub approvals: ApprovalPolicies,
    /// MCP servers every `run` starts (name → `{command, args, env, cwd}`
    /// or `{url, headers}`), besides those of `--mcp` and `--mcp-stdio`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_servers: Option<serde_json::Value>,
    /// Remote A2A agents every `run` offers as tools (`a2a_NAME`),
    /// besides those of `--a2a`.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub a2a_agents: std::collections::BTreeMap<String, crate::a2a_agents::A2aAgentEntry>,
    /// Defaults of `agentloop serve`.
    #[serde(default, skip_serializing_if = "ServeConfig::is_empty")]
    pub serve: ServeConfig,
    /// The shell tool's sandbox (its `[shell]` table).
    #[serde(default, skip_serializing_if = "ShellSection::is_empty")]
    pub shell: ShellSection,
    /// Command hooks (`[[hooks]]`), asked in file order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<crate::hooks::HookEntry>,
    /// Default `--agent`: the declared agent `run` and `chat` start with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Declared agents (`[agents.NAME]`), which hand off to each other.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub agents: std::collections::BTreeMap<String, AgentSection>,
}

/// What the file may set for the shell tool (its `[shell]` table).
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellSection {
    /// Absolute paths commands may read besides the built-in list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read: Vec<PathBuf>,
    /// Whether commands keep the host's network (default: none).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub network: bool,
    /// Variables passed from the environment when set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// Most wall time of one command, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// Most processes of one command at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_processes: Option<u64>,
    /// Most data memory of one process, in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_memory_mb: Option<u64>,
    /// Most memory of all a command's processes together, in MiB (where a
    /// memory cgroup can be made).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_total_memory_mb: Option<u64>,
    /// Most bytes (allocated blocks) one command may add to the project
    /// folder and its temporary folder, in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_write_mb: Option<u64>,
    /// Most files one command may add to the project folder and its
    /// temporary folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_write_files: Option<u64>,
}

impl ShellSection {
    fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// What the file may set for `agentloop serve` (its `[serve]` table).
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeConfig {
    /// Default `--approvals`: the approval policy of projects that set
    /// none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvals: Option<ServeApprovals>,
    /// Default `--engine`: how agent runs execute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<ServeEngine>,
    /// Default `--restate-ingress`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restate_ingress: Option<String>,
    /// Default `--restate-admin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restate_admin: Option<String>,
    /// Default `--restate-bind`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restate_bind: Option<String>,
    /// Default `--restate-endpoint-url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restate_endpoint_url: Option<String>,
    /// Default `--restate-protocol`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restate_protocol: Option<RestateProtocol>,
    /// Default `--rate-limit`: requests a second per client, or `"off"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateSetting>,
    /// Default `--rate-burst`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_burst: Option<std::num::NonZeroU32>,
    /// Default `--trust-proxy`: addresses and networks, as strings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted_proxies: Option<Vec<TrustedProxy>>,
}

impl ServeConfig {
    fn is_empty(&self) -> bool {
        self.approvals.is_none()
            && self.engine.is_none()
            && self.restate_ingress.is_none()
            && self.restate_admin.is_none()
            && self.restate_bind.is_none()
            && self.restate_endpoint_url.is_none()
            && self.restate_protocol.is_none()
            && self.rate_limit.is_none()
            && self.rate_burst.is_none()
            && self.trusted_proxies.is_none()
    }
}

/// A server's per-client request rate (`--rate-limit`, `[serve]
/// rate_limit`): a number of requests a second, or off (`off`, or 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateSetting {
    /// No limit.
    Off,
    /// This many requests a second per client.
    PerSecond(std::num::NonZeroU32),
}

impl RateSetting {
    fn from_count(count: u32) -> Self {
        std::num::NonZeroU32::new(count).map_or(Self::Off, Self::PerSecond)
    }
}

impl std::str::FromStr for RateSetting {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if text.trim().eq_ignore_ascii_case("off") {
            return Ok(Self::Off);
        }
        text.trim()
            .parse::<u32>()
            .map(Self::from_count)
            .map_err(|e| format!("{e}: requests a second (a whole number), or `off` (or 0)"))
    }
}

impl Serialize for RateSetting {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Off => serializer.serialize_str("off"),
            Self::PerSecond(n) => serializer.serialize_u32(n.get()),
        }
    }
}

impl<'de> Deserialize<'de> for RateSetting {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Count(u32),
            Text(String),
        }
        match Written::deserialize(deserializer) {
            Ok(Written::Count(count)) => Ok(Self::from_count(count)),
            Ok(Written::Text(text)) => text.parse().map_err(serde::de::Error::custom),
            Err(_) => Err(serde::de::Error::custom(
                "rate_limit: requests a second (a whole number), or \"off\" (or 0)",
            )),
        }
    }
}

/// Tool names as the file may write them: a list (`["fs", "shell"]`) or
/// one comma-separated string (`"fs,shell"`), as on the command line.
enum Names {
    One(String),
    Many(Vec<String>),
}

impl<'de> Deserialize<'de> for Names {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            One(String),
            Many(Vec<String>),
        }
        match Written::deserialize(deserializer) {
            Ok(Written::One(text)) => Ok(Self::One(text)),
            Ok(Written::Many(list)) => Ok(Self::Many(list)),
            Err(_) => Err(serde::de::Error::custom(
                "tool names: a list of strings such as [\"fs\", \"shell\"], or one \
                 comma-separated string such as \"fs,shell\"",
            )),
        }
    }
}

/// `tools`: the names, each one checked later as `--tools` is.
fn names_list<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    Ok(match Names::deserialize(deserializer)? {
        Names::One(text) => text.split(',').map(|n| n.trim().to_owned()).collect(),
        Names::Many(list) => list,
    })
}

/// `approve`: the text `--approve` would take.
fn names_text<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    Ok(Some(match Names::deserialize(deserializer)? {
        Names::One(text) => text,
        Names::Many(list) => list.join(","),
    }))
}

/// How a server's agent runs execute (`--engine`, `[serve] engine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ServeEngine {
    /// This instance's lease scheduler (several instances share runs
    /// through leases in one PostgreSQL).
    Builtin,
    /// Durable Restate workflows.
    Restate,
}

/// How Restate reaches a worker's service endpoint (`--restate-protocol`,
/// `[serve] restate_protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum RestateProtocol {
    /// HTTP/2, one stream per attempt over one shared connection: one
    /// worker, or workers behind a balancer that spreads HTTP/2 requests.
    Http2,
    /// HTTP/1.1, one request per step: workers behind any balancer that
    /// spreads connections (a TCP one will do).
    Http1,
}

/// The approval policy of a server's projects (`--approvals`, `[serve]
/// approvals`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ServeApprovals {
    /// File writes and JavaScript calls of server runs wait for a person.
    Ask,
    /// They run without asking, inside the project folder (the default).
    Unattended,
}

impl From<ServeApprovals> for agentloop_storage::model::ApprovalMode {
    fn from(value: ServeApprovals) -> Self {
        match value {
            ServeApprovals::Ask => Self::Ask,
            ServeApprovals::Unattended => Self::Unattended,
        }
    }
}

/// `agentloop config ...`.
#[derive(Subcommand)]
pub enum ConfigCommand {
    /// Print where the configuration file is (whether or not it exists).
    Path,
    /// Print the configuration in effect from the file.
    Show,
}

/// The folder of the configuration file (relative hook programs are
/// taken from it).
pub fn folder() -> Result<PathBuf, Failure> {
    Ok(path()?
        .parent()
        .map_or_else(|| PathBuf::from("."), std::path::Path::to_path_buf))
}

/// The configuration file's path.
pub fn path() -> Result<PathBuf, Failure> {
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let base = match env("XDG_CONFIG_HOME") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(
            env("HOME").ok_or_else(|| Failure::usage("neither XDG_CONFIG_HOME nor HOME is set"))?,
        )
        .join(".config"),
    };
    Ok(base.join("agentloop").join("config.toml"))
}

/// Reads the file; none there is the empty configuration.
pub fn load() -> Result<Config, Failure> {
    let path = path()?;
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
        Err(e) => {
            return Err(Failure::usage(format!(
                "cannot read the configuration {}: {e}",
                path.display()
            )));
        }
    };
    toml::from_str(&text).map_err(|e| {
        // toml's message spans several lines (the offending line and a
        // caret); its first line says what is wrong.
        let reason = e.message().lines().next().unwrap_or_default().to_owned();
        let at = e
            .span()
            .map(|span| {
                let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
                format!(" (line {line})")
            })
            .unwrap_or_default();
        Failure::usage(format!(
            "the configuration {} is not valid{at}: {reason}",
            path.display()
        ))
    })
}

impl Config {
    /// The MCP servers the file names.
    pub fn mcp(&self) -> Result<agentloop_mcp::McpConfig, Failure> {
        match &self.mcp_servers {
            None => Ok(agentloop_mcp::McpConfig::default()),
            Some(servers) => agentloop_mcp::McpConfig::from_servers(servers.clone())
                .map_err(|e| Failure::usage(format!("the configuration's mcp_servers: {e}"))),
        }
    }

    /// Fills what the flags left unset: `provider`, `base_url` and `tools`
    /// from the file; `model` too unless `AGENTLOOP_MODEL` is set.
    pub fn fill(
        &self,
        provider: &mut Option<String>,
        model: &mut Option<String>,
        base_url: &mut Option<String>,
        tools: &mut Vec<String>,
    ) {
        if provider.is_none() {
            provider.clone_from(&self.provider);
        }
        let model_in_env = std::env::var("AGENTLOOP_MODEL").is_ok_and(|m| !m.trim().is_empty());
        if model.is_none() && !model_in_env {
            model.clone_from(&self.model);
        }
        if base_url.is_none() {
            base_url.clone_from(&self.base_url);
        }
        if tools.is_empty() {
            tools.clone_from(&self.tools);
        }
    }
}

/// `agentloop config path|show`.
pub fn command(command: ConfigCommand) -> Outcome {
    let mut out = Stdout::new();
    match command {
        ConfigCommand::Path => out.line(path()?.display())?,
        ConfigCommand::Show => {
            let config = load()?;
            let path = path()?;
            if !path.exists() {
                crate::out::note(format!(
                    "no configuration file at {} (all defaults)",
                    path.display()
                ));
            }
            let text = toml::to_string(&config).map_err(|e| e.to_string())?;
            if !text.is_empty() {
                out.line(text.trim_end())?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One agent of the file (its `[agents.NAME]` table).
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSection {
    /// What it is for, as a model handing to it reads it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Its system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Its model (default: the run's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The tools it offers, by name (see `agentloop tool list`): a list,
    /// or one comma-separated string.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "names_list"
    )]
    pub tools: Vec<String>,
    /// The agents it may hand the conversation to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub handoffs: Vec<String>,
    /// What of the history before a handoff to it it sees.
    #[serde(default, skip_serializing_if = "is_full")]
    pub history: HandoffHistory,
    /// How many handoffs one run takes when this agent starts it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_handoffs: Option<u32>,
}

fn is_full(history: &HandoffHistory) -> bool {
    *history == HandoffHistory::Full
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_win_over_the_file() {
        let config = Config {
            provider: Some("gemini".into()),
            model: None,
            base_url: Some("http://localhost:1/v1".into()),
            tools: vec!["fs".into()],
            ..Config::default()
        };
        let mut provider = Some("anthropic".to_owned());
        let mut model = None;
        let mut base_url = None;
        let mut tools = Vec::new();
        config.fill(&mut provider, &mut model, &mut base_url, &mut tools);
        assert_eq!(provider.as_deref(), Some("anthropic"));
        assert_eq!(base_url.as_deref(), Some("http://localhost:1/v1"));
        assert_eq!(tools, ["fs"]);
    }

    #[test]
    fn the_serve_table_sets_the_servers_approval_policy() {
        let config: Config = toml::from_str("[serve]\napprovals = \"ask\"\n").unwrap();
        assert_eq!(config.serve.approvals, Some(ServeApprovals::Ask));
        let wrong = toml::from_str::<Config>("[serve]\napprovals = \"sometimes\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            wrong.contains("ask") && wrong.contains("unattended"),
            "{wrong}"
        );
    }

    #[test]
    fn the_serve_table_sets_the_rate_limit_as_a_number_or_off() {
        let config: Config = toml::from_str("[serve]\nrate_limit = 5\nrate_burst = 7\n").unwrap();
        assert_eq!(
            config.serve.rate_limit,
            Some(RateSetting::PerSecond(5.try_into().unwrap()))
        );
        assert_eq!(config.serve.rate_burst, Some(7.try_into().unwrap()));
        for off in ["rate_limit = \"off\"", "rate_limit = 0"] {
            let config: Config = toml::from_str(&format!("[serve]\n{off}\n")).unwrap();
            assert_eq!(config.serve.rate_limit, Some(RateSetting::Off), "{off}");
        }
        let shown = toml::to_string(&config.serve).unwrap();
        assert!(shown.contains("rate_limit = 5"), "{shown}");
        for wrong in ["rate_limit = \"fast\"", "rate_limit = -1", "rate_burst = 0"] {
            assert!(
                toml::from_str::<Config>(&format!("[serve]\n{wrong}\n")).is_err(),
                "{wrong} was accepted"
            );
        }
    }

    #[test]
    fn the_serve_table_lists_trusted_proxies_and_refuses_what_is_not_an_address() {
        let config: Config =
            toml::from_str("[serve]\ntrusted_proxies = [\"10.0.0.0/8\", \"::1\"]\n").unwrap();
        let proxies: Vec<String> = config
            .serve
            .trusted_proxies
            .iter()
            .flatten()
            .map(ToString::to_string)
            .collect();
        assert_eq!(proxies, ["10.0.0.0/8", "::1"]);
        let shown = toml::to_string(&config.serve).unwrap();
        assert!(shown.contains("\"10.0.0.0/8\""), "{shown}");
        let error = toml::from_str::<Config>("[serve]\ntrusted_proxies = [\"proxy.lan\"]\n")
            .unwrap_err()
            .to_string();
        assert!(error.contains("\"proxy.lan\" is not an address"), "{error}");
    }

    #[test]
    fn approval_policies_read_from_toml() {
        let config: Config = toml::from_str(
            r#"
approve = "fs"
[approvals]
javascript = "always"
fs = { when = { pointer = "/command", any_of = ["delete"] } }
"#,
        )
        .unwrap_or_default();
        assert_eq!(config.approve.as_deref(), Some("fs"));
        assert_eq!(
            config.approvals.get("javascript"),
            Some(&agentloop_types::ApprovalPolicy::Always)
        );
        let fs = serde_json::to_value(&config.approvals["fs"]).unwrap_or_default();
        assert_eq!(
            fs,
            serde_json::json!({"when": {"pointer": "/command", "any_of": ["delete"]}})
        );
    }
}
