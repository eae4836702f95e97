//! The tools the command line offers, and `agentloop tool list|call`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
#[cfg(target_os = "linux")]
use std::time::Duration;

use agentloop_engine::scripted::ScriptedProvider;
#[cfg(feature = "javascript")]
use agentloop_tools::JsTool;
#[cfg(target_os = "linux")]
#[cfg(target_os = "linux")]
use agentloop_tools::shell::{Launcher, ShellConfig, ShellConfigError, ShellLimits, ShellTool};
use agentloop_tools::vfs::DirJail;
use agentloop_tools::{AskUserTool, FsTool, MemoryTool, MinionTool, ReturnTool};
use agentloop_types::{
    CancellationToken, LoopOptions, ModelProvider, RequestOptions, RunPath, Tool, ToolContext,
    ToolOutput, ToolStreamEvent, Vfs, VfsFor,
};
use clap::{Args, Subcommand};
use futures::StreamExt;
use serde_json::{Map, Value, json};

use crate::out::{Failure, Outcome, Stdout};

/// Names `--tools`, `tool call` and `tool list` use: each tool's own name,
/// the one the model sees.
pub const NAMES: &[&str] = &[
    "fs",
    "memory",
    "javascript",
    "shell",
    "return",
    "ask_user",
    "minion",
];

/// Offers `ask_user` besides `tools` when it is not among them: where the
/// caller can answer a question (a person at the terminal, an MCP client
/// with elicitation), the model may ask one without `--tools` naming it.
/// Added after the minion is built, so a minion's children never ask.
pub fn offer_ask_user(tools: &mut Vec<Arc<dyn Tool>>) {
    if !tools.iter().any(|tool| tool.name() == "ask_user") {
        tools.push(Arc::new(AskUserTool));
    }
}

#[derive(Subcommand)]
pub enum ToolCommand {
    /// List the tools with their descriptions.
    List,
    /// Run one tool call and print its progress and result as JSON lines.
    Call(ToolCallArgs),
}

#[derive(Args)]
pub struct ToolCallArgs {
    /// Tool name (see `agentloop tool list`).
    pub name: String,
    /// The tool input as JSON.
    #[arg(long)]
    pub input: String,
    /// Folder the fs, js and shell tools work in (default: the current folder).
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// A tool option, `key=value` (value parsed as JSON, else a string).
    #[arg(long = "option")]
    pub options: Vec<String>,
}

/// The tool a name given on the command line means (`js` is short for
/// `javascript`).
fn canonical(name: &str) -> &str {
    match name {
        "js" => "javascript",
        other => other,
    }
}

/// Checks a tool list given on the command line (`--tools`, the
/// configuration's `tools`): every name known, none empty, none twice
/// (`js` and `javascript` are the same tool). `origin` names where the
/// list came from in the error.
pub fn check_names(names: &[String], origin: &str) -> Result<(), Failure> {
    let available = || format!("available: {}", NAMES.join(", "));
    let mut seen: Vec<&str> = Vec::new();
    for name in names {
        let name = name.trim();
        if name.is_empty() {
            return Err(Failure::usage(format!(
                "{origin} holds an empty tool name; give tool names separated by commas \
                 ({}), or leave {origin} out for none",
                available()
            )));
        }
        let tool = canonical(name);
        if !NAMES.contains(&tool) {
            return Err(Failure::usage(format!(
                "{origin}: unknown tool {:?}; {}",
                crate::out::sanitize(name),
                available()
            )));
        }
        if seen.contains(&tool) {
            return Err(Failure::usage(format!(
                "{origin} names the tool {tool} twice; name each tool once ({})",
                available()
            )));
        }
        seen.push(tool);
    }
    Ok(())
}

/// The model a minion's child loops run on: the run's provider and options.
pub struct MinionModel {
    /// The provider.
    pub provider: Arc<dyn ModelProvider>,
    /// The child's base options (model, api, limits).
    pub options: LoopOptions,
}

/// Builds the named tools; fs and js work in `root`, memory in `memory`
/// (see [`crate::memories`]). `minion` needs `model`; its children may use
/// the other tools named.
pub fn build(
    names: &[String],
    root: Option<&Path>,
    model: Option<&MinionModel>,
    memory: &Arc<dyn VfsFor>,
) -> Result<Vec<Arc<dyn Tool>>, Failure> {
    let root: PathBuf = match root {
        Some(root) => root.to_owned(),
        None => std::env::current_dir().map_err(|e| format!("no current folder: {e}"))?,
    };
    let jail = || -> Result<Arc<dyn Vfs>, Failure> {
        DirJail::new(&root)
            .map(|j| Arc::new(j) as Arc<dyn Vfs>)
            .map_err(|e| {
                Failure::usage(format!(
                    "cannot use {} as the tool root: {e}",
                    root.display()
                ))
            })
    };
    let tools = names
        .iter()
        .map(|name| canonical(name.trim()))
        .filter(|name| *name != "minion")
        .map(|name| -> Result<Arc<dyn Tool>, Failure> {
            Ok(match name {
                "fs" => Arc::new(FsTool::new(jail()?)),
                "memory" => Arc::new(MemoryTool::per_call(memory.clone())),
                #[cfg(feature = "javascript")]
                "javascript" => Arc::new(JsTool::new(jail()?)),
                #[cfg(not(feature = "javascript"))]
                "javascript" => {
                    return Err(Failure::usage(
                        "this agentloop was built without the javascript tool \
                         (cargo feature `javascript`)",
                    ));
                }
                #[cfg(target_os = "linux")]
                "shell" => Arc::new(shell_tool(&root, WriteQuota::default())?),
                #[cfg(not(target_os = "linux"))]
                "shell" => {
                    return Err(Failure::usage(
                        "the shell tool's sandbox needs Linux (Landlock, namespaces); \
                         it is not offered on this system",
                    ));
                }
                "return" => Arc::new(ReturnTool),
                "ask_user" => Arc::new(AskUserTool),
                other => {
                    return Err(Failure::usage(format!(
                        "unknown tool {:?}; available: {}",
                        crate::out::sanitize(other),
                        NAMES.join(", ")
                    )));
                }
            })
        })
        .collect::<Result<Vec<_>, Failure>>()?;
    let Some(position) = names.iter().position(|n| n.trim() == "minion") else {
        return Ok(tools);
    };
    let model = model.ok_or("the minion tool needs a model provider")?;
    let minion =
        MinionTool::new(model.provider.clone(), tools.clone()).with_options(model.options.clone());
    let mut all = tools;
    all.insert(position.min(all.len()), Arc::new(minion));
    Ok(all)
}

/// What a project allows one `shell` command to write, at most (a server
/// project's `shell_quota`; none outside the server).
#[cfg(target_os = "linux")]
#[derive(Default)]
struct WriteQuota {
    max_write_bytes: Option<u64>,
    max_write_files: Option<u64>,
}

#[cfg(target_os = "linux")]
/// The shell tool working in `root`, sandboxed as the configuration's
/// `[shell]` table says, its write quota lowered where `project` asks;
/// the launcher is this binary, re-executed.
fn shell_tool(root: &Path, project: WriteQuota) -> Result<ShellTool, Failure> {
    let section = crate::config::load()?.shell;
    let usage = |e: ShellConfigError| Failure::usage(e.to_string());
    let mut limits = ShellLimits::default();
    if let Some(secs) = section.timeout_secs {
        limits.timeout = Duration::from_secs(secs);
    }
    const MIB: u64 = 1024 * 1024;
    if let Some(max) = section.max_processes {
        limits.max_processes = max;
    }
    if let Some(mb) = section.max_memory_mb {
        limits.max_memory_bytes = mb.saturating_mul(MIB);
    }
    if let Some(mb) = section.max_total_memory_mb {
        limits.max_total_memory_bytes = mb.saturating_mul(MIB);
    }
    if let Some(mb) = section.max_write_mb {
        limits.max_write_bytes = mb.saturating_mul(MIB);
    }
    if let Some(files) = section.max_write_files {
        limits.max_write_files = files;
    }
    if let Some(bytes) = project.max_write_bytes {
        limits.max_write_bytes = limits.max_write_bytes.min(bytes);
    }
    if let Some(files) = project.max_write_files {
        limits.max_write_files = limits.max_write_files.min(files);
    }
    let config = ShellConfig::new(root, Launcher::current_exe().map_err(usage)?)
        .and_then(|c| c.with_read_paths(section.read))
        .and_then(|c| c.with_env(section.env))
        .map_err(usage)?
        .with_network(section.network)
        .with_limits(limits);
    Ok(ShellTool::new(config))
}

/// What makes a server project's `shell` tool (`serve --allow-shell`): the
/// tool as [`shell_tool`] makes it, for the project's folder and quota.
#[cfg(all(feature = "server", target_os = "linux"))]
pub fn shell_factory() -> Result<agentloop_server::config::ShellToolFactory, Failure> {
    // Checked once at start, so a broken `[shell]` table stops `serve`.
    shell_tool(Path::new("/"), WriteQuota::default())?;
    Ok(Arc::new(
        |root: &Path, quota: agentloop_server::config::ShellQuota| {
            let quota = WriteQuota {
                max_write_bytes: quota.max_write_bytes,
                max_write_files: quota.max_write_files,
            };
            shell_tool(root, quota)
                .map(|tool| Arc::new(tool) as Arc<dyn Tool>)
                .map_err(|e| e.to_string())
        },
    ))
}

/// `serve --allow-shell` off Linux: the sandbox does not exist there.
#[cfg(all(feature = "server", not(target_os = "linux")))]
pub fn shell_factory() -> Result<agentloop_server::config::ShellToolFactory, Failure> {
    Err(Failure::usage(
        "--allow-shell: the shell tool's sandbox needs Linux (Landlock, namespaces)",
    ))
}

/// `agentloop tool list`.
pub fn list() -> Outcome {
    let names: Vec<String> = NAMES
        .iter()
        .filter(|n| cfg!(target_os = "linux") || **n != "shell")
        .filter(|n| cfg!(feature = "javascript") || **n != "javascript")
        .map(|n| (*n).to_owned())
        .collect();
    let dir = std::env::temp_dir();
    let listing = MinionModel {
        provider: ScriptedProvider::new([]),
        options: LoopOptions::default(),
    };
    let mut out = Stdout::new();
    let memory = crate::memories::in_process();
    for tool in build(&names, Some(&dir), Some(&listing), &memory)? {
        let first_line = tool.description().lines().next().unwrap_or_default();
        out.line(format!("{:<10} {first_line}", tool.name()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `agentloop tool call NAME --input JSON`: prints each progress event and
/// the result as JSON lines. Exits 1 when the result is an error.
pub async fn call(args: ToolCallArgs) -> Outcome {
    let input: Value = serde_json::from_str(&args.input)
        .map_err(|e| Failure::usage(format!("--input is not JSON: {e}")))?;
    let model = if args.name == "minion" {
        let chosen = crate::providers::choose(None, None, None).await?;
        let options = LoopOptions {
            request: RequestOptions {
                model: chosen.model,
                ..RequestOptions::default()
            },
            project_id: "cli".to_owned(),
            ..LoopOptions::default()
        };
        Some(MinionModel {
            provider: chosen.provider,
            options,
        })
    } else {
        None
    };
    let tools = build(
        std::slice::from_ref(&args.name),
        args.root.as_deref(),
        model.as_ref(),
        &crate::memories::in_process(),
    )?;
    let Some(tool) = tools.into_iter().next() else {
        return Err(Failure::usage(format!("unknown tool {}", args.name)));
    };
    let mut options = Map::new();
    for option in &args.options {
        let (key, value) = option
            .split_once('=')
            .ok_or_else(|| Failure::usage(format!("--option {option:?} is not key=value")))?;
        let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_owned()));
        options.insert(key.to_owned(), value);
    }
    let context = ToolContext {
        run_id: "cli".to_owned(),
        project_id: "cli".to_owned(),
        chat_id: None,
        tool_use_id: "call_1".to_owned(),
        path: RunPath::root(),
        options,
        cancel: CancellationToken::new(),
        resume: None,
        budget: None,
    };
    let mut stream = tool.execute(input, context);
    let mut out = Stdout::new();
    while let Some(output) = stream.next().await {
        match output {
            ToolOutput::Event(ToolStreamEvent::GroupsUpdate { groups }) => {
                out.line(json!({"type": "groups_update", "groups": groups}))?
            }
            ToolOutput::Event(ToolStreamEvent::ChildEvent(event)) => {
                out.line(json!({"type": "child_event", "event": event}))?
            }
            ToolOutput::Done(result) => {
                out.line(json!({"type": "result", "result": result}))?;
                return Ok(if result.is_error {
                    ExitCode::from(1)
                } else {
                    ExitCode::SUCCESS
                });
            }
        }
    }
    Err(Failure::Runtime(
        "the tool ended without a result".to_owned(),
    ))
}
