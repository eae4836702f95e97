//! The arguments of `agentloop run`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

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

#[derive(Args)]
pub struct RunArgs {
    /// The user's message; `-` reads it from stdin. Piped stdin with no
    /// PROMPT is the message; with a PROMPT it is added after it, past a
    /// blank line. A terminal stdin is never read as the prompt.
    pub prompt: Option<String>,
    /// Play the shipped demo conversation (examples/demo.json): no key, no
    /// network. Also what `run` does when no provider is configured: then
    /// a question gets the demo in its place and a note on what to do
    /// next; exit code 0 on a terminal, 2 when stdout is not one.
    #[arg(long, conflicts_with_all = ["provider", "model", "base_url", "output_schema", "strategy"])]
    pub demo: bool,
    /// Run against the local model: llama.cpp's llama-server with
    /// SmolLM2-135M-Instruct, as `scripts/local-model.sh build` installed
    /// them (no key, no network). Reuses the server answering on
    /// 127.0.0.1:8089 ($AGENTLOOP_LOCAL_MODEL_PORT), else starts it and
    /// leaves it running for later runs. Sets a system prompt for a small
    /// model unless --system, and 128 tokens a turn unless --max-tokens; a
    /// request past its 4096-token context fails saying so.
    #[arg(long, conflicts_with_all = ["demo", "provider", "base_url"])]
    pub local: bool,
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
    /// System prompt (default: the starting agent's instructions).
    #[arg(long)]
    pub system: Option<String>,
    /// The agent declared in config.toml (`[agents.NAME]`) to start with:
    /// its instructions, model and tools, and the agents it may hand the
    /// conversation to (default: the configuration's `agent`, else none).
    #[arg(long, value_name = "NAME", conflicts_with = "demo")]
    pub agent: Option<String>,
    /// The starting agent, resolved from the configuration.
    #[arg(skip)]
    pub starting: Option<crate::agents::Starting>,
    /// Output token cap per model turn (at least 1). Default: 4096, or the
    /// model's own lower limit, for a model in the model table; 1024 for
    /// any other (a local or OpenAI-compatible server's model).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tokens: Option<u32>,
    /// Wall-clock limit for the whole run, e.g. 30s, 2m, 1h or 1500ms (a
    /// bare number is seconds). When it passes the run stops as Ctrl-C
    /// would and ends `limit_exceeded` (timeout), exit code 5.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// Model turns before the run stops (at least 1).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_iterations: u32,
    /// What to do when a request would exceed 80% of the model's context
    /// window (known from the model table): none, summarise or drop-oldest.
    #[arg(long, value_enum, default_value_t = CompactionArg::None)]
    pub compaction: CompactionArg,
    /// Tool search and context budgets.
    #[command(flatten)]
    pub context: crate::context_args::ContextArgs,
    /// Tools to offer, comma-separated (see `agentloop tool list`).
    #[arg(long, value_delimiter = ',')]
    pub tools: Vec<String>,
    /// Do not offer `ask_user` unless --tools names it. By default the
    /// model may ask the person a question when one can answer: stdin and
    /// stdout are a terminal, the output is not --json, and neither --demo
    /// nor --local is given.
    #[arg(long)]
    pub no_ask_user: bool,
    /// Folder the fs and js tools work in (default: the current folder).
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Database the memory tool keeps its files in: a SQLite file path,
    /// `sqlite:PATH`, `postgres://...` or `memory` (default: agentloop.db
    /// in the platform data folder). Opened only when --tools names memory.
    #[arg(long)]
    pub db: Option<String>,
    /// Whose memories the memory tool keeps: user:ID, project:ID or
    /// agent:ID (default: project:cli).
    #[arg(long)]
    pub memory_scope: Option<String>,
    /// Print every event as a JSON line instead of the terminal view.
    #[arg(long)]
    pub json: bool,
    /// Loop strategy: native, react, llm-only, tool-first or
    /// plan-and-execute (default: $AGENTLOOP_AGENT_LOOP_STRATEGY, else native).
    #[arg(long, value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub strategy: Option<String>,
    /// Settings file: JSON, e.g. `{"agent.loop.strategy": "react"}`, or
    /// TOML when its name ends in `.toml`, e.g. `[agent.loop]` then
    /// `strategy = "react"`. `--strategy` and the environment take
    /// precedence. Not the configuration file: config.toml is read
    /// from `$XDG_CONFIG_HOME/agentloop/` (see `agentloop config path`).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Skills to offer: a folder of Agent Skills (`SKILL.md` folders;
    /// the run folder's `.agents/skills/` and `skills/` are read too), or
    /// a JSON file holding an array of
    /// `{name, description, prompt, allowed_skills, tools}`.
    #[arg(long)]
    pub skills: Option<PathBuf>,
    /// MCP servers to start.
    #[command(flatten)]
    pub mcp: crate::mcp_flags::McpFlags,
    /// Start from a prompt of an MCP server, `SERVER:PROMPT` (`agentloop
    /// mcp prompts` lists them): its messages open the run, and the
    /// prompt given as the argument, if any, follows them.
    #[arg(long = "mcp-prompt", value_name = "SERVER:PROMPT")]
    pub mcp_prompt: Option<String>,
    /// An argument of --mcp-prompt, `NAME=VALUE`. Repeatable.
    #[arg(long = "mcp-arg", value_name = "NAME=VALUE", requires = "mcp_prompt")]
    pub mcp_args: Vec<String>,
    /// A remote A2A agent to delegate to: `NAME=URL` (its base URL, the
    /// card at `/.well-known/agent-card.json`), offered as the tool
    /// `a2a_NAME`. Repeatable; tokens and tenants go in the
    /// configuration's `[a2a_agents.NAME]`.
    #[arg(long = "a2a", value_name = "NAME=URL")]
    pub a2a: Vec<String>,
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

/// A duration as `--timeout` takes it: a whole number with an optional
/// unit, `ms`, `s`, `m` or `h` (none is seconds), greater than zero.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration such as 30s, 2m or 1500ms"))?;
    let millis = match unit.trim() {
        "ms" => Some(number),
        "" | "s" => number.checked_mul(1_000),
        "m" => number.checked_mul(60_000),
        "h" => number.checked_mul(3_600_000),
        other => {
            return Err(format!(
                "unknown unit {other:?} in {text:?}: use ms, s, m or h"
            ));
        }
    }
    .ok_or_else(|| format!("{text:?} is too long"))?;
    if millis == 0 {
        return Err("the duration must be greater than zero".to_owned());
    }
    Ok(Duration::from_millis(millis))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_their_units() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("45"), Ok(Duration::from_secs(45)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("1500ms"), Ok(Duration::from_millis(1500)));
        for bad in [
            "",
            "s",
            "0s",
            "1.5s",
            "10 days",
            "-3s",
            "99999999999999999999h",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
