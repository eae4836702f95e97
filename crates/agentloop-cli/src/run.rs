//! `agentloop run`.

use std::collections::HashMap;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use agentloop_engine::skills::prepare;
use agentloop_engine::{RunDeps, StrategyRegistry};
use agentloop_mcp::{McpConfig, McpServers, ServerConfig, ServerOptions, parse_stdio_command};
use agentloop_types::{
    CancellationToken, EventKind, LoopOptions, LoopStatus, Message, RenderingContentBlock,
};
use futures::StreamExt;

use crate::args::RunArgs;
use crate::{output, providers, render, skills, tools};

/// Exit codes: 0 complete, 1 error, 3 max iterations, 4 suspended (waiting
/// for input), 5 usage limit, 130 cancelled (Ctrl-C).
pub fn exit_code(status: &LoopStatus) -> ExitCode {
    ExitCode::from(match status {
        LoopStatus::Complete { .. } => 0,
        LoopStatus::Error { .. } => 1,
        LoopStatus::MaxIterations => 3,
        LoopStatus::Suspended { .. } => 4,
        LoopStatus::LimitExceeded { .. } => 5,
        LoopStatus::Cancelled => 130,
    })
}

pub async fn run(args: RunArgs) -> Result<ExitCode, String> {
    let chosen = providers::choose(
        args.provider.as_deref(),
        args.model.as_deref(),
        args.base_url.as_deref(),
    )?;
    let options = LoopOptions {
        model: chosen.model,
        api: chosen.api,
        project_id: "cli".to_owned(),
        system_prompt: args.system,
        max_tokens: args.max_tokens,
        max_iterations: args.max_iterations,
        ..LoopOptions::default()
    };
    let minion = tools::MinionModel {
        provider: chosen.provider.clone(),
        options: LoopOptions {
            system_prompt: None,
            ..options.clone()
        },
    };
    let mut tools = tools::build(&args.tools, args.root.as_deref(), Some(&minion))?;
    // Kept until the run ends: dropping the servers stops their processes.
    let mcp = start_mcp(&args.mcp, &args.mcp_stdio, args.mcp_timeout).await?;
    let mcp_tool_names: Vec<String> = mcp.tools().iter().map(|t| t.name().to_owned()).collect();
    tools.extend(mcp.tools());
    let cancel = CancellationToken::new();
    let on_interrupt = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_interrupt.cancel();
        }
    });
    let settings = match &args.config {
        Some(path) => read_settings(path)?,
        None => Default::default(),
    };
    let strategy = StrategyRegistry::default()
        .select(args.strategy.as_deref(), &settings)
        .map_err(|e| e.to_string())?;
    if args.output_schema.is_some() && strategy.name() != agentloop_engine::strategy::NATIVE {
        return Err(format!(
            "--output-schema needs the native strategy, not {}",
            strategy.name()
        ));
    }
    let skills = match &args.skills {
        Some(path) => skills::load(path, &tools)?,
        None => Vec::new(),
    };
    let deps = RunDeps::new(chosen.provider)
        .with_tools(tools)
        .with_cancel(cancel);
    let context = vec![Message::user_text("user-1", args.prompt)];
    let mut options = options;
    options.output_schema = args
        .output_schema
        .as_deref()
        .map(output::load)
        .transpose()?;
    let value_only = args.json && options.output_schema.is_some();
    let run = prepare(options, context, deps, &skills);
    let mut events = strategy.run(run.options, run.context, run.deps);

    let mut stdout = std::io::stdout().lock();
    let mut spinner = Spinner::default();
    let mut status = None;
    loop {
        let next = if spinner.active && !args.json {
            match tokio::time::timeout(Duration::from_millis(100), events.next()).await {
                Ok(next) => next,
                Err(_) => {
                    spinner.tick();
                    continue;
                }
            }
        } else {
            events.next().await
        };
        let Some(event) = next else { break };
        if let Some(result) = event.root_result() {
            status = Some(result.status.clone());
        }
        if value_only {
            continue;
        }
        if args.json {
            let line = serde_json::to_string(&event).map_err(|e| e.to_string())?;
            writeln!(stdout, "{line}").map_err(|e| e.to_string())?;
            continue;
        }
        match &event.kind {
            EventKind::StreamingStart { .. } => spinner.start(),
            EventKind::FirstChunk | EventKind::StreamingEnd { .. } => spinner.stop(),
            _ => {}
        }
        if let EventKind::ToolBlockUpdate { block, .. } = &event.kind
            && mcp_tool_names.contains(&block.name)
        {
            mcp_progress(&mut stdout, block).map_err(|e| e.to_string())?;
        }
        render::event(&mut stdout, &event).map_err(|e| e.to_string())?;
    }
    spinner.stop();
    if value_only {
        output::print(&mut stdout, status.as_ref())?;
    }
    mcp.shutdown().await;
    Ok(status.as_ref().map_or(ExitCode::from(1), exit_code))
}

/// Starts the MCP servers named by `--mcp` files and `--mcp-stdio` lines.
async fn start_mcp(
    files: &[std::path::PathBuf],
    stdio: &[String],
    timeout_secs: u64,
) -> Result<McpServers, String> {
    let mut config = McpConfig::default();
    for path in files {
        config.merge(McpConfig::load(path).map_err(|e| e.to_string())?);
    }
    for line in stdio {
        let (name, server) = parse_stdio_command(line).map_err(|e| e.to_string())?;
        config.add(&name, ServerConfig::Stdio(server));
    }
    if config.servers.is_empty() {
        return Ok(McpServers::default());
    }
    let options = ServerOptions {
        call_timeout: Duration::from_secs(timeout_secs),
        ..ServerOptions::default()
    };
    McpServers::start(&config, options)
        .await
        .map_err(|e| e.to_string())
}

/// An MCP tool's progress line (`Progress 2/5: …`), shown as it arrives.
fn mcp_progress(
    out: &mut impl Write,
    block: &agentloop_types::ToolResultRenderBlock,
) -> std::io::Result<()> {
    let line = block
        .rendering_groups
        .iter()
        .flat_map(|group| &group.blocks)
        .find_map(|b| match b {
            RenderingContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        });
    if let Some(line) = line {
        writeln!(out, "\x1b[2m  {}: {line}\x1b[0m", block.name)?;
    }
    Ok(())
}

/// Reads a settings file: a JSON object of string values.
fn read_settings(path: &std::path::Path) -> Result<HashMap<String, String>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the settings file {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| {
        format!(
            "the settings file {} is not a JSON object of strings: {e}",
            path.display()
        )
    })
}

/// A spinner on stderr while waiting for the first token.
#[derive(Default)]
struct Spinner {
    active: bool,
    frame: usize,
}

impl Spinner {
    const FRAMES: [&'static str; 4] = ["⠋", "⠙", "⠸", "⠴"];

    fn start(&mut self) {
        self.active = true;
        self.frame = 0;
    }

    fn tick(&mut self) {
        let frame = Self::FRAMES[self.frame % Self::FRAMES.len()];
        self.frame += 1;
        eprint!("\r{frame} ");
    }

    fn stop(&mut self) {
        if self.active {
            self.active = false;
            if self.frame > 0 {
                eprint!("\r  \r");
            }
        }
    }
}
