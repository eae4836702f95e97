//! `agentloop`: run an agent loop in a terminal (`run`), check a recorded
//! provider stream against the adapters (`replay-stream`), and list or call
//! tools directly (`tool`).

mod args;
mod chat;
mod chats;
mod export;
mod logging;
mod output;
mod providers;
mod render;
mod replay;
mod run;
mod serve;
mod skills;
mod tools;

use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Command, ToolCommand};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("agentloop: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let outcome = match cli.command {
        Command::Run(args) => runtime.block_on(run::run(args)),
        Command::ReplayStream(args) => replay::replay(args),
        Command::Tool(ToolCommand::List) => tools::list(),
        Command::Tool(ToolCommand::Call(args)) => runtime.block_on(tools::call(args)),
        Command::Serve(args) => serve::serve(args),
        Command::Users(command) => runtime.block_on(serve::users(command)),
        Command::CompleteWorkflow(args) => runtime.block_on(serve::complete_workflow(args)),
        Command::Chat(args) => runtime.block_on(chat::chat(args)),
        Command::Chats(command) => runtime.block_on(chats::chats(command)),
        Command::Export(args) => runtime.block_on(export::export(args)),
        Command::Import(args) => runtime.block_on(export::import(args)),
    };
    match outcome {
        Ok(code) => code,
        Err(message) => {
            eprintln!("agentloop: {message}");
            ExitCode::from(2)
        }
    }
}
