//! `agentloop chat`: a conversation on a stored chat. On a terminal it is
//! a REPL (see [`crate::repl`]); otherwise each line of stdin is a user
//! message. Replies stream like `agentloop run`; the history stays in the
//! database, and `--continue` or `--chat ID` pick a conversation up again.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use agentloop_runtime::{ChatRuntime, ChatSettings, LoopSettings, RecoveryMode};
use agentloop_storage::model::{Chat, Project, now_millis};
use agentloop_storage::{StorageError, Store};
use agentloop_types::{
    ApprovalPolicies, CancellationToken, Decision, Decisions, LoopEvent, LoopOptions, LoopStatus,
    Message, ModelProvider, PendingCall, TokenTotals, Tool, Wait,
};
use clap::Args;
use futures::StreamExt;

use crate::out::{Failure, Outcome, Stdout, Style};
use crate::{approve, db, demo, out, providers, render, tools};

/// Id of the project the CLI keeps its chats in.
pub const CLI_PROJECT: &str = "cli";

#[derive(Args)]
pub struct ChatArgs {
    /// Database: a SQLite file path, `sqlite:PATH`, `postgres://...` or
    /// `memory` (default: agentloop.db in the platform data folder).
    #[arg(long)]
    pub db: Option<String>,
    /// Chat to continue (created with this id if it does not exist).
    #[arg(long, conflicts_with = "continue_last")]
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
    /// System prompt of a new chat.
    #[arg(long)]
    pub system: Option<String>,
    /// Tools to offer, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub tools: Vec<String>,
    /// Folder the fs and js tools work in (default: the current folder).
    #[arg(long)]
    pub root: Option<PathBuf>,
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
}

/// The chat `id` (created when missing), or a new chat.
async fn chat_for(
    store: &Arc<dyn Store>,
    id: Option<&str>,
    settings: &ChatSettings,
) -> Result<Chat, String> {
    if let Some(id) = id {
        match store.get_chat(id).await {
            Ok(chat) => return Ok(chat),
            Err(StorageError::NotFound { .. }) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    let now = now_millis();
    match store.get_project(CLI_PROJECT).await {
        Ok(_) => {}
        Err(StorageError::NotFound { .. }) => store
            .create_project(&Project {
                id: CLI_PROJECT.to_owned(),
                name: "agentloop cli".to_owned(),
                settings: serde_json::json!({}),
                approval_mode: None,
                created_at: now,
                updated_at: now,
            })
            .await
            .map_err(|e| e.to_string())?,
        Err(e) => return Err(e.to_string()),
    }
    let chat = Chat {
        id: id.map_or_else(|| agentloop_runtime::ids::new_id("chat"), str::to_owned),
        project_id: CLI_PROJECT.to_owned(),
        title: "agentloop chat".to_owned(),
        settings: serde_json::to_value(settings).map_err(|e| e.to_string())?,
        totals: Default::default(),
        minion: None,
        created_at: now,
        updated_at: now,
    };
    store.create_chat(&chat).await.map_err(|e| e.to_string())?;
    Ok(chat)
}

pub async fn chat(args: ChatArgs, approvals: ApprovalPolicies) -> Outcome {
    let store = db::open_for_write(args.db.as_deref()).await?;
    let demo = demo::wanted(
        args.demo,
        args.provider.as_deref(),
        args.base_url.as_deref(),
    );
    let chosen = if demo {
        out::note(demo::NOTICE);
        demo::provider(args.model.as_deref())?
    } else {
        providers::choose(
            args.provider.as_deref(),
            args.model.as_deref(),
            args.base_url.as_deref(),
        )?
    };
    let tool_names: Vec<String> = if demo && args.tools.is_empty() {
        demo::TOOLS.iter().map(|t| (*t).to_owned()).collect()
    } else {
        args.tools.clone()
    };
    let minion = tools::MinionModel {
        provider: chosen.provider.clone(),
        options: LoopOptions {
            model: chosen.model.clone(),
            api: chosen.api,
            ..LoopOptions::default()
        },
    };
    let tools = tools::build(&tool_names, args.root.as_deref(), Some(&minion))?;
    let settings = ChatSettings {
        loop_settings: LoopSettings {
            model: Some(chosen.model.clone()),
            api: Some(chosen.api),
            system_prompt: args.system.clone(),
            approvals: approvals.clone(),
            ..LoopSettings::default()
        },
    };
    let chat_id = match (&args.chat, args.continue_last) {
        (_, true) => Some(last_chat(&store).await?),
        (id, false) => id.clone(),
    };
    let chat = chat_for(&store, chat_id.as_deref(), &settings).await?;
    let chat = use_approvals(&store, chat, &approvals).await?;
    ChatRuntime::new(Arc::clone(&store), chosen.provider.clone())
        .recover(RecoveryMode::ExpiredLeases)
        .await
        .map_err(|e| e.to_string())?;
    let where_stored = db::describe(args.db.as_deref());
    out::note(format!("chat {} (stored in {where_stored})", chat.id));
    let mut session = Session {
        store,
        provider: chosen.provider,
        tools,
        chat_id: chat.id,
        settings,
        json: args.json,
        view: render::View::new(Style::stdout()),
        interrupts: None,
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
    let mut status = None;
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

/// What a suspended status waits for; nothing for any other status.
pub fn waiting_on(status: &LoopStatus) -> Vec<PendingCall> {
    match status {
        LoopStatus::Suspended { pending, .. } => pending.clone(),
        _ => Vec::new(),
    }
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

/// One conversation: where it is stored and what its turns run with.
pub struct Session {
    /// The database.
    pub store: Arc<dyn Store>,
    /// The model provider.
    pub provider: Arc<dyn ModelProvider>,
    /// The tools offered.
    pub tools: Vec<Arc<dyn Tool>>,
    /// The chat.
    pub chat_id: String,
    /// The settings a new chat gets.
    pub settings: ChatSettings,
    json: bool,
    view: render::View,
    /// Installed at the first need: the line editor sets up its own
    /// signal handling when it starts, and must not replace this one.
    interrupts: Option<Interrupts>,
}

/// What one turn does.
enum Turn {
    /// Sends a user message.
    Send(Message),
    /// Resumes the waiting run with decisions.
    Resume(Decisions),
    /// Cancels the waiting run.
    Cancel,
}

/// Every Ctrl-C from the moment the chat starts, in order, so none is lost
/// between turns: one during a turn cancels it, one while waiting for input
/// ends a piped chat.
struct Interrupts {
    received: futures::channel::mpsc::UnboundedReceiver<()>,
}

impl Interrupts {
    /// Starts listening; returns once the listener is installed.
    async fn listen() -> Self {
        let (sender, received) = futures::channel::mpsc::unbounded();
        tokio::spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                if sender.unbounded_send(()).is_err() {
                    break;
                }
            }
        });
        // The listener subscribes when first polled: let it run once.
        tokio::task::yield_now().await;
        Self { received }
    }

    /// The next Ctrl-C.
    async fn next(&mut self) -> Option<()> {
        self.received.next().await
    }
}

impl Session {
    /// The Ctrl-C listener, installed on first use; give it back with
    /// [`Session::keep_interrupts`].
    async fn take_interrupts(&mut self) -> Interrupts {
        match self.interrupts.take() {
            Some(interrupts) => interrupts,
            None => Interrupts::listen().await,
        }
    }

    fn keep_interrupts(&mut self, interrupts: Interrupts) {
        self.interrupts = Some(interrupts);
    }

    /// Sends one user message and streams the reply; Ctrl-C meanwhile
    /// cancels the turn (the run is then stored `cancelled`).
    pub async fn send(&mut self, text: String) -> Result<LoopStatus, Failure> {
        let message = Message::user_text(agentloop_runtime::ids::new_id("user"), text);
        self.turn(Turn::Send(message)).await
    }

    /// Resumes the chat's waiting run with a person's decisions and
    /// streams what follows.
    pub async fn resume(&mut self, decisions: Decisions) -> Result<LoopStatus, Failure> {
        self.turn(Turn::Resume(decisions)).await
    }

    /// Cancels the chat's waiting run: its pending calls are closed.
    pub async fn cancel_waiting(&mut self) -> Result<LoopStatus, Failure> {
        self.turn(Turn::Cancel).await
    }

    /// What the chat's waiting run (if any) waits for.
    pub async fn pending(&self) -> Result<Vec<PendingCall>, Failure> {
        ChatRuntime::new(Arc::clone(&self.store), self.provider.clone())
            .with_tools(self.tools.clone())
            .pending(&self.chat_id)
            .await
            .map_err(|e| Failure::Runtime(e.to_string()))
    }

    /// Whether a person is asked about pending calls (the REPL): the view
    /// then leaves them to the prompt.
    pub fn set_asking(&mut self, asking: bool) {
        self.view.set_asking(asking);
    }

    async fn turn(&mut self, turn: Turn) -> Result<LoopStatus, Failure> {
        // A runtime per turn: its token, once cancelled, stays cancelled.
        let cancel = CancellationToken::new();
        let mut interrupts = self.take_interrupts().await;
        let runtime = ChatRuntime::new(Arc::clone(&self.store), self.provider.clone())
            .with_tools(self.tools.clone())
            .with_cancel(cancel.clone());
        let mut stdout = Stdout::new();
        let mut failure = None;
        let json = self.json;
        let view = &mut self.view;
        let mut on_event = |event: &LoopEvent| {
            let written = if json {
                serde_json::to_string(event)
                    .map_err(|e| Failure::Runtime(e.to_string()))
                    .and_then(|l| stdout.line(l))
            } else {
                view.event(&mut render::Sinks::one(&mut stdout), event)
                    .map_err(Failure::from_io)
            };
            if let Err(e) = written {
                failure.get_or_insert(e);
            }
        };
        let outcome = {
            let chat_id = self.chat_id.as_str();
            let ran: std::pin::Pin<Box<dyn std::future::Future<Output = _> + Send + '_>> =
                match turn {
                    Turn::Send(message) => {
                        Box::pin(runtime.send_with(chat_id, message, &mut on_event))
                    }
                    Turn::Resume(decisions) => {
                        Box::pin(runtime.resume_with(chat_id, decisions, &mut on_event))
                    }
                    Turn::Cancel => Box::pin(runtime.cancel_suspended(chat_id)),
                };
            tokio::pin!(ran);
            // `biased`: a Ctrl-C already received cancels before the turn
            // makes any progress.
            tokio::select! {
                biased;
                Some(()) = interrupts.next() => {
                    cancel.cancel();
                    ran.await
                }
                outcome = &mut ran => outcome,
            }
        };
        self.keep_interrupts(interrupts);
        let outcome = outcome.map_err(|e| e.to_string())?;
        if let Some(e) = failure {
            return Err(e);
        }
        stdout.flush().map_err(Failure::from_io)?;
        Ok(outcome.result.status)
    }

    /// Starts a new chat with the same settings; returns its id.
    pub async fn new_chat(&mut self) -> Result<String, Failure> {
        let chat = chat_for(&self.store, None, &self.settings).await?;
        self.chat_id = chat.id.clone();
        Ok(chat.id)
    }

    /// The model the chat's turns use.
    pub async fn model(&self) -> Result<Option<String>, Failure> {
        let chat = self
            .store
            .get_chat(&self.chat_id)
            .await
            .map_err(|e| e.to_string())?;
        let settings: ChatSettings = serde_json::from_value(chat.settings).unwrap_or_default();
        Ok(settings.loop_settings.model)
    }

    /// Switches the chat's model for the next turns.
    pub async fn set_model(&mut self, model: &str) -> Result<(), Failure> {
        let mut chat = self
            .store
            .get_chat(&self.chat_id)
            .await
            .map_err(|e| e.to_string())?;
        let mut settings: ChatSettings =
            serde_json::from_value(chat.settings.clone()).unwrap_or_default();
        settings.loop_settings.model = Some(model.to_owned());
        self.settings.loop_settings.model = Some(model.to_owned());
        chat.settings = serde_json::to_value(&settings).map_err(|e| e.to_string())?;
        chat.updated_at = now_millis();
        self.store
            .update_chat(&chat)
            .await
            .map_err(|e| e.to_string())?;
        Ok(())
    }

    /// The chat's token and cost totals.
    pub async fn totals(&self) -> Result<TokenTotals, Failure> {
        let chat = self
            .store
            .get_chat(&self.chat_id)
            .await
            .map_err(|e| e.to_string())?;
        Ok(chat.totals)
    }
}
