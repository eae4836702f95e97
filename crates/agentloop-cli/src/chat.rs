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
    CancellationToken, LoopEvent, LoopOptions, LoopStatus, Message, ModelProvider, TokenTotals,
    Tool,
};
use clap::Args;
use futures::StreamExt;

use crate::out::{Failure, Outcome, Stdout, Style};
use crate::{db, demo, out, providers, render, tools};

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

pub async fn chat(args: ChatArgs) -> Outcome {
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
            ..LoopSettings::default()
        },
    };
    let chat_id = match (&args.chat, args.continue_last) {
        (_, true) => Some(last_chat(&store).await?),
        (id, false) => id.clone(),
    };
    let chat = chat_for(&store, chat_id.as_deref(), &settings).await?;
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
    let mut status = None;
    loop {
        let mut interrupts = session.take_interrupts().await;
        let next = tokio::select! {
            next = incoming.next() => next,
            Some(()) = interrupts.next() => return Ok(ExitCode::from(130)),
        };
        session.keep_interrupts(interrupts);
        let Some(line) = next else { break };
        let line = line.map_err(|e| format!("cannot read stdin: {e}"))?;
        if line.trim().is_empty() {
            continue;
        }
        status = Some(session.send(line).await?);
    }
    Ok(status
        .as_ref()
        .map_or(ExitCode::SUCCESS, crate::run::exit_code))
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
        // A runtime per turn: its token, once cancelled, stays cancelled.
        let cancel = CancellationToken::new();
        let mut interrupts = self.take_interrupts().await;
        let runtime = ChatRuntime::new(Arc::clone(&self.store), self.provider.clone())
            .with_tools(self.tools.clone())
            .with_cancel(cancel.clone());
        let message = Message::user_text(agentloop_runtime::ids::new_id("user"), text);
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
                view.event(&mut stdout, event).map_err(Failure::from_io)
            };
            if let Err(e) = written {
                failure.get_or_insert(e);
            }
        };
        let outcome = {
            let sent = runtime.send_with(&self.chat_id, message, &mut on_event);
            tokio::pin!(sent);
            // `biased`: a Ctrl-C already received cancels before the turn
            // makes any progress.
            tokio::select! {
                biased;
                Some(()) = interrupts.next() => {
                    cancel.cancel();
                    sent.await
                }
                outcome = &mut sent => outcome,
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
