//! `agentloop chat`: a conversation on a stored chat. On a terminal it is
//! a REPL (see [`crate::repl`]); otherwise each line of stdin is a user
//! message. Replies stream like `agentloop run`; the history stays in the
//! database, and `--continue` or `--chat ID` pick a conversation up again.

use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use agentloop_runtime::{ChatRuntime, ChatSettings, LoopSettings, RecoveryMode};
use agentloop_storage::model::Chat;
use agentloop_storage::{StorageError, Store};
use agentloop_types::{ApprovalPolicies, Decision, Hooks, PendingCall, Wait};
use clap::Args;
use futures::StreamExt;

use crate::out::{Failure, Outcome, Stdout};
use crate::session::{CLI_PROJECT, Session, chat_for, waiting_on};
use crate::{approve, db, out, tools};

#[derive(Args)]
pub struct ChatArgs {
    /// Database: a SQLite file path, `sqlite:PATH`, `postgres://...` or
    /// `memory` (default: agentloop.db in the platform data folder).
    #[arg(long)]
    pub db: Option<String>,
    /// Whose memories the memory tool keeps: user:ID, project:ID or
    /// agent:ID (default: project:cli), in the database.
    #[arg(long)]
    pub memory_scope: Option<String>,
    /// End each turn with the memory extraction step: one more model call
    /// proposing what of the turn is worth remembering, written to the
    /// --memory-scope memories with the run it came from (off by default).
    #[arg(long)]
    pub extract_memories: bool,
    /// Chat to continue (created with this id if it does not exist).
    #[arg(long, conflicts_with = "continue_last", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub chat: Option<String>,
    /// Continue the most recently used chat.
    #[arg(long = "continue", short = 'c')]
    pub continue_last: bool,
    /// anthropic, openai-chat, openai-responses, openai-compatible, gemini,
    /// or scripted:FILE (default: as for `run`, the demo when nothing is
    /// configured).
    #[arg(long)]
    pub provider: Option<String>,
    /// Model id.
    #[arg(long)]
    pub model: Option<String>,
    /// The provider's base URL (default: the provider's `*_BASE_URL`).
    #[arg(long)]
    pub base_url: Option<String>,
    /// System prompt of a new chat (default: the starting agent's
    /// instructions).
    #[arg(long)]
    pub system: Option<String>,
    /// The agent declared in config.toml (`[agents.NAME]`) to start with:
    /// its instructions, model and tools, and the agents it may hand the
    /// conversation to (default: the configuration's `agent`, else none).
    /// A chat continued goes on with the agent that was speaking.
    #[arg(long, value_name = "NAME", conflicts_with = "demo")]
    pub agent: Option<String>,
    /// The starting agent, resolved from the configuration.
    #[arg(skip)]
    pub starting: Option<crate::agents::Starting>,
    /// Tools to offer, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub tools: Vec<String>,
    /// Tool search and context budgets of the chat's runs.
    #[command(flatten)]
    pub context: crate::context_args::ContextArgs,
    /// Do not offer `ask_user` unless --tools names it. By default the
    /// model may ask the person a question when one can answer: stdin and
    /// stdout are a terminal, the output is not --json, and neither --demo
    /// nor --local is given.
    #[arg(long)]
    pub no_ask_user: bool,
    /// Folder the fs and js tools work in (default: the current folder).
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Take no file checkpoints. By default, before each step that may
    /// write (fs writes, shell, javascript, minion), the folder's changed
    /// files are kept beside the database, so `agentloop runs rewind` and
    /// `runs fork --restore-files` can put the folder back as it was at a
    /// step, and `runs diff` can show what a step changed.
    #[arg(long)]
    pub no_file_checkpoints: bool,
    /// Print every event as a JSON line instead of the terminal view.
    #[arg(long)]
    pub json: bool,
    /// Which tool calls run without asking: all, none (ask as the tools'
    /// policies say) or tool names, comma-separated (default: the
    /// configuration's `approve`, else none).
    #[arg(long, value_name = "all|none|TOOL,...")]
    pub approve: Option<String>,
    /// Play the shipped demo conversation (also what happens when no
    /// provider is configured).
    #[arg(long, conflicts_with = "provider")]
    pub demo: bool,
    /// Chat with the local model, as `agentloop run --local` does (its
    /// server started or reused, a system prompt for a small model unless
    /// --system, 128 tokens a turn).
    #[arg(long, conflicts_with_all = ["demo", "provider", "base_url"])]
    pub local: bool,
    /// MCP servers to start, as for `run`; their prompts are the REPL's
    /// `/prompts` and `/prompt`.
    #[command(flatten)]
    pub mcp: crate::mcp_flags::McpFlags,
}

pub async fn chat(
    mut args: ChatArgs,
    approvals: ApprovalPolicies,
    mut hooks: Hooks,
    configured_mcp: agentloop_mcp::McpConfig,
) -> Outcome {
    let store = db::open_for_write(args.db.as_deref()).await?;
    let crate::conversation_model::ConversationModel {
        chosen,
        max_tokens,
        demo,
        tool_names,
        minion,
    } = crate::conversation_model::choose(crate::conversation_model::Flags {
        demo: args.demo,
        local: args.local,
        provider: &mut args.provider,
        model: &mut args.model,
        base_url: &mut args.base_url,
        system: &mut args.system,
        tools: &args.tools,
    })
    .await?;
    let memory_scope = crate::memories::scope(args.memory_scope.as_deref())?;
    let memory = crate::memories::stored(store.clone(), memory_scope.clone());
    // Each turn starts by recalling the stored memories its message is
    // about, as `run` does.
    let recall = crate::memories::recall(&tool_names, store.clone(), memory_scope.clone());
    let mut tools = tools::build(&tool_names, args.root.as_deref(), Some(&minion), &memory)?;
    if crate::run::can_ask(args.json, demo || args.local || args.no_ask_user) {
        tools::offer_ask_user(&mut tools);
    }
    let (mcp, _) = args
        .mcp
        .start(
            configured_mcp,
            crate::run::forms(args.json, demo || args.local),
        )
        .await?;
    tools.extend(mcp.tools());
    let handoffs = match &args.starting {
        Some(starting) => starting.handoffs(args.root.as_deref(), &minion, &memory)?,
        None => None,
    };
    let settings = ChatSettings {
        loop_settings: LoopSettings {
            model: Some(chosen.model.clone()),
            system_prompt: crate::project_instructions::with_system(
                args.root.as_deref(),
                args.system.clone(),
            )?,
            max_tokens,
            approvals: approvals.clone(),
            context: Some(args.context.options()).filter(|c| !c.is_default()),
            ..LoopSettings::default()
        },
    };
    let chat_id = match (&args.chat, args.continue_last) {
        (_, true) => Some(last_chat(&store).await?),
        (id, false) => id.clone(),
    };
    let chat = chat_for(&store, chat_id.as_deref(), &settings).await?;
    let chat = use_approvals(&store, chat, &approvals).await?;
    if args.extract_memories {
        hooks.push(crate::memories::extraction(
            store.clone(),
            memory_scope,
            &chat.id,
            chosen.provider.clone(),
            &chosen.model,
            max_tokens,
        ));
    }
    if !args.no_file_checkpoints
        && let Some(hook) =
            crate::file_checkpoints::hook(args.db.as_deref(), args.root.as_deref(), &tools)?
    {
        hooks.push(hook);
    }
    // Recovered with the agents and tools the run had, so a run
    // interrupted after a handoff goes on with the agent speaking.
    let mut recovery = ChatRuntime::new(store.clone(), chosen.provider.clone())
        .with_tools(tools.clone())
        .with_strategy(crate::session::strategy(recall.clone()));
    if let Some(handoffs) = &handoffs {
        recovery = recovery.with_handoffs(handoffs.clone());
    }
    recovery
        .recover(RecoveryMode::ExpiredLeases)
        .await
        .map_err(|e| e.to_string())?;
    let interrupted = recovery
        .has_interrupted_run(&chat.id)
        .await
        .map_err(|e| e.to_string())?;
    let where_stored = db::describe(args.db.as_deref());
    out::note(format!("chat {} (stored in {where_stored})", chat.id));
    let mut session = Session::new(store, chosen.provider, tools, chat.id, settings, args.json);
    session.hooks = hooks;
    session.handoffs = handoffs;
    session.recall = recall;
    session.keep_steps = crate::runs::step_retention()?;
    session.mcp = mcp;
    // A run cut short (its process was killed) goes on first, from its
    // last checkpoint, before any new message.
    let continued = if interrupted {
        out::note("continuing the run that was interrupted");
        Some(session.continue_interrupted().await?)
    } else {
        None
    };
    // What a turn waits for is settled by the chat (asked, answered from
    // the next line, or rejected), not drawn by the view.
    session.set_asking(true);
    if std::io::stdin().is_terminal() && !args.json {
        return crate::repl::run(&mut session).await;
    }
    // Lines are read on a thread of their own so the runtime stays free to
    // see Ctrl-C while waiting for the next one (it then ends the chat).
    let (lines, mut incoming) = futures::channel::mpsc::unbounded();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            if lines.unbounded_send(line).is_err() {
                break;
            }
        }
    });
    // A chat continued while it waits: settle that first.
    let mut waiting = session.pending().await?;
    let mut status = continued;
    loop {
        if !waiting.is_empty() {
            // Approvals are rejected (nobody can approve from a pipe);
            // questions take the next lines, in order.
            let approvals: Vec<PendingCall> = waiting
                .iter()
                .filter(|item| matches!(item.wait, Wait::Approval { .. }))
                .cloned()
                .collect();
            let mut decisions = approve::without_person(&approvals);
            for item in &waiting {
                let Wait::Question { question } = &item.wait else {
                    continue;
                };
                Stdout::new().line(format!("? {}", out::sanitize(question)))?;
                match next_line(&mut session, &mut incoming).await? {
                    Line::Text(text) => {
                        decisions.insert(item.call.id.clone(), Decision::Answer { text });
                    }
                    Line::End => {
                        out::note(format!(
                            "chat {} waits for an answer; continue it with --continue",
                            session.chat_id
                        ));
                        return Ok(ExitCode::from(4));
                    }
                    Line::Interrupted => return Ok(ExitCode::from(130)),
                }
            }
            let resumed = session.resume(decisions).await?;
            waiting = waiting_on(&resumed);
            status = Some(resumed);
            continue;
        }
        let line = match next_line(&mut session, &mut incoming).await? {
            Line::Text(line) => line,
            Line::End => break,
            Line::Interrupted => return Ok(ExitCode::from(130)),
        };
        let sent = session.send(line).await?;
        waiting = waiting_on(&sent);
        status = Some(sent);
    }
    Ok(status
        .as_ref()
        .map_or(ExitCode::SUCCESS, crate::run::exit_code))
}

/// One line of a piped chat's input.
enum Line {
    Text(String),
    End,
    Interrupted,
}

/// The next non-empty line of stdin; Ctrl-C meanwhile ends the chat.
async fn next_line(
    session: &mut Session,
    incoming: &mut futures::channel::mpsc::UnboundedReceiver<std::io::Result<String>>,
) -> Result<Line, Failure> {
    loop {
        let mut interrupts = session.take_interrupts().await;
        let next = tokio::select! {
            next = incoming.next() => Some(next),
            Some(()) = interrupts.next() => None,
        };
        session.keep_interrupts(interrupts);
        let Some(next) = next else {
            return Ok(Line::Interrupted);
        };
        let Some(line) = next else {
            return Ok(Line::End);
        };
        let line = line.map_err(|e| format!("cannot read stdin: {e}"))?;
        if !line.trim().is_empty() {
            return Ok(Line::Text(line));
        }
    }
}

/// Stores `approvals` (from `--approve` and the configuration) as the
/// chat's policies: each invocation decides what asks.
async fn use_approvals(
    store: &Arc<dyn Store>,
    mut chat: Chat,
    approvals: &ApprovalPolicies,
) -> Result<Chat, Failure> {
    let mut settings: ChatSettings = serde_json::from_value(chat.settings.clone())
        .map_err(|e| format!("the settings of chat {} are unreadable: {e}", chat.id))?;
    if &settings.loop_settings.approvals == approvals {
        return Ok(chat);
    }
    settings.loop_settings.approvals = approvals.clone();
    chat.settings = serde_json::to_value(&settings).map_err(|e| e.to_string())?;
    store.update_chat(&chat).await.map_err(|e| e.to_string())?;
    Ok(chat)
}

/// The id of the chat of the CLI's project used last.
async fn last_chat(store: &Arc<dyn Store>) -> Result<String, Failure> {
    let chats = match store.list_chats(CLI_PROJECT).await {
        Ok(chats) => chats,
        Err(StorageError::NotFound { .. }) => Vec::new(),
        Err(e) => return Err(Failure::Runtime(e.to_string())),
    };
    chats
        .into_iter()
        .filter(|chat| chat.minion.is_none())
        .max_by_key(|chat| chat.updated_at)
        .map(|chat| chat.id)
        .ok_or_else(|| Failure::Runtime("there is no chat to continue yet".to_owned()))
}
