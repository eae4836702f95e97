//! `agentloop mcp serve`: the agent of `agentloop run` (its provider,
//! model, tools, strategy, skills and approvals, from the same flags and
//! configuration file) offered as an MCP server, over stdio or streamable
//! HTTP. The protocol side is `agentloop_mcp::serve`; this module is the
//! host that runs a turn: the strategy's run, each event passed to the
//! caller as progress, pending calls settled by the caller (MCP
//! elicitation), and the conversation kept per chat id for as long as the
//! server runs. A prompt to a chat while a turn of it runs is queued for
//! that turn's run, which takes it at its next step boundary (as a line
//! typed during an `agentloop chat` turn is); the call answers at once
//! with status `queued`. Prompts the run ended before taking start one
//! more turn when it completed; a turn that ends otherwise (failed,
//! cancelled) drops them.

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
    ApprovalPolicies, EventKind, Hooks, Inbox, LoopEvent, LoopOptions, LoopResult, LoopStatus,
    Message, MessageCreatedEvent, RequestOptions,
};
use clap::{Args, Subcommand};
use futures::StreamExt;

use crate::out::{Failure, Outcome};
use crate::run_args::CompactionArg;
use crate::{out, skills, tools};

/// `agentloop mcp ...`.
// Parsed once per process (see `args::Command`).
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
pub enum McpCommand {
    /// Offer the agent as an MCP server: one tool, `ask`, taking a prompt
    /// and an optional chat id. Over stdio (the default) or streamable
    /// HTTP (--http).
    Serve(McpServeArgs),
    /// List the prompts of MCP servers (`SERVER:PROMPT`, its arguments, a
    /// `*` on each required one), as `run --mcp-prompt` takes them.
    Prompts(crate::mcp_prompts::McpPromptsArgs),
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
    #[command(flatten)]
    pub mcp: crate::mcp_flags::McpFlags,
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
            mcp_prompt: None,
            mcp_args: Vec::new(),
            a2a: Vec::new(),
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
    // Its client's person answers the agent's own questions; the MCP
    // servers' forms have no one to ask.
    let (mcp, _) = args
        .mcp
        .start(configured_mcp, crate::mcp_flags::Forms::Unoffered)
        .await?;
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

/// A conversation's history, or the inbox of the turn of it that runs.
enum Slot {
    Idle(Vec<Message>),
    Busy(Arc<ChatInbox>),
}

/// The prompts sent to a chat while a turn of it runs: its run takes them
/// at its next step boundary (the driver skips those its history holds).
#[derive(Default)]
struct ChatInbox {
    queued: Mutex<Vec<Message>>,
}

impl ChatInbox {
    fn push(&self, message: Message) {
        if let Ok(mut queued) = self.queued.lock() {
            queued.push(message);
        }
    }

    fn holds(&self, id: &str) -> bool {
        self.queued
            .lock()
            .is_ok_and(|q| q.iter().any(|m| m.id == id))
    }

    fn all(&self) -> Vec<Message> {
        self.queued.lock().map(|q| q.clone()).unwrap_or_default()
    }
}

impl Inbox for ChatInbox {
    fn queued(&self) -> futures::future::BoxFuture<'_, Result<Vec<Message>, String>> {
        let found = self
            .queued
            .lock()
            .map(|q| q.clone())
            .map_err(|_| "the chat's inbox is unusable after a failure".to_owned());
        Box::pin(async move { found })
    }
}

/// What a prompt to a chat does.
enum Taken {
    /// It starts a turn of the chat, on its history, with a fresh inbox.
    Turn {
        id: String,
        history: Vec<Message>,
        inbox: Arc<ChatInbox>,
    },
    /// A turn of the chat runs: the prompt was queued for it.
    Queued { id: String },
}

/// The conversations of this server, by chat id, for as long as it runs.
struct Chats {
    /// What every chat starts with: the system prompt and the skill list.
    opening: Vec<Message>,
    slots: Mutex<HashMap<String, Slot>>,
}

impl Chats {
    /// `prompt` to chat `id` (a new chat when `id` is unknown or not
    /// given): the chat's history, marked busy, for a turn with the prompt
    /// last; or, while a turn of the chat runs, the prompt queued for it.
    fn take(&self, id: Option<String>, prompt: String) -> Result<Taken, AskError> {
        let mut slots = self.lock()?;
        let id = id.unwrap_or_else(|| agentloop_runtime::ids::new_id("chat"));
        if let Some(Slot::Busy(inbox)) = slots.get(&id) {
            inbox.push(Message::user_text(
                agentloop_runtime::ids::new_id("user"),
                prompt,
            ));
            return Ok(Taken::Queued { id });
        }
        let inbox = Arc::new(ChatInbox::default());
        let mut history = match slots.insert(id.clone(), Slot::Busy(inbox.clone())) {
            Some(Slot::Idle(history)) => history,
            _ => self.opening.clone(),
        };
        let number = history.len() + 1;
        history.push(Message::user_text(format!("user-{number}"), prompt));
        Ok(Taken::Turn { id, history, inbox })
    }

    /// Ends a turn of chat `id` whose history is now `history`: the chat
    /// is idle again, unless prompts were queued that its run did not take
    /// and `go_on` (it completed): those are returned, for one more turn.
    fn finish(
        &self,
        id: &str,
        history: Vec<Message>,
        inbox: &ChatInbox,
        go_on: bool,
    ) -> Result<Option<Vec<Message>>, (Vec<Message>, AskError)> {
        let mut slots = match self.lock() {
            Ok(slots) => slots,
            Err(error) => return Err((history, error)),
        };
        let untaken: Vec<Message> = inbox
            .all()
            .into_iter()
            .filter(|queued| !history.iter().any(|m| m.id == queued.id))
            .collect();
        if go_on && !untaken.is_empty() {
            return Ok(Some(untaken));
        }
        slots.insert(id.to_owned(), Slot::Idle(history));
        Ok(None)
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, HashMap<String, Slot>>, AskError> {
        self.slots
            .lock()
            .map_err(|_| AskError::new("the chat table is unusable after a failure"))
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
            let (chat_id, mut history, inbox) = match chats.take(request.chat_id, request.prompt)? {
                Taken::Queued { id } => return Ok(queued(id)),
                Taken::Turn { id, history, inbox } => (id, history, inbox),
            };
            let deps = deps.with_inbox(inbox.clone());
            // The chat before the prompt: what a turn that cannot run
            // leaves, and what a call dropped midway leaves.
            let before = history[..history.len() - 1].to_vec();
            let mut busy = BusyGuard {
                chats: &chats,
                id: &chat_id,
                before: Some(before.clone()),
            };
            loop {
                let result = turn(
                    &*strategy,
                    options.clone(),
                    history,
                    deps.clone(),
                    &caller,
                    &inbox,
                )
                .await;
                let (kept, go_on) = match &result {
                    Ok(result) => (
                        result.messages.clone().into_vec(),
                        matches!(result.status, LoopStatus::Complete { .. }),
                    ),
                    Err(_) => (before.clone(), false),
                };
                match chats.finish(&chat_id, kept.clone(), &inbox, go_on) {
                    // Prompts queued after the run's last step: one more
                    // turn takes them.
                    Ok(Some(untaken)) => {
                        history = kept;
                        history.extend(untaken);
                    }
                    Ok(None) => {
                        busy.before = None;
                        drop(busy);
                        return Ok(outcome(chat_id, &result?));
                    }
                    Err((_, error)) => return Err(error),
                }
            }
        })
    }
}

/// Leaves a chat idle again (as it was before the prompt) when the call
/// running its turn is dropped before the turn ends, so the chat does not
/// stay busy.
struct BusyGuard<'a> {
    chats: &'a Chats,
    id: &'a str,
    /// `None` once the turn ended and left the chat as it should be.
    before: Option<Vec<Message>>,
}

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        if let Some(before) = self.before.take()
            && let Ok(mut slots) = self.chats.slots.lock()
        {
            slots.insert(self.id.to_owned(), Slot::Idle(before));
        }
    }
}

/// What a prompt queued for a running turn answers at once.
fn queued(chat_id: String) -> AskOutcome {
    AskOutcome {
        answer: Some(format!(
            "queued: chat {chat_id} is answering another prompt; the agent reads this one at \
             its next step, and the answer comes back to the call that started the turn"
        )),
        chat_id,
        status: "queued".to_owned(),
        output: None,
        is_error: false,
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
    inbox: &ChatInbox,
) -> Result<LoopResult, AskError> {
    let mut events = strategy.run(options.clone(), context, deps.clone());
    loop {
        let mut result = None;
        while let Some(event) = events.next().await {
            caller.event(&event).await;
            if let Some(taken) = taken(&event, inbox) {
                caller.note(taken).await;
            }
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

/// The progress line for a prompt queued for the run that `event` says it
/// took: `message taken: ` and the start of its text.
fn taken(event: &LoopEvent, inbox: &ChatInbox) -> Option<String> {
    let EventKind::MessageCreated(MessageCreatedEvent { message }) = &event.kind else {
        return None;
    };
    if event.path.depth() != 0 || !inbox.holds(&message.id) {
        return None;
    }
    let text = message.text();
    let first = text.lines().next().unwrap_or_default();
    let mut shown: String = first.chars().take(80).collect();
    if shown.len() < text.len() {
        shown.push('…');
    }
    Some(format!("message taken: {shown}"))
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
