//! `agentloop chats list|show|delete`: the chats of a database.

use std::process::ExitCode;

use agentloop_types::ContentBlock;
use clap::{Args, Subcommand};

use crate::chat::open_db;

#[derive(Subcommand)]
pub enum ChatsCommand {
    /// List every chat (minion chats indented under their parent's id).
    List(DbArgs),
    /// Print a chat's messages.
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

pub async fn chats(command: ChatsCommand) -> Result<ExitCode, String> {
    match command {
        ChatsCommand::List(args) => list(args).await,
        ChatsCommand::Show(args) => show(args).await,
        ChatsCommand::Delete(args) => {
            let store = open_db(args.db.as_deref()).await?;
            store
                .delete_chat(&args.id)
                .await
                .map_err(|e| e.to_string())?;
            eprintln!("agentloop: deleted chat {}", args.id);
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn list(args: DbArgs) -> Result<ExitCode, String> {
    let store = open_db(args.db.as_deref()).await?;
    let mut chats = Vec::new();
    for project in store.list_projects().await.map_err(|e| e.to_string())? {
        chats.extend(
            store
                .list_chats(&project.id)
                .await
                .map_err(|e| e.to_string())?,
        );
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&chats).map_err(|e| e.to_string())?
        );
        return Ok(ExitCode::SUCCESS);
    }
    for chat in chats {
        let messages = store
            .list_messages(&chat.id)
            .await
            .map_err(|e| e.to_string())?
            .len();
        let parent = chat
            .minion
            .map(|m| format!("  (minion of {})", m.parent_chat_id))
            .unwrap_or_default();
        println!(
            "{}\t{}\t{} messages\t{} in / {} out tokens\t{}{}",
            chat.id,
            chat.project_id,
            messages,
            chat.totals.input_tokens,
            chat.totals.output_tokens,
            chat.title,
            parent
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn show(args: ChatIdArgs) -> Result<ExitCode, String> {
    let store = open_db(args.db.as_deref()).await?;
    let chat = store.get_chat(&args.id).await.map_err(|e| e.to_string())?;
    let messages = store
        .list_messages(&chat.id)
        .await
        .map_err(|e| e.to_string())?;
    if args.json {
        let value = serde_json::json!({ "chat": chat, "messages": messages });
        println!(
            "{}",
            serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!("chat {} ({})", chat.id, chat.title);
    for stored in messages {
        let role = serde_json::to_value(stored.message.role)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        for block in &stored.message.content {
            let line = match block {
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
            println!("{:>4} {role}: {line}", stored.seq);
        }
        let text = stored.message.text();
        if !text.is_empty() {
            println!("{:>4} {role}: {text}", stored.seq);
        }
    }
    Ok(ExitCode::SUCCESS)
}
