//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Run LLM agent loops.
#[derive(Parser)]
#[command(name = "agentloop", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run one prompt through the agent loop, streaming to the terminal.
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
    /// Chat interactively on a stored chat: each stdin line is a message.
    Chat(crate::chat::ChatArgs),
    /// List, show or delete stored chats.
    #[command(subcommand)]
    Chats(crate::chats::ChatsCommand),
    /// Write a project to JSON (the storage export).
    Export(crate::export::ExportArgs),
    /// Read a project from a JSON export into the database.
    Import(crate::export::ImportArgs),
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
    /// The user's message.
    pub prompt: String,
    /// anthropic, openai-chat, openai-responses, openai-compatible, or
    /// scripted:FILE (a JSON array of scripted turns). Default: from the
    /// keys in the environment.
    #[arg(long)]
    pub provider: Option<String>,
    /// Model id (default: $AGENTLOOP_MODEL, else a provider default).
    #[arg(long)]
    pub model: Option<String>,
    /// Base URL of an OpenAI-compatible server (default: $OPENAI_BASE_URL).
    #[arg(long)]
    pub base_url: Option<String>,
    /// System prompt.
    #[arg(long)]
    pub system: Option<String>,
    /// Output token cap per model turn.
    #[arg(long, default_value_t = 4096)]
    pub max_tokens: u32,
    /// Model turns before the run stops.
    #[arg(long, default_value_t = 50)]
    pub max_iterations: u32,
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
    #[arg(long)]
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
    /// (the call fails and the server is restarted).
    #[arg(long, default_value_t = 300)]
    pub mcp_timeout: u64,
    /// A JSON Schema file the answer must fit; the run ends with the
    /// validated value, and `--json` prints that value alone.
    #[arg(long, value_name = "FILE")]
    pub output_schema: Option<PathBuf>,
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
    /// Tool name.
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
