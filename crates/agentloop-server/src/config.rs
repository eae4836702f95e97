//! Server configuration: the model provider, agent prompts, leases and
//! request limits (size, time, rate).

use std::sync::Arc;
use std::time::Duration;

use agentloop_storage::model::{AgentType, ApprovalMode};
use agentloop_types::{ModelProvider, Tool};

use crate::listener::ConnectionLimits;
pub use crate::proxies::{TrustedProxies, TrustedProxy};
pub use crate::rate_limit::RateLimit;

/// The three agent prompts (seed 004's `generate*Message`). `{task_doc_path}`
/// and `{task_id}` are replaced in each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentPrompts {
    /// Planification: interactive Q&A about the task document.
    pub planification: String,
    /// Implementation: do the next step of the plan.
    pub implementation: String,
    /// Review: check the implementation and update the plan.
    pub review: String,
}

impl Default for AgentPrompts {
    fn default() -> Self {
        Self {
            planification: "Read the task document at {task_doc_path}. Ask me the questions \
you need answered to plan this task, one topic at a time. When the plan is clear, write it \
into {task_doc_path} as a checklist of small implementation steps."
                .to_owned(),
            implementation: "You are the implementation agent for task {task_id}. Read the \
task document at {task_doc_path}, pick the first unchecked step of its plan, implement it in \
the project folder with the fs tool, then tick the step in the document and add a short note \
on what you did. If every step is done and reviewed, call the complete_workflow tool."
                .to_owned(),
            review: "You are the review agent for task {task_id}. Read the task document at \
{task_doc_path} and review the work of the last implementation step in the project folder. \
Write your findings into the document as new unchecked steps when something must be fixed. If \
the whole task is done and nothing is left to fix, call the complete_workflow tool."
                .to_owned(),
        }
    }
}

impl AgentPrompts {
    /// The first message of an agent run.
    pub fn message(&self, agent: AgentType, task_doc_path: &str, task_id: &str) -> String {
        let template = match agent {
            AgentType::Planification => &self.planification,
            AgentType::Implementation => &self.implementation,
            AgentType::Review => &self.review,
        };
        template
            .replace("{task_doc_path}", task_doc_path)
            .replace("{task_id}", task_id)
    }
}

/// The path of a task's document, relative to its project folder.
pub fn task_doc_path(task_id: &str) -> String {
    format!(".agentloop/tasks/task-{task_id}.md")
}

/// Makes a project's `shell` tool for its folder, under the project's own
/// write quota, or says why it cannot (the kernel lacks what the sandbox
/// needs, the configuration is wrong).
pub type ShellToolFactory =
    Arc<dyn Fn(&std::path::Path, ShellQuota) -> Result<Arc<dyn Tool>, String> + Send + Sync>;

/// A project's own bounds on what one `shell` command may write to its
/// folder and temporary folder (`shell_quota`). They only lower the
/// server's: the tool takes the smaller of each pair.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShellQuota {
    /// Allocated bytes, at most.
    pub max_write_bytes: Option<u64>,
    /// Files (and folders), at most.
    pub max_write_files: Option<u64>,
}

/// Everything the server needs besides its store.
#[derive(Clone)]
pub struct ServerConfig {
    /// The model provider agent runs call.
    pub provider: Arc<dyn ModelProvider>,
    /// Default model id; a project's `settings.model` overrides it.
    pub model: String,
    /// Output token cap per model turn.
    pub max_tokens: u32,
    /// Model turns per agent run.
    pub max_iterations: u32,
    /// The agent prompts.
    pub prompts: AgentPrompts,
    /// Tools offered besides the jailed fs tool, `ask_user` and
    /// `complete_workflow`.
    pub extra_tools: Vec<Arc<dyn Tool>>,
    /// This instance's lease owner name; unique per process.
    pub instance_id: String,
    /// How long a lease lasts without a heartbeat.
    pub lease_ttl: Duration,
    /// How many steps each agent run keeps (all by default), which a run
    /// can be forked at.
    pub keep_steps: agentloop_storage::StepRetention,
    /// Where runs keep the checkpoints of their project's folder, taken
    /// before each step that may write (see
    /// [`agentloop_tools::checkpoint`]), which a run is rewound or forked
    /// with its files from; `None` (the default): runs take none.
    pub file_checkpoints: Option<Arc<agentloop_tools::checkpoint::FileCheckpoints>>,
    /// How often leases are renewed and run statuses checked.
    pub heartbeat: Duration,
    /// How often the instance looks for runs to take over.
    pub claim_interval: Duration,
    /// Largest accepted request body.
    pub max_body_bytes: usize,
    /// Time limit of a non-streaming request.
    pub request_timeout: Duration,
    /// When set, project folders must lie inside this folder (the fs tool of
    /// a run is jailed to its project's folder).
    pub projects_root: Option<std::path::PathBuf>,
    /// Capacity of each run's live event channel; a follower that falls
    /// further behind reads the missed events from the store.
    pub live_capacity: usize,
    /// Bounds on open connections and slow request heads.
    pub connections: ConnectionLimits,
    /// Requests per client (user, else peer address; see
    /// [`crate::rate_limit`]); `None`: no limit.
    pub rate_limit: Option<RateLimit>,
    /// Reverse proxies whose `X-Forwarded-For` names the client of an
    /// unauthenticated request (see [`crate::proxies`]); none by default,
    /// so the header is ignored.
    pub trusted_proxies: TrustedProxies,
    /// Whether projects may name MCP servers (`mcpServers`) for their runs.
    /// Off by default: a stdio server is a program the server host runs, so
    /// only an operator who trusts every user turns it on.
    pub allow_project_mcp: bool,
    /// Makes the `shell` tool of a project that enables it (`"shell":
    /// true`), working in the project's folder; `None` (the default): this
    /// server offers no shell tool, and a project that asks for it is a
    /// 400. The host sets it (`serve --allow-shell`): the tool's sandbox
    /// launcher is the host's own binary.
    pub shell_tool: Option<ShellToolFactory>,
    /// The approval policy of projects that set none (see
    /// [`crate::policy`]): `Unattended` by default, so a project's agents
    /// work on inside its folder with no client attached.
    pub approvals: ApprovalMode,
    /// How webhook deliveries are made (see [`crate::webhooks`]).
    pub webhooks: WebhookSettings,
    /// The durable engine runs are handed to instead of this instance's
    /// lease scheduler (see [`crate::dispatch`]); `None`: executed here.
    pub dispatch: Option<Arc<dyn crate::dispatch::RunDispatch>>,
    /// Most agent runs in one chain of a task (see [`crate::chain_bounds`]);
    /// a project's `chain_limits.max_runs` overrides it. 20 by default.
    pub chain_max_runs: u32,
    /// How often an open event stream or WebSocket looks its token up
    /// again, so one revoked elsewhere (another instance, `agentloop users`)
    /// or expired ends within this much (1 s by default). A revocation on
    /// this instance ends them at once.
    pub token_check: Duration,
    /// The least a model call reserves against the budgets of its run's
    /// user, project and task (see [`crate::budgets`]): its first call's
    /// estimate, raised later to the largest call the run made. 8,000
    /// tokens and 0.05 USD by default.
    pub budget_estimate: agentloop_types::Spend,
    /// How old a budget hold may grow unsettled before a reservation on
    /// its budgets releases it (an instance that stopped mid-call never
    /// settles its holds). 15 minutes by default; keep it above the
    /// longest model call.
    pub budget_hold_expiry: Duration,
}

/// How webhook deliveries are made.
#[derive(Debug, Clone)]
pub struct WebhookSettings {
    /// Whether deliveries may reach loopback and private addresses. Off by
    /// default: a project's URL must not become a way into the server's
    /// own network.
    pub allow_private: bool,
    /// How long one attempt waits for the receiver's answer.
    pub timeout: Duration,
    /// Attempts per delivery (at least one).
    pub attempts: u32,
    /// The wait before the second attempt; it doubles for each later one.
    pub retry_base: Duration,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self {
            allow_private: false,
            timeout: Duration::from_secs(10),
            attempts: 4,
            retry_base: Duration::from_secs(2),
        }
    }
}

impl ServerConfig {
    /// A configuration with defaults around a provider.
    pub fn new(provider: Arc<dyn ModelProvider>, model: impl Into<String>) -> Self {
        Self {
            provider,
            model: model.into(),
            max_tokens: 4096,
            max_iterations: 50,
            prompts: AgentPrompts::default(),
            extra_tools: Vec::new(),
            // Ends with this process's identity, so a server started again
            // here after a crash takes this one's runs over at once.
            instance_id: format!(
                "{}-{}{}",
                std::process::id(),
                crate::ids::new_id(),
                crate::holder::this_process().unwrap_or_default()
            ),
            lease_ttl: Duration::from_secs(30),
            keep_steps: agentloop_storage::StepRetention::default(),
            file_checkpoints: None,
            heartbeat: Duration::from_secs(5),
            claim_interval: Duration::from_secs(5),
            max_body_bytes: 1 << 20,
            request_timeout: Duration::from_secs(30),
            projects_root: None,
            live_capacity: 256,
            connections: ConnectionLimits::default(),
            rate_limit: Some(RateLimit::default()),
            trusted_proxies: TrustedProxies::default(),
            allow_project_mcp: false,
            shell_tool: None,
            approvals: ApprovalMode::Unattended,
            webhooks: WebhookSettings::default(),
            dispatch: None,
            chain_max_runs: 20,
            token_check: Duration::from_secs(1),
            budget_estimate: agentloop_types::Spend {
                tokens: 8_000,
                cost: 0.05,
            },
            budget_hold_expiry: Duration::from_secs(15 * 60),
        }
    }
}
