//! `agentloop mcp serve`: the agent of `agentloop run` (its provider,
//! model, tools, strategy, skills and approvals, from the same flags and
//! configuration file) offered as an MCP server, over stdio or streamable
//! HTTP. The protocol side is `agentloop_mcp::serve`; this module is the
//! host that runs a turn: the strategy's run, each event passed to the
//! caller as progress, pending calls settled by the caller (MCP
//! elicitation), and the conversation kept per chat id for as long as the
//! server runs.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use agentloop_engine::skills::prepare;
use agentloop_engine::{LoopStrategy, RunDeps};
use agentloop_mcp::McpConfig;
use agentloop_mcp::serve::{AgentHost, AskError, AskFuture, AskOutcome, AskRequest, Caller};
use agentloop_types::{
    ApprovalPolicies, Hooks, LoopOptions, LoopResult, LoopStatus, Message, RequestOptions,
};
use clap::{Args, Subcommand};
use futures::StreamExt;

use crate::out::{Failure, Outcome};
use crate::run_args::CompactionArg;
use crate::{out, run, skills, tools};

/// `agentloop mcp ...`.
#[derive(Subcommand)]
pub enum McpCommand {
    /// Offer the agent as an MCP server: one tool, `ask`, taking a prompt
    /// and an optional chat id. Over stdio (the default) or streamable
    /// HTTP (--http).
    Serve(McpServeArgs),
}

#[derive(Args)]
pub struct McpServeArgs {
    /// Serve streamable HTTP on this address (e.g. 127.0.0.1:8765) instead
    /// of stdio.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// The HTTP endpoint's path.
    #[arg(long, default_value = "/mcp", requires = "http")]
    pub path: String,
    /// The environment variable holding the bearer token HTTP clients must
    /// send (the token itself never goes on the command line).
    #[arg(long, value_name = "VAR", requires = "http")]
    pub token_env: Option<String>,
    /// Serve HTTP on an address other machines can reach with no
    /// --token-env: anyone who reaches the port can then run the agent
    /// and its tools. Without it such a bind is refused.
    #[arg(long, requires = "http")]
    pub allow_unauthenticated: bool,
    /// A host name (or host:port) HTTP clients may reach the server by,
    /// past the loopback names allowed by default. Repeatable.
    #[arg(long = "allowed-host", value_name = "HOST", requires = "http")]
    pub allowed_hosts: Vec<String>,
    /// The server's name, shown to clients.
    #[arg(long, default_value = "agentloop")]
    pub name: String,
    /// What the agent is for, shown to clients as the tool's description.
    #[arg(long)]
    pub description: Option<String>,
    /// anthropic, openai-chat, openai-responses, openai-compatible, gemini,
    /// or scripted:FILE (default: the configuration file, else the keys in
    /// the environment).
    #[arg(long)]
    pub provider: Option<String>,
    /// Answer with the local model, as `agentloop run --local` does (its
    /// server started or reused, a system prompt for a small model unless
    /// --system, 128 tokens a turn unless --max-tokens).
    #[arg(long, conflicts_with_all = ["provider", "base_url"])]
    pub local: bool,
    /// Model id.
    #[arg(long)]
    pub model: Option<String>,
    /// The provider's base URL.
    #[arg(long)]
    pub base_url: Option<String>,
    /// System prompt.
    #[arg(long)]
    pub system: Option<String>,
    /// Output token cap per model turn (at least 1; default as for
    /// `agentloop run`: from the model table, 1024 for a model it does not
    /// know).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tokens: Option<u32>,
    /// Model turns before a run stops (at least 1).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_iterations: u32,
    /// What to do when a request would exceed 80% of the model's context
    /// window: none, summarise or drop-oldest.
    #[arg(long, value_enum, default_value_t = CompactionArg::None)]
    pub compaction: CompactionArg,
    /// Tools to offer, comma-separated (see `agentloop tool list`).
    #[arg(long, value_delimiter = ',')]
    pub tools: Vec<String>,
    /// Do not offer `ask_user` unless --tools names it. By default it is
    /// offered on each call whose MCP client supports elicitation (the
    /// client puts the question before a person), except with --local.
    #[arg(long)]
    pub no_ask_user: bool,
    /// Folder the fs and js tools work in (default: the current folder).
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Loop strategy: native, react, llm-only, tool-first or
    /// plan-and-execute.
    #[arg(long, value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub strategy: Option<String>,
    /// Settings file: JSON, or TOML when its name ends in `.toml` (as for
    /// `agentloop run --config`).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Skills to offer: a JSON file, as for `agentloop run --skills`.
    #[arg(long)]
    pub skills: Option<PathBuf>,
    /// MCP servers whose tools the agent may use (as for `agentloop run`).
    #[arg(long = "mcp", value_name = "CONFIG")]
    pub mcp: Vec<PathBuf>,
    /// A stdio MCP server whose tools the agent may use. Repeatable.
    #[arg(long = "mcp-stdio", value_name = "COMMAND")]
    pub mcp_stdio: Vec<String>,
    /// Seconds one MCP tool call of the agent may take (at least 1).
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    pub mcp_timeout: u64,
    /// Which tool calls run without asking: all, none or tool names. The
    /// others are asked through the client (MCP elicitation), or refused
    /// when the client cannot ask.
    #[arg(long, value_name = "all|none|TOOL,...")]
    pub approve: Option<String>,
    /// A JSON Schema file every answer must fit.
    #[arg(long, value_name = "FILE")]
    pub output_schema: Option<PathBuf>,
}

impl McpServeArgs {
    /// `run`'s flags for the agent these flags describe.
    fn run_args(&self) -> crate::run_args::RunArgs {
        crate::run_args::RunArgs {
            prompt: None,
            demo: false,
            local: self.local,
            provider: self.provider.clone(),
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            system: self.system.clone(),
            agent: None,
            starting: None,
            max_tokens: self.max_tokens,
            timeout: None,
            max_iterations: self.max_iterations,
            compaction: self.compaction,
            context: crate::context_args::ContextArgs::default(),
            tools: self.tools.clone(),
            no_ask_user: self.no_ask_user,
            root: self.root.clone(),
            db: None,
            memory_scope: None,
            json: false,
            strategy: self.strategy.clone(),
            config: self.config.clone(),
            skills: self.skills.clone(),
            mcp: self.mcp.clone(),
            mcp_stdio: self.mcp_stdio.clone(),
            a2a: Vec::new(),
            mcp_timeout: self.mcp_timeout,
            approve: self.approve.clone(),
            output_schema: self.output_schema.clone(),
            model_flag: self.model.is_some(),
        }
    }
}

/// Builds the agent and serves it until stdin closes (stdio) or Ctrl-C
/// (HTTP).
pub async fn serve(
    mut args: McpServeArgs,
    approvals: ApprovalPolicies,
    configured_mcp: McpConfig,
    hooks: Hooks,
) -> Outcome {
    if args.local {
        crate::local_model::setup(crate::local_model::Flags {
            model_flag: args.model.is_some(),
            provider: &mut args.provider,
            base_url: &mut args.base_url,
            model: &mut args.model,
            system: Some(&mut args.system),
            max_tokens: &mut args.max_tokens,
            tools: &args.tools,
        })
        .await?;
    }
    // The agent `run` would build from the same flags.
    let crate::agent::Agent {
        strategy,
        chosen,
        mut options,
        memory,
        ..
    } = crate::agent::build(&args.run_args(), false).await?;
    options.project_id = "mcp".to_owned();
    let minion = tools::MinionModel {
        provider: chosen.provider.clone(),
        options: LoopOptions {
            request: RequestOptions {
                system_prompt: None,
                ..options.request.clone()
            },
            ..options.clone()
        },
    };
    let mut agent_tools = tools::build(&args.tools, args.root.as_deref(), Some(&minion), &memory)?;
    // Kept while serving: dropping the servers stops their processes.
    let mcp = run::start_mcp(configured_mcp, &args.mcp, &args.mcp_stdio, args.mcp_timeout).await?;
    agent_tools.extend(mcp.tools());
    let skills = skills::for_run(args.skills.as_deref(), args.root.as_deref(), &agent_tools)
        .map_err(Failure::Usage)?;
    options.approvals = approvals;
    let mut deps = RunDeps::new(chosen.provider).with_tools(agent_tools);
    deps.hooks = hooks;
    // The system prompt and skill list open every chat.
    let prepared = prepare(options, Vec::new(), deps, &skills);
    let description = args.description.clone().unwrap_or_else(|| {
        "Ask the agent: it answers the prompt, using its tools, and says how the run ended."
            .to_owned()
    });
    let host = Arc::new(CliAgent {
        offer_ask_user: !args.no_ask_user && !args.local,
        name: args.name.clone(),
        description,
        strategy,
        options: prepared.options,
        deps: prepared.deps,
        chats: Arc::new(Chats {
            opening: prepared.context,
            slots: Mutex::new(HashMap::new()),
        }),
    });
    let served = match args.http {
        None => agentloop_mcp::serve::serve_stdio(host).await,
        Some(address) => {
            let bearer_token = match &args.token_env {
                None => None,
                Some(var) => Some(
                    std::env::var(var)
                        .ok()
                        .filter(|t| !t.trim().is_empty())
                        .ok_or_else(|| {
                            Failure::usage(format!("--token-env {var}: the variable is not set"))
                        })?,
                ),
            };
            check_exposure(address, bearer_token.is_some(), args.allow_unauthenticated)?;
            let listener = tokio::net::TcpListener::bind(address)
                .await
                .map_err(|e| Failure::Runtime(format!("cannot listen on {address}: {e}")))?;
            let bound = listener
                .local_addr()
                .map_err(|e| Failure::Runtime(format!("cannot listen on {address}: {e}")))?;
            out::note(format!("MCP server at http://{bound}{}", args.path));
            let options = agentloop_mcp::serve::HttpOptions {
                path: args.path.clone(),
                bearer_token,
                allowed_hosts: args.allowed_hosts.clone(),
            };
            let shutdown = async {
                let _ = tokio::signal::ctrl_c().await;
            };
            agentloop_mcp::serve::serve_http(listener, host, options, shutdown).await
        }
    };
    mcp.shutdown().await;
    served.map_err(|e| Failure::Runtime(e.to_string()))?;
    Ok(ExitCode::SUCCESS)
}

/// Refuses an HTTP bind other machines can reach with no bearer token
/// unless `allowed` (--allow-unauthenticated), which is then warned about.
fn check_exposure(address: SocketAddr, token: bool, allowed: bool) -> Result<(), Failure> {
    if token || address.ip().is_loopback() {
        return Ok(());
    }
    if !allowed {
        return Err(Failure::usage(format!(
            "--http {address} is reachable from other machines and no --token-env names a \
             token, so anyone reaching the port could run the agent and its tools: set \
             --token-env VAR (a variable holding the token clients must send), bind \
             127.0.0.1, or pass --allow-unauthenticated to serve it open anyway"
        )));
    }
    out::note(format!(
        "WARNING: serving on {address} with no token (--allow-unauthenticated): anyone who \
         reaches this port can run the agent and its tools"
    ));
    Ok(())
}

/// A conversation's history, or a mark that a turn of it is running.
enum Slot {
    Idle(Vec<Message>),
    Busy,
}

/// The conversations of this server, by chat id, for as long as it runs.
struct Chats {
    /// What every chat starts with: the system prompt and the skill list.
    opening: Vec<Message>,
    slots: Mutex<HashMap<String, Slot>>,
}

impl Chats {
    /// The chat's history, marked busy; a new chat when `id` is unknown or
    /// not given.
    fn take(&self, id: Option<String>) -> Result<(String, Vec<Message>), AskError> {
        let mut slots = self
            .slots
            .lock()
            .map_err(|_| AskError::new("the chat table is unusable after a failure"))?;
        let id = id.unwrap_or_else(|| agentloop_runtime::ids::new_id("chat"));
        let history = match slots.insert(id.clone(), Slot::Busy) {
            Some(Slot::Idle(history)) => history,
            None => self.opening.clone(),
            Some(Slot::Busy) => {
                return Err(AskError::new(format!(
                    "the chat {id} is answering another prompt; wait for it, or leave out \
                     chat_id to start a new chat"
                )));
            }
        };
        Ok((id, history))
    }

    fn put(&self, id: String, history: Vec<Message>) {
        if let Ok(mut slots) = self.slots.lock() {
            slots.insert(id, Slot::Idle(history));
        }
    }
}

/// The agent, as `agentloop_mcp::serve` runs it.
struct CliAgent {
    name: String,
    description: String,
    strategy: Arc<dyn LoopStrategy>,
    options: LoopOptions,
    deps: RunDeps,
    chats: Arc<Chats>,
    /// Whether `ask_user` is offered on a call whose client can ask.
    offer_ask_user: bool,
}

impl AgentHost for CliAgent {
    fn describe(&self) -> (String, String) {
        (self.name.clone(), self.description.clone())
    }

    fn ask(&self, request: AskRequest, caller: Arc<Caller>) -> AskFuture {
        let strategy = self.strategy.clone();
        let options = self.options.clone();
        let mut deps = self.deps.clone().with_cancel(caller.cancel_token());
        // A question has someone to answer it only through elicitation.
        if self.offer_ask_user && caller.can_ask() {
            tools::offer_ask_user(&mut deps.tools);
        }
        let chats = self.chats.clone();
        Box::pin(async move {
            let (chat_id, mut history) = chats.take(request.chat_id)?;
            let before = history.clone();
            let number = history.len() + 1;
            history.push(Message::user_text(format!("user-{number}"), request.prompt));
            let result = turn(&*strategy, options, history, deps, &caller).await;
            // A turn that could not run leaves the chat as it was.
            let kept = match &result {
                Ok(result) => result.messages.clone().into_vec(),
                Err(_) => before,
            };
            chats.put(chat_id.clone(), kept);
            Ok(outcome(chat_id, &result?))
        })
    }
}

/// One turn: the strategy's run, then each wait settled by the caller and
/// the run resumed, until it ends.
async fn turn(
    strategy: &dyn LoopStrategy,
    options: LoopOptions,
    context: Vec<Message>,
    deps: RunDeps,
    caller: &Caller,
) -> Result<LoopResult, AskError> {
    let mut events = strategy.run(options.clone(), context, deps.clone());
    loop {
        let mut result = None;
        while let Some(event) = events.next().await {
            caller.event(&event).await;
            if let Some(root) = event.into_root_result() {
                result = Some(root);
            }
        }
        let result = result.ok_or_else(|| AskError::new("the run ended without a result"))?;
        let LoopStatus::Suspended {
            pending,
            state: Some(state),
        } = &result.status
        else {
            return Ok(result);
        };
        let decisions = caller.decide(pending).await;
        events = agentloop_engine::decide(
            options.clone(),
            state.as_ref().clone(),
            decisions,
            deps.clone(),
        )
        .map_err(|e| AskError::new(format!("cannot resume the run: {e}")))?;
    }
}

/// What the client is told of a finished turn.
fn outcome(chat_id: String, result: &LoopResult) -> AskOutcome {
    let output = match &result.status {
        LoopStatus::Complete {
            output: Some(value),
            ..
        }
        | LoopStatus::Complete {
            return_value: Some(value),
            ..
        } => Some(value.clone()),
        _ => None,
    };
    let is_error = matches!(
        result.status,
        LoopStatus::Error { .. } | LoopStatus::MaxIterations | LoopStatus::LimitExceeded { .. }
    );
    let answer = result.final_text().filter(|t| !t.trim().is_empty());
    let answer = match &result.status {
        LoopStatus::Error { error } if answer.is_none() => Some(format!("the run failed: {error}")),
        _ => answer,
    };
    AskOutcome {
        chat_id,
        status: result.status.name().to_owned(),
        answer,
        output,
        is_error,
    }
}
