//! `agentloop`: run an agent loop in a terminal (`run`), keep stored
//! conversations (`chat`, a REPL on a terminal, `chats`, `export`,
//! `import`), serve the HTTP API (`serve`, `users`, `complete-workflow`),
//! run a dataset of cases against the agent and report (`eval`),
//! check a recorded provider stream against the adapters (`replay-stream`),
//! list or call tools directly (`tool`), and find one's way (`config`,
//! `info`, `completions`, `models`), and offer the agent over MCP (`mcp
//! serve`). One module per command group; `main`
//! only dispatches.
//!
//! Answers go to stdout and progress to stderr; every stdout line goes
//! through [`out::Stdout`] so a closed pipe ends the process quietly. Exit
//! codes are listed in [`args::EXIT_CODES`]: 0 ok, 1 runtime failure, 2
//! usage error, then the run statuses.

mod a2a_agents;
#[cfg(feature = "acp")]
mod acp;
mod agent;
mod agents;
mod approve;
mod args;
mod chat;
mod chats;
mod config;
mod context_args;
mod conversation_model;
mod db;
mod demo;
mod demo_model;
mod discover;
mod eval;
mod export;
mod file_checkpoints;
mod forms;
mod hooks;
mod keys;
mod local_model;
mod logging;
mod markdown;
mod mcp_flags;
mod mcp_prompts;
mod mcp_serve;
mod memories;
mod model_list;
mod out;
mod output_schema;
mod project_instructions;
mod prompt;
mod providers;
mod render;
mod repl;
mod replay;
mod run;
mod run_args;
mod runs;
#[cfg(feature = "server")]
mod schedules;
#[cfg(feature = "server")]
mod scripted_runs;
#[cfg(feature = "server")]
mod serve;
#[cfg(feature = "server")]
mod serve_restate;
mod session;
mod settings;
mod skills;
mod tools;
mod typed;
#[cfg(feature = "server")]
mod users;

use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use crate::args::{Cli, Command};
use crate::out::Failure;
use crate::tools::ToolCommand;

fn main() -> ExitCode {
    // The shell tool re-executes this binary as its sandbox launcher.
    #[cfg(target_os = "linux")]
    if agentloop_tools::shell::is_launcher_invocation() {
        return agentloop_tools::shell::launcher_main();
    }
    let cli = Cli::parse();
    out::set_color(cli.color);
    // The OTLP exporter's HTTP client needs the TLS provider in place first.
    agentloop_providers::ensure_crypto_provider();
    // `serve` installs its own (it takes the format and level as flags).
    let _telemetry = match &cli.command {
        #[cfg(feature = "server")]
        Command::Serve(_) => None,
        _ => match logging::init(
            logging::LogFormat::Notices,
            logging::verbosity(cli.verbose),
            cli.verbose > 0,
            cli.trace.as_deref(),
        ) {
            Ok(telemetry) => Some(telemetry),
            Err(message) => {
                eprintln!("agentloop: {message}");
                return ExitCode::from(2);
            }
        },
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            out::note(format!("cannot start the async runtime: {e}"));
            return ExitCode::from(out::EXIT_FAILURE);
        }
    };
    // Commands that only show paths or scripts work whatever the key file.
    let needs_keys = !matches!(
        cli.command,
        Command::Config(_) | Command::Completions(_) | Command::Info | Command::Hooks(_)
    );
    if needs_keys && let Err(failure) = keys::load() {
        out::note(&failure);
        return failure.exit_code();
    }
    let outcome = match cli.command {
        Command::Run(mut args) => config::load().and_then(|config| {
            tools::check_names(&args.tools, "--tools")?;
            tools::check_names(&config.tools, "the configuration's tools")?;
            args.model_flag = args.model.is_some();
            config.fill(
                &mut args.provider,
                &mut args.model,
                &mut args.base_url,
                &mut args.tools,
            );
            args.starting = agents::starting(
                args.agent.as_deref(),
                config.agent.as_deref(),
                &config.agents,
            )?;
            if let Some(start) = &args.starting {
                start.fill(
                    &mut args.system,
                    &mut args.model,
                    args.model_flag,
                    &mut args.tools,
                );
            }
            let approvals = approve::policies(args.approve.as_deref(), &config)?;
            let hooks = hooks::from_config(&config.hooks, &config::folder()?)?;
            let remote = a2a_agents::remote_agents(&config.a2a_agents, &args.a2a)?;
            runtime.block_on(run::run(args, approvals, config.mcp()?, remote, hooks))
        }),
        Command::Eval(mut args) => config::load().and_then(|config| {
            tools::check_names(&args.tools, "--tools")?;
            tools::check_names(&config.tools, "the configuration's tools")?;
            args.model_flag = args.model.is_some();
            config.fill(
                &mut args.provider,
                &mut args.model,
                &mut args.base_url,
                &mut args.tools,
            );
            // Each case has a folder of its own: its calls run unasked
            // unless --approve says otherwise.
            let approvals =
                approve::policies(Some(args.approve.as_deref().unwrap_or("all")), &config)?;
            let hooks = hooks::from_config(&config.hooks, &config::folder()?)?;
            runtime.block_on(eval::eval(args, approvals, hooks))
        }),
        Command::Mcp(mcp_serve::McpCommand::Serve(mut args)) => config::load().and_then(|config| {
            tools::check_names(&args.tools, "--tools")?;
            tools::check_names(&config.tools, "the configuration's tools")?;
            config.fill(
                &mut args.provider,
                &mut args.model,
                &mut args.base_url,
                &mut args.tools,
            );
            let approvals = approve::policies(args.approve.as_deref(), &config)?;
            let hooks = hooks::from_config(&config.hooks, &config::folder()?)?;
            runtime.block_on(mcp_serve::serve(args, approvals, config.mcp()?, hooks))
        }),
        Command::Mcp(mcp_serve::McpCommand::Prompts(args)) => config::load()
            .and_then(|config| runtime.block_on(mcp_prompts::list(args, config.mcp()?))),
        Command::ReplayStream(args) => replay::replay(args),
        Command::Tool(ToolCommand::List) => tools::list(),
        Command::Tool(ToolCommand::Call(args)) => runtime.block_on(tools::call(args)),
        #[cfg(feature = "server")]
        Command::Serve(args) => serve::check(&args).and_then(|()| serve::serve(args)),
        #[cfg(feature = "server")]
        Command::Users(command) => runtime.block_on(users::users(command)),
        #[cfg(feature = "server")]
        Command::Schedules(command) => runtime.block_on(schedules::schedules(command)),
        #[cfg(feature = "server")]
        Command::CompleteWorkflow(args) => runtime.block_on(serve::complete_workflow(args)),
        Command::Chat(mut args) => config::load().and_then(|config| {
            tools::check_names(&args.tools, "--tools")?;
            tools::check_names(&config.tools, "the configuration's tools")?;
            let model_flag = args.model.is_some();
            config.fill(
                &mut args.provider,
                &mut args.model,
                &mut args.base_url,
                &mut args.tools,
            );
            args.starting = agents::starting(
                args.agent.as_deref(),
                config.agent.as_deref(),
                &config.agents,
            )?;
            if let Some(start) = &args.starting {
                start.fill(
                    &mut args.system,
                    &mut args.model,
                    model_flag,
                    &mut args.tools,
                );
            }
            let approvals = approve::policies(args.approve.as_deref(), &config)?;
            let hooks = hooks::from_config(&config.hooks, &config::folder()?)?;
            runtime.block_on(chat::chat(args, approvals, hooks, config.mcp()?))
        }),
        #[cfg(feature = "acp")]
        Command::Acp(mut args) => config::load().and_then(|config| {
            tools::check_names(&args.tools, "--tools")?;
            tools::check_names(&config.tools, "the configuration's tools")?;
            config.fill(
                &mut args.provider,
                &mut args.model,
                &mut args.base_url,
                &mut args.tools,
            );
            let approvals = approve::policies(args.approve.as_deref(), &config)?;
            let hooks = hooks::from_config(&config.hooks, &config::folder()?)?;
            runtime.block_on(acp::serve(args, approvals, hooks))
        }),
        Command::Chats(command) => runtime.block_on(chats::chats(command)),
        Command::Runs(command) => runtime.block_on(runs::runs(command)),
        Command::Memory(command) => runtime.block_on(memories::memory(command)),
        Command::Skills(command) => skills::list(command),
        Command::Export(args) => runtime.block_on(export::export(args)),
        Command::Import(args) => runtime.block_on(export::import(args)),
        Command::Config(command) => config::command(command),
        Command::Completions(args) => discover::completions(args, Cli::command()),
        Command::Info => discover::info(),
        Command::Models(args) => runtime.block_on(discover::models(args)),
        Command::Hooks(command) => config::load()
            .and_then(|config| hooks::command(command, &config.hooks, &config::folder()?)),
    };
    match outcome {
        Ok(code) => code,
        Err(failure) => {
            if !matches!(failure, Failure::Closed) {
                out::note(&failure);
            }
            failure.exit_code()
        }
    }
}
