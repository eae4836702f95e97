//! Command-line arguments: the top-level flags and the subcommands, each
//! taking the arguments its own module defines.

use clap::{Parser, Subcommand};

/// Run LLM agent loops.
#[derive(Parser)]
#[command(name = "agentloop", version, about, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Colour the terminal view: auto (a terminal without NO_COLOR),
    /// always or never.
    #[arg(long, global = true, value_enum, default_value_t = crate::out::ColorChoice::Auto)]
    pub color: crate::out::ColorChoice,
    /// Log to stderr what the run does: -v model requests, tool calls and
    /// retries; -vv more detail. `RUST_LOG` overrides it.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Write every span of the command (runs, model turns, requests, tool
    /// calls) as JSON lines to FILE.
    #[arg(long, global = true, value_name = "FILE")]
    pub trace: Option<std::path::PathBuf>,
}

/// The exit codes, shown at the end of `--help`.
pub const EXIT_CODES: &str = "\
Exit codes:
  0    done (a run that completed)
  1    runtime failure (a run that ended in an error, a database or provider that fails)
  2    usage error (bad flags, unknown names, unreadable input files, an
       address to serve on that is none or taken); also a question asked
       with no model provider configured while stdout is not a terminal
       (a script): the demo plays in its place, nothing goes to stdout.
       On a terminal that demo ends 0 and names the next steps (--demo,
       --local, the keys to set)
  3    a run stopped at --max-iterations
  4    a run that ended waiting for a person (Ctrl-D at an approval or
       question prompt; a piped chat whose input ended before a question
       was answered): `agentloop chat --continue` picks a chat up again
  5    a run stopped at a usage limit
  130  a run cancelled with Ctrl-C

Progress, notes and prompts go to stderr (or the terminal), answers to stdout.

Stdin: a terminal stdin is the person. A call that needs approval (fs
writes, every javascript call, per --approve and the configuration) is
asked there: y yes, n no (+ a reason for the model), a always for this
tool, e edit the arguments. Stdin that is not a terminal (a pipe, a file,
/dev/null) is input: `run` reads it as the prompt (or adds it after the
PROMPT argument, past a blank line; `< /dev/null` adds nothing), `chat`
reads one message a line, and calls that need approval are rejected (the
model is told no person could approve them; --approve lets them run).
With stdout not a terminal, `run` and `chat` write only the answers there
(and a chat's `? question` lines); the view goes to stderr.";

// Parsed once per process and matched at once: boxing the large
// variants would save nothing worth the indirection.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
pub enum Command {
    /// Run one prompt through the agent loop, streaming to the terminal.
    #[command(after_help = EXIT_CODES)]
    Run(crate::run_args::RunArgs),
    /// Run a dataset of cases against the agent and report how each did
    /// (a table, JSON, JUnit XML; --compare names regressions).
    #[command(after_help = crate::eval::EXIT_CODES)]
    Eval(crate::eval::EvalArgs),
    /// Parse a raw SSE body (as an HTTP response carries it) through an
    /// adapter and print the assembled content, stop reason, usage and error
    /// as one JSON object.
    ReplayStream(crate::replay::ReplayArgs),
    /// List tools or call one directly.
    #[command(subcommand)]
    Tool(crate::tools::ToolCommand),
    /// Serve the HTTP API: tasks, chained agent runs, event streams.
    #[cfg(feature = "server")]
    Serve(crate::serve::ServeArgs),
    /// Manage the server's users.
    #[cfg(feature = "server")]
    #[command(subcommand)]
    Users(crate::users::UsersCommand),
    /// Manage the server's schedules: cron expressions that start agent
    /// runs on tasks.
    #[cfg(feature = "server")]
    #[command(subcommand)]
    Schedules(crate::schedules::SchedulesCommand),
    /// Mark a task's workflow complete, which stops its agent chain.
    #[cfg(feature = "server")]
    CompleteWorkflow(crate::serve::CompleteWorkflowArgs),
    /// Chat on a stored conversation: a REPL on a terminal, else each stdin
    /// line is a message.
    #[command(after_help = EXIT_CODES)]
    Chat(crate::chat::ChatArgs),
    /// List, show or delete stored chats.
    #[command(subcommand)]
    Chats(crate::chats::ChatsCommand),
    /// List or show stored runs with the steps they keep, or fork a run at
    /// one of its steps.
    #[command(subcommand)]
    Runs(crate::runs::RunsCommand),
    /// List the Agent Skills a run here reads, and the folders refused.
    #[command(subcommand)]
    Skills(crate::skills::SkillsCommand),
    /// List, show, edit or delete the memory tool's stored memories.
    #[command(subcommand)]
    Memory(crate::memories::MemoryCommand),
    /// Write a project to JSON (the storage export).
    Export(crate::export::ExportArgs),
    /// Read a project from a JSON export into the database.
    Import(crate::export::ImportArgs),
    /// Show where the configuration file is, or what it sets.
    #[command(subcommand)]
    Config(crate::config::ConfigCommand),
    /// Print a completion script for a shell.
    Completions(crate::discover::CompletionsArgs),
    /// Print the version, the configuration and data paths, and which
    /// provider the environment configures.
    Info,
    /// List the models the provider offers.
    Models(crate::discover::ModelsArgs),
    /// Offer the agent to other programs over MCP.
    #[command(subcommand)]
    Mcp(crate::mcp_serve::McpCommand),
    /// Offer the agent to editors over the Agent Client Protocol (ACP), on
    /// stdin and stdout: sessions kept as chats, prompts streamed,
    /// approvals asked as permission requests.
    #[cfg(feature = "acp")]
    Acp(crate::acp::AcpArgs),
    /// Show the command hooks the configuration file sets.
    #[command(subcommand)]
    Hooks(crate::hooks::HooksCommand),
}
