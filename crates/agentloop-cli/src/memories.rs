//! The memory tool's store on the command line: where `run`, `chat` and
//! `eval` keep its files (`--memory-scope`, the database of `--db`), the
//! extraction step of `chat --extract-memories`, and `agentloop memory
//! list|show|edit|delete`.

use std::process::ExitCode;
use std::sync::Arc;

use agentloop_storage::model::{MemoryRecord, MemoryScope, now_millis};
use agentloop_storage::{MemoryExtraction, MemoryRecall, StorageError, Store, StoredMemories};
use agentloop_tools::vfs::MemoryVfs;
use agentloop_types::{Hook, ModelProvider, RequestOptions, Retriever, Vfs, VfsFor};
use clap::{Args, Subcommand};
use serde_json::json;

use crate::db::{self, Access};
use crate::out::{Failure, Outcome, Stdout, sanitize};

/// The scope the command line's memories belong to unless
/// `--memory-scope` names another: the project the CLI's chats are in.
pub const DEFAULT_SCOPE: &str = "project:cli";

/// Reads `--memory-scope` (default [`DEFAULT_SCOPE`]).
pub fn scope(flag: Option<&str>) -> Result<MemoryScope, Failure> {
    flag.unwrap_or(DEFAULT_SCOPE)
        .parse()
        .map_err(|e: StorageError| Failure::usage(format!("--memory-scope: {e}")))
}

/// Where a run's memories are: the memory tool's files, and what recalls
/// the memories its request is about as it starts.
pub struct RunMemory {
    /// The memory tool's files.
    pub files: Arc<dyn VfsFor>,
    /// The stored memories ranked against the run's request (BM25), when
    /// they are stored.
    pub recall: Option<Arc<dyn Retriever>>,
}

/// The run's memory when `tools` names the memory tool: the memories of
/// `scope` in the database `db` names (opened, and created when missing,
/// only then), so they outlive the process.
pub async fn for_run(
    tools: &[String],
    db: Option<&str>,
    scope: Option<&str>,
) -> Result<RunMemory, Failure> {
    if !tools.iter().any(|name| name.trim() == "memory") {
        return Ok(RunMemory {
            files: in_process(),
            recall: None,
        });
    }
    let scope = self::scope(scope)?;
    let store = db::open_for_write(db).await?;
    Ok(RunMemory {
        files: stored(store.clone(), scope.clone()),
        recall: recall(tools, store, scope),
    })
}

/// What recalls the memories of `scope` in `store` a request is about,
/// when `tools` names the memory tool.
pub fn recall(
    tools: &[String],
    store: Arc<dyn Store>,
    scope: MemoryScope,
) -> Option<Arc<dyn Retriever>> {
    let offered = tools.iter().any(|name| name.trim() == "memory");
    offered.then(|| Arc::new(MemoryRecall::new(store, scope)) as Arc<dyn Retriever>)
}

/// The memory extraction step of chat `chat_id`'s turns (see
/// [`MemoryExtraction`]): a `run_end` hook asking `provider`'s `model`
/// what to remember, writing to the memories of `scope` in `store`.
pub fn extraction(
    store: Arc<dyn Store>,
    scope: MemoryScope,
    chat_id: &str,
    provider: Arc<dyn ModelProvider>,
    model: &str,
    max_tokens: Option<u32>,
) -> Arc<dyn Hook> {
    let defaults = RequestOptions::default();
    let request = RequestOptions {
        model: model.to_owned(),
        max_tokens: max_tokens.unwrap_or(defaults.max_tokens),
        ..defaults
    };
    Arc::new(MemoryExtraction::new(
        store, scope, chat_id, provider, request,
    ))
}

/// The memories of `scope` in `store` as the memory tool's files.
pub fn stored(store: Arc<dyn Store>, scope: MemoryScope) -> Arc<dyn VfsFor> {
    Arc::new(StoredMemories::new(store, scope))
}

/// Files that last as long as the process (`tool list`, `tool call`, a
/// run offered no memory tool).
pub fn in_process() -> Arc<dyn VfsFor> {
    let vfs: Arc<dyn Vfs> = Arc::new(MemoryVfs::new());
    Arc::new(vfs)
}

#[derive(Subcommand)]
pub enum MemoryCommand {
    /// List the memories of a scope by path: id, path, the run that last
    /// wrote it and the first line of its text. Expired ones are left out.
    List(ScopeArgs),
    /// Print a memory with where it came from.
    Show(MemoryIdArgs),
    /// Change a memory's text or expiry.
    Edit(EditArgs),
    /// Forget a memory.
    Delete(MemoryIdArgs),
}

#[derive(Args)]
pub struct ScopeArgs {
    /// Whose memories: user:ID, project:ID or agent:ID.
    #[arg(long = "memory-scope", default_value = DEFAULT_SCOPE)]
    pub scope: String,
    /// Database (default: agentloop.db in the platform data folder).
    #[arg(long)]
    pub db: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct MemoryIdArgs {
    /// The memory's id (see `agentloop memory list`).
    pub id: String,
    /// Database (default: agentloop.db in the platform data folder).
    #[arg(long)]
    pub db: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct EditArgs {
    #[command(flatten)]
    pub memory: MemoryIdArgs,
    /// The new text.
    #[arg(long)]
    pub text: Option<String>,
    /// Forget it at this time (Unix milliseconds).
    #[arg(long, conflicts_with = "never_expires")]
    pub expires_at: Option<i64>,
    /// Keep it until it is deleted.
    #[arg(long)]
    pub never_expires: bool,
}

pub async fn memory(command: MemoryCommand) -> Outcome {
    match command {
        MemoryCommand::List(args) => list(args).await,
        MemoryCommand::Show(args) => {
            let (_, memory) = existing(&args).await?;
            print(&memory, args.json)
        }
        MemoryCommand::Edit(args) => {
            if args.text.is_none() && args.expires_at.is_none() && !args.never_expires {
                return Err(Failure::usage(
                    "nothing to change: give --text, --expires-at or --never-expires",
                ));
            }
            let (store, mut memory) = existing(&args.memory).await?;
            if let Some(text) = args.text {
                memory.text = text;
            }
            if let Some(at) = args.expires_at {
                memory.expires_at = Some(at);
            }
            if args.never_expires {
                memory.expires_at = None;
            }
            memory.updated_at = now_millis();
            let saved = store
                .save_memory(&memory)
                .await
                .map_err(|e| Failure::Runtime(e.to_string()))?;
            print(&saved, args.memory.json)
        }
        MemoryCommand::Delete(args) => {
            let (store, memory) = existing(&args).await?;
            store
                .delete_memory(&memory.id)
                .await
                .map_err(|e| Failure::Runtime(e.to_string()))?;
            crate::out::note(format!("deleted memory {} ({})", memory.id, memory.path));
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn list(args: ScopeArgs) -> Outcome {
    let scope = scope(Some(&args.scope))?;
    let mut out = Stdout::new();
    let Some(store) = db::open(args.db.as_deref(), Access::Read).await? else {
        if args.json {
            out.line(json!([]))?;
        }
        return Ok(ExitCode::SUCCESS);
    };
    let memories = store
        .list_memories(&scope, "/", now_millis())
        .await
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    if args.json {
        out.line(serde_json::to_value(&memories).map_err(|e| e.to_string())?)?;
        return Ok(ExitCode::SUCCESS);
    }
    for memory in &memories {
        let first = memory.text.lines().next().unwrap_or_default();
        out.line(format!(
            "{}  {}  {}  {}",
            memory.id,
            sanitize(&memory.path),
            memory.source_run.as_deref().unwrap_or("-"),
            sanitize(first)
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The database holding memory `args.id` and the memory, or one line
/// saying it is not there.
async fn existing(args: &MemoryIdArgs) -> Result<(Arc<dyn Store>, MemoryRecord), Failure> {
    let missing = || {
        Failure::Runtime(format!(
            "no memory {} in {} (see `agentloop memory list`)",
            sanitize(&args.id),
            db::describe(args.db.as_deref())
        ))
    };
    let store = db::open(args.db.as_deref(), Access::Read)
        .await?
        .ok_or_else(missing)?;
    match store.get_memory(&args.id).await {
        Ok(memory) => Ok((store, memory)),
        Err(StorageError::NotFound { .. }) => Err(missing()),
        Err(e) => Err(Failure::Runtime(e.to_string())),
    }
}

fn print(memory: &MemoryRecord, as_json: bool) -> Outcome {
    let mut out = Stdout::new();
    if as_json {
        out.line(serde_json::to_value(memory).map_err(|e| e.to_string())?)?;
        return Ok(ExitCode::SUCCESS);
    }
    out.line(format!("id:      {}", memory.id))?;
    out.line(format!("scope:   {}", sanitize(&memory.scope.to_string())))?;
    out.line(format!("path:    {}", sanitize(&memory.path)))?;
    let source = match (&memory.source_run, &memory.source_step) {
        (Some(run), Some(step)) => format!("run {run}, call {step}"),
        (Some(run), None) => format!("run {run}"),
        _ => "-".to_owned(),
    };
    out.line(format!("source:  {}", sanitize(&source)))?;
    if let Some(at) = memory.expires_at {
        out.line(format!("expires: {at}"))?;
    }
    out.line("")?;
    out.line(sanitize(&memory.text))?;
    Ok(ExitCode::SUCCESS)
}
