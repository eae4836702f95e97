//! The tools an agent run is offered: the project folder's file system,
//! the project's memories, `ask_user`, `complete_workflow` (not for
//! planning), the server's extra tools, the project's MCP servers and its
//! Agent Skills, under the project's approval policy.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use agentloop_agui::FrontendTool;
use agentloop_mcp::{McpConfig, McpServers, ServerConfig as McpServerConfig, ServerOptions};
use agentloop_runtime::{ChatSettings, ProjectSettings, RuntimeResult, build_loop_options};
use agentloop_storage::model::{AgentType, Chat, MemoryScope};
use agentloop_storage::{StorageError, StorageResult, StoredMemories};
use agentloop_tools::vfs::DirJail;
use agentloop_tools::{AskUserTool, FsTool, MemoryTool};
use agentloop_types::{LoopOptions, Tool};
use serde_json::json;

use crate::runner::TaskContext;
use crate::state::AppState;
use crate::tool::CompleteWorkflowTool;

/// What a run's tools are made of beyond its project: its agent, its
/// `complete_workflow` flag, the project's shell and MCP servers (started
/// already) and its chat.
pub struct Offer<'a> {
    /// The run's agent.
    pub agent: AgentType,
    /// Set when the run calls `complete_workflow`.
    pub workflow_called: Arc<AtomicBool>,
    /// The project's `shell` tool, when it enables one.
    pub shell: Option<Arc<dyn Tool>>,
    /// The project's MCP servers, when it names some.
    pub mcp: Option<&'a McpServers>,
    /// The run's chat (its settings: options and front-end tools).
    pub chat: &'a Chat,
}

/// Every tool a run is offered: the server's and the project's
/// ([`tools`]), its shell and MCP servers' tools, its Agent Skills
/// ([`project_skills`]) and its client's front-end tools.
pub fn offered(
    state: &AppState,
    ctx: &TaskContext,
    offer: Offer<'_>,
) -> RuntimeResult<Vec<Arc<dyn Tool>>> {
    let Offer {
        agent,
        workflow_called,
        shell,
        mcp,
        chat,
    } = offer;
    let mut offered = tools(state, ctx, agent, workflow_called)?;
    offered.extend(shell);
    if let Some(mcp) = mcp {
        offered.extend(mcp.tools());
    }
    let options = build_loop_options(
        &ctx.project.id,
        Some(&chat.id),
        &ProjectSettings::from_value(&ctx.project.id, &ctx.project.settings)?,
        &ChatSettings::from_value(&chat.id, &chat.settings)?,
    );
    let skills = project_skills(state, ctx, &offered, &options);
    offered.extend(skills);
    let frontend = frontend_tools(&chat.settings, &offered);
    offered.extend(frontend);
    Ok(offered)
}

/// The tools an agent run is offered (the project's MCP servers' aside),
/// under the project's approval policy.
pub fn tools(
    state: &AppState,
    ctx: &TaskContext,
    agent: AgentType,
    workflow_called: Arc<AtomicBool>,
) -> StorageResult<Vec<Arc<dyn Tool>>> {
    let jail = DirJail::new(&ctx.repo)
        .map_err(|e| StorageError::Invalid(format!("project folder: {e}")))?;
    // `ask_user` suspends the run as `waiting` with a question, answered
    // through the run's decisions like an approval.
    // Memories are the project's: a run reads and writes those of its own
    // project (whose one owner started it), never another's.
    let memories = StoredMemories::new(state.store.clone(), MemoryScope::project(&ctx.project.id));
    let mut tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(FsTool::new(Arc::new(jail))),
        Arc::new(MemoryTool::per_call(Arc::new(memories))),
        Arc::new(AskUserTool),
    ];
    if agent != AgentType::Planification {
        tools.push(Arc::new(CompleteWorkflowTool::new(workflow_called)));
    }
    tools.extend(state.config.extra_tools.iter().cloned());
    let (mode, _) = crate::policy::effective(&state.config, &ctx.project);
    Ok(crate::policy::apply(mode, tools))
}

/// The Agent Skills of the project's folder (its `.agents/skills/` and
/// `skills/`), one tool each for a run offered `tools` with `options`: a
/// call runs the skill's instructions as a child cycle with the run's
/// tools (its scripts only through the sandboxed `shell` tool, when the
/// project enables it). A refused skill folder, or a skill named like a
/// tool of the run, is logged and left out.
pub fn project_skills(
    state: &AppState,
    ctx: &TaskContext,
    tools: &[Arc<dyn Tool>],
    options: &LoopOptions,
) -> Vec<Arc<dyn Tool>> {
    let found = agentloop_tools::project_skills::find(&ctx.repo, tools);
    for refused in &found.refused {
        tracing::warn!(project = %ctx.project.id, folder = %refused.dir.display(),
                       reason = %refused.reason, "a skill folder of the project is refused");
    }
    let skills: Vec<_> = found
        .skills
        .into_iter()
        .filter(|skill| {
            let taken = tools.iter().any(|tool| tool.name() == skill.name);
            if taken {
                tracing::warn!(project = %ctx.project.id, skill = %skill.name,
                               "a skill has the name of a tool of the run; it is not offered");
            }
            !taken
        })
        .collect();
    agentloop_engine::skills::offer(&skills, state.config.provider.clone(), options)
}

/// The tools the run's client runs itself (its chat's `settings`), left
/// out where one of `offered` has the same name. A call of one suspends
/// the run until the client answers it.
pub fn frontend_tools(
    settings: &serde_json::Value,
    offered: &[Arc<dyn Tool>],
) -> Vec<Arc<dyn Tool>> {
    crate::runner::frontend_tool_specs(settings)
        .into_iter()
        .filter(|spec| {
            let taken = offered.iter().any(|tool| tool.name() == spec.name);
            if taken {
                tracing::warn!(tool = %spec.name, "a front-end tool has the name of a tool of the run; it is not offered");
            }
            !taken
        })
        .map(|spec| Arc::new(FrontendTool::new(spec)) as Arc<dyn Tool>)
        .collect()
}

/// The names a front-end tool of a run in this project may not take:
/// the tools the server offers every run.
pub fn reserved_tool_names(state: &AppState) -> Vec<String> {
    let mut names: Vec<String> = ["fs", "memory", "ask_user", "complete_workflow", "shell"]
        .map(str::to_owned)
        .into();
    names.extend(
        state
            .config
            .extra_tools
            .iter()
            .map(|tool| tool.name().to_owned()),
    );
    names
}

/// The project's `shell` tool, if it enables one (`settings.shell`), under
/// the project's approval policy; an error when the server no longer
/// offers it or its sandbox cannot be made.
pub fn project_shell(state: &AppState, ctx: &TaskContext) -> Result<Option<Arc<dyn Tool>>, String> {
    if !shell_enabled(&ctx.project) {
        return Ok(None);
    }
    let Some(factory) = &state.config.shell_tool else {
        return Err(
            "the project uses the shell tool, but this server does not offer it \
                    (its operator can allow it with --allow-shell)"
                .to_owned(),
        );
    };
    let shell = factory(&ctx.repo, shell_quota(&ctx.project))
        .map_err(|e| format!("the project's shell tool could not be made: {e}"))?;
    let (mode, _) = crate::policy::effective(&state.config, &ctx.project);
    Ok(crate::policy::apply(mode, vec![shell]).pop())
}

/// The project's own write quota for `shell` commands (its settings'
/// `shell_quota`: `max_write_mb`, `max_write_files`).
pub fn shell_quota(project: &agentloop_storage::model::Project) -> crate::config::ShellQuota {
    let quota = project.settings.get("shell_quota");
    let number = |name: &str| {
        quota
            .and_then(|q| q.get(name))
            .and_then(serde_json::Value::as_u64)
    };
    crate::config::ShellQuota {
        max_write_bytes: number("max_write_mb").map(|mb| mb.saturating_mul(1024 * 1024)),
        max_write_files: number("max_write_files"),
    }
}

/// Whether a project enables the `shell` tool.
pub fn shell_enabled(project: &agentloop_storage::model::Project) -> bool {
    project
        .settings
        .get("shell")
        .and_then(serde_json::Value::as_bool)
        == Some(true)
}

/// Starts the MCP servers the project names (`settings.mcp_servers`, the
/// `mcpServers` map it was created with), stdio ones inside the project
/// folder. They live for the run.
pub async fn project_mcp(
    state: &AppState,
    ctx: &TaskContext,
) -> Result<Option<McpServers>, String> {
    let Some(servers) = ctx.project.settings.get("mcp_servers") else {
        return Ok(None);
    };
    if !state.config.allow_project_mcp {
        return Err(
            "the project names MCP servers, but this server does not run them \
             (start it with --allow-project-mcp)"
                .to_owned(),
        );
    }
    let mut config = McpConfig::from_json(&json!({ "mcpServers": servers }).to_string())
        .map_err(|e| format!("the project's MCP servers: {e}"))?;
    for server in config.servers.values_mut() {
        if let McpServerConfig::Stdio(stdio) = server {
            stdio.cwd = Some(ctx.repo.clone());
        }
    }
    McpServers::start(&config, ServerOptions::default())
        .await
        .map(Some)
        .map_err(|e| format!("the project's MCP servers could not start: {e}"))
}
