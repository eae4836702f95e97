//! `agentloop chats list|show|delete`: the chats of a database.

use std::process::ExitCode;

use std::sync::Arc;

use agentloop_storage::{StorageError, Store};
use agentloop_types::ContentBlock;
use clap::{Args, Subcommand};

use crate::db::{self, Access};
use crate::out::{Failure, Outcome, Stdout};

#[derive(Subcommand)]
pub enum ChatsCommand {
    /// List the chats written in, oldest first: id, last use, project,
    /// size and a title from the first message (minion chats name their
    /// parent).
    List(DbArgs),
    /// Print a chat's messages: text, tool calls and results in the order
    /// they happened.
    Show(ChatIdArgs),
    /// Delete a chat with its messages, runs and minion chats.
    Delete(ChatIdArgs),
}

#[derive(Args)]
pub struct DbArgs {
    /// Database (default: agentloop.db in the platform data folder).
    #[arg(long)]
    pub db: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct ChatIdArgs {
    /// The chat.
    pub id: String,
    /// Database (default: agentloop.db in the platform data folder).
    #[arg(long)]
    pub db: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

pub async fn chats(command: ChatsCommand) -> Outcome {
    match command {
        ChatsCommand::List(args) => list(args).await,
        ChatsCommand::Show(args) => show(args).await,
        ChatsCommand::Delete(args) => {
            let store = existing_chat(&args).await?;
            store
                .delete_chat(&args.id)
                .await
                .map_err(|e| e.to_string())?;
            crate::out::note(format!("deleted chat {}", args.id));
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The database holding chat `args.id`, or one line saying it is not there.
async fn existing_chat(args: &ChatIdArgs) -> Result<Arc<dyn Store>, Failure> {
    let missing = || {
        Failure::Runtime(format!(
            "no chat {} in {} (see `agentloop chats list`)",
            args.id,
            db::describe(args.db.as_deref())
        ))
    };
    let store = db::open(args.db.as_deref(), Access::Read)
        .await?
        .ok_or_else(missing)?;
    match store.get_chat(&args.id).await {
        Ok(_) => Ok(store),
        Err(StorageError::NotFound { .. }) => Err(missing()),
        Err(e) => Err(Failure::Runtime(e.to_string())),
    }
}

async fn list(args: DbArgs) -> Outcome {
    let mut out = Stdout::new();
    let Some(store) = db::open(args.db.as_deref(), Access::Read).await? else {
        if args.json {
            out.line("[]")?;
        }
        return Ok(ExitCode::SUCCESS);
    };
    let mut chats = Vec::new();
    for project in store.list_projects().await.map_err(|e| e.to_string())? {
        for chat in store
            .list_chats(&project.id)
            .await
            .map_err(|e| e.to_string())?
        {
            let messages = store
                .list_messages(&chat.id)
                .await
                .map_err(|e| e.to_string())?;
            // A chat nobody wrote in (what `/clear` leaves unused) is noise.
            if !messages.is_empty() {
                chats.push((chat, messages));
            }
        }
    }
    chats.sort_by_key(|(chat, _)| chat.updated_at);
    if args.json {
        let chats: Vec<_> = chats.into_iter().map(|(chat, _)| chat).collect();
        out.line(serde_json::to_string_pretty(&chats).map_err(|e| e.to_string())?)?;
        return Ok(ExitCode::SUCCESS);
    }
    for (chat, messages) in chats {
        let parent = chat
            .minion
            .as_ref()
            .map(|m| format!("  (minion of {})", m.parent_chat_id))
            .unwrap_or_default();
        let title = crate::session::title(&chat, &messages);
        out.line(format!(
            "{}\t{}\t{}\t{}\t{} in / {} out tokens\t{}{}",
            chat.id,
            when(chat.updated_at),
            chat.project_id,
            crate::out::counted(messages.len() as u64, "message", "messages"),
            chat.totals.input_tokens,
            chat.totals.output_tokens,
            crate::out::sanitize(&title),
            parent
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Unix milliseconds as `2025-01-15 10:30 UTC`.
pub(crate) fn when(millis: i64) -> String {
    let stamp = agentloop_storage::time::rfc3339(millis);
    format!(
        "{} UTC",
        stamp.get(..16).unwrap_or(&stamp).replace('T', " ")
    )
}

async fn show(args: ChatIdArgs) -> Outcome {
    let store = existing_chat(&args).await?;
    let mut out = Stdout::new();
    let chat = store.get_chat(&args.id).await.map_err(|e| e.to_string())?;
    let messages = store
        .list_messages(&chat.id)
        .await
        .map_err(|e| e.to_string())?;
    if args.json {
        let value = serde_json::json!({ "chat": chat, "messages": messages });
        out.line(serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?)?;
        return Ok(ExitCode::SUCCESS);
    }
    out.line(format!(
        "chat {} ({}, last used {})",
        chat.id,
        crate::out::sanitize(&crate::session::title(&chat, &messages)),
        when(chat.updated_at)
    ))?;
    // Each block where it happened: text said before a tool call shows
    // before it.
    for stored in messages {
        let role = serde_json::to_value(stored.message.role)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        for block in &stored.message.content {
            let line = match block {
                ContentBlock::Text { text, .. } if !text.trim().is_empty() => text.clone(),
                ContentBlock::ToolUse(call) => format!("tool call {} {}", call.name, call.input),
                ContentBlock::ToolResult(result) => format!(
                    "tool result{} {}",
                    if result.is_error { " (error)" } else { "" },
                    result.content
                ),
                ContentBlock::Text { .. }
                | ContentBlock::Thinking { .. }
                | ContentBlock::RedactedThinking { .. }
                | ContentBlock::Image { .. }
                | ContentBlock::Document { .. }
                | ContentBlock::Provider { .. } => continue,
            };
            out.line(format!(
                "{:>4} {role}: {}",
                stored.seq,
                crate::out::sanitize(&line)
            ))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
