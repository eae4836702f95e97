//! `agentloop chat`: an interactive session on a stored chat. Each line of
//! stdin is a user message; the reply streams like `agentloop run`; the
//! history stays in the database.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use agentloop_runtime::{ChatRuntime, ChatSettings, LoopSettings, RecoveryMode};
use agentloop_storage::model::{Chat, Project, now_millis};
use agentloop_storage::{StorageError, Store};
use agentloop_types::{LoopOptions, Message};
use clap::Args;

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
    #[arg(long)]
    pub chat: Option<String>,
    /// anthropic, openai-chat, openai-responses, openai-compatible, or
    /// scripted:FILE.
    #[arg(long)]
    pub provider: Option<String>,
    /// Model id.
    #[arg(long)]
    pub model: Option<String>,
    /// Base URL of an OpenAI-compatible server.
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
            model: Some(chosen.model),
            api: Some(chosen.api),
            system_prompt: args.system,
            ..LoopSettings::default()
        },
    };
    let chat = chat_for(&store, args.chat.as_deref(), &settings).await?;
    let runtime = ChatRuntime::new(Arc::clone(&store), chosen.provider).with_tools(tools);
    runtime
        .recover(RecoveryMode::ExpiredLeases)
        .await
        .map_err(|e| e.to_string())?;
    out::note(format!(
        "chat {} (stored in {})",
        chat.id,
        db::describe(args.db.as_deref())
    ));
    let mut view = render::View::new(Style::stdout());

    let mut status = None;
    let stdin = std::io::stdin();
    for (n, line) in stdin.lock().lines().enumerate() {
        let line = line.map_err(|e| format!("cannot read stdin: {e}"))?;
        if line.trim().is_empty() {
            continue;
        }
        let message = Message::user_text(agentloop_runtime::ids::new_id(&format!("user{n}")), line);
        let mut stdout = Stdout::new();
        let mut failure = None;
        let json = args.json;
        let outcome = runtime
            .send_with(&chat.id, message, &mut |event| {
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
            })
            .await
            .map_err(|e| e.to_string())?;
        if let Some(e) = failure {
            return Err(e);
        }
        stdout.flush().map_err(Failure::from_io)?;
        status = Some(outcome.result.status);
    }
    Ok(status
        .as_ref()
        .map_or(ExitCode::SUCCESS, crate::run::exit_code))
}
