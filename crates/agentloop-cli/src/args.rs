//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

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
  2    usage error (bad flags, unknown names, unreadable input files); also
       a question asked with no model provider configured: the demo plays
       in its place, then says what to set
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
model is told no person could approve them; --approve lets them run).";

#[derive(Subcommand)]
pub enum Command {
    /// Run one prompt through the agent loop, streaming to the terminal.
    #[command(after_help = EXIT_CODES)]
    Run(RunArgs),
    /// Parse a raw SSE body (as an HTTP response carries it) through an
    /// adapter and print the assembled content, stop reason, usage and error
    /// as one JSON object.
    ReplayStream(ReplayArgs),
    /// List tools or call one directly.
    #[command(subcommand)]
    Tool(ToolCommand),
    /// Serve the HTTP API: tasks, chained agent runs, event streams.
    Serve(crate::serve::ServeArgs),
    /// Manage the server's users.
    #[command(subcommand)]
    Users(crate::serve::UsersCommand),
    /// Mark a task's workflow complete, which stops its agent chain.
    CompleteWorkflow(crate::serve::CompleteWorkflowArgs),
    /// Chat on a stored conversation: a REPL on a terminal, else each stdin
    /// line is a message.
    #[command(after_help = EXIT_CODES)]
    Chat(crate::chat::ChatArgs),
    /// List, show or delete stored chats.
    #[command(subcommand)]
    Chats(crate::chats::ChatsCommand),
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
}

/// How `run` compacts long requests.
#[derive(Clone, Copy, ValueEnum)]
pub enum CompactionArg {
    None,
    Summarise,
    DropOldest,
}

impl From<CompactionArg> for agentloop_types::CompactionStrategy {
    fn from(arg: CompactionArg) -> Self {
        match arg {
            CompactionArg::None => Self::None,
            CompactionArg::Summarise => Self::Summarise,
            CompactionArg::DropOldest => Self::DropOldest,
        }
    }
}

/// The wire protocols `replay-stream` understands.
#[derive(Clone, Copy, ValueEnum)]
pub enum ApiArg {
    AnthropicMessages,
    OpenaiChat,
    OpenaiResponses,
    Gemini,
}

#[derive(Args)]
pub struct RunArgs {
    /// The user's message; `-` reads it from stdin. Piped stdin with no
    /// PROMPT is the message; with a PROMPT it is added after it, past a
    /// blank line. A terminal stdin is never read as the prompt.
    pub prompt: Option<String>,
    /// Play the shipped demo conversation (examples/demo.json): no key, no
    /// network. Also what `run` does when no provider is configured: then
    /// a question gets the demo in its place and exit code 2.
    #[arg(long, conflicts_with_all = ["provider", "model", "base_url", "output_schema", "strategy"])]
    pub demo: bool,
    /// anthropic, openai-chat, openai-responses, openai-compatible, gemini,
    /// or scripted:FILE (a JSON array of scripted turns, see
    /// examples/README.md). Default: the configuration file, else from the
    /// keys in the environment, else the demo.
    #[arg(long)]
    pub provider: Option<String>,
    /// Model id (default: $AGENTLOOP_MODEL, the configuration's model,
    /// else the provider's default; an OpenAI-compatible server has none:
    /// its only listed model is used, and with several the run stops
    /// naming them).
    #[arg(long)]
    pub model: Option<String>,
    /// The provider's base URL, e.g. a proxy or a local OpenAI-compatible
    /// server (default: $ANTHROPIC_BASE_URL, $OPENAI_BASE_URL or
    /// $GEMINI_BASE_URL by provider).
    #[arg(long)]
    pub base_url: Option<String>,
    /// System prompt.
    #[arg(long)]
    pub system: Option<String>,
    /// Output token cap per model turn (at least 1).
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tokens: u32,
    /// Model turns before the run stops (at least 1).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_iterations: u32,
    /// What to do when a request would exceed 80% of the model's context
    /// window (known from the model table): none, summarise or drop-oldest.
    #[arg(long, value_enum, default_value_t = CompactionArg::None)]
    pub compaction: CompactionArg,
    /// Tools to offer, comma-separated (see `agentloop tool list`).
    #[arg(long, value_delimiter = ',')]
    pub tools: Vec<String>,
    /// Folder the fs and js tools work in (default: the current folder).
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Print every event as a JSON line instead of the terminal view.
    #[arg(long)]
    pub json: bool,
    /// Loop strategy: native, react, llm-only, tool-first or
    /// plan-and-execute (default: $AGENTLOOP_AGENT_LOOP_STRATEGY, else native).
    #[arg(long, value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub strategy: Option<String>,
    /// Settings file: a JSON object of string settings, e.g.
    /// `{"agent.loop.strategy": "react"}`. `--strategy` and the environment
    /// take precedence.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Skills to offer: a JSON file holding an array of
    /// `{name, description, prompt, allowed_skills, tools}`.
    #[arg(long)]
    pub skills: Option<PathBuf>,
    /// MCP servers whose tools to offer: a JSON file
    /// `{"mcpServers": {"name": {"command", "args", "env"} | {"url", "headers"}}}`.
    /// Tools are named `<name>__<tool>`. Repeatable.
    #[arg(long = "mcp", value_name = "CONFIG")]
    pub mcp: Vec<PathBuf>,
    /// A stdio MCP server to start: `'[name=]command args'`, e.g.
    /// `'npx -y @modelcontextprotocol/server-everything'` (named
    /// `everything`). Repeatable.
    #[arg(long = "mcp-stdio", value_name = "COMMAND")]
    pub mcp_stdio: Vec<String>,
    /// Seconds one MCP tool call may take before its server counts as hung
    /// (the call fails and the server is restarted; at least 1).
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    pub mcp_timeout: u64,
    /// Which tool calls run without asking: all, none (ask as the tools'
    /// policies say: fs writes and javascript calls) or tool names,
    /// comma-separated (default: the configuration's `approve`, else none).
    #[arg(long, value_name = "all|none|TOOL,...")]
    pub approve: Option<String>,
    /// A JSON Schema file the answer must fit; the run ends with the
    /// validated value, and `--json` prints that value alone.
    #[arg(long, value_name = "FILE")]
    pub output_schema: Option<PathBuf>,
    /// Whether `model` was given as `--model` (else it may come from the
    /// configuration file): set before the file fills the arguments.
    #[arg(skip)]
    pub model_flag: bool,
}

impl RunArgs {
    /// The model asked for and where: `--model`, the configuration's
    /// `model`, else `AGENTLOOP_MODEL`.
    pub fn requested_model(&self) -> Option<(String, &'static str)> {
        match &self.model {
            Some(model) if self.model_flag => Some((model.clone(), "--model")),
            Some(model) => Some((model.clone(), "the configuration's model")),
            None => std::env::var("AGENTLOOP_MODEL")
                .ok()
                .filter(|m| !m.trim().is_empty())
                .map(|model| (model, "AGENTLOOP_MODEL")),
        }
    }
}

#[derive(Args)]
pub struct ReplayArgs {
    /// The API the recording comes from.
    #[arg(long, value_enum)]
    pub api: ApiArg,
    /// File with the raw SSE body.
    pub file: PathBuf,
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
    /// Folder the fs and js tools work in (default: the current folder).
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// A tool option, `key=value` (value parsed as JSON, else a string).
    #[arg(long = "option")]
    pub options: Vec<String>,
}
