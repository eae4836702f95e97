//! File checkpoints of a chat's project folder (see
//! [`agentloop_tools::checkpoint`]): where they are kept, the hook `chat`
//! takes them through, and which of a run's checkpoints holds the folder
//! as it was at one of its steps.
//!
//! They are kept beside the database (`agentloop.db` → the folder
//! `agentloop.db.checkpoints`), or in the data folder for a PostgreSQL
//! database, so that a run's log and the files it names travel together.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentloop_storage::Store;
use agentloop_tools::checkpoint::{CheckpointHook, CheckpointId, FileCheckpoints, checkpoint_of};
use agentloop_types::{EventKind, Hook, Tool};

use crate::db;
use crate::out::Failure;

/// Events read a page.
const PAGE: u32 = 500;

/// The tools whose calls may write to the folder.
const WRITERS: [&str; 4] = ["fs", "shell", "javascript", "minion"];

/// The store of database `db`'s file checkpoints (see the module docs).
pub fn store_dir(db: Option<&str>) -> Result<PathBuf, Failure> {
    Ok(match db::sqlite_path(db)? {
        Some(path) => {
            let mut name = path.as_os_str().to_owned();
            name.push(".checkpoints");
            PathBuf::from(name)
        }
        None => db::data_dir_path()?.join("checkpoints"),
    })
}

/// The store of database `db`'s file checkpoints, opened (created when
/// missing).
pub fn open(db: Option<&str>) -> Result<FileCheckpoints, Failure> {
    let dir = store_dir(db)?;
    FileCheckpoints::open(&dir).map_err(|e| Failure::Runtime(e.to_string()))
}

/// The hook that checkpoints `root` (the current folder when `None`)
/// before each call of `tools` that may write, when one of them can; its
/// checkpoints are kept with database `db`.
pub fn hook(
    db: Option<&str>,
    root: Option<&Path>,
    tools: &[Arc<dyn Tool>],
) -> Result<Option<Arc<dyn Hook>>, Failure> {
    if !tools.iter().any(|t| WRITERS.contains(&t.name())) {
        return Ok(None);
    }
    let root = match root {
        Some(root) => root.to_owned(),
        None => std::env::current_dir().map_err(|e| format!("no current folder: {e}"))?,
    };
    let checkpoints = Arc::new(open(db)?);
    Ok(Some(Arc::new(CheckpointHook::new(
        checkpoints,
        root,
        tools,
    ))))
}

/// A checkpoint a run took: the folder just before the call that started
/// at seq `started`.
#[derive(Debug, Clone)]
pub struct Taken {
    /// The seq of the call's `tool_start` event.
    pub started: u64,
    /// The checkpoint.
    pub id: CheckpointId,
}

/// Every checkpoint run `run_id` took for a call that then started, in
/// order. (A call refused before it started changed nothing: its
/// checkpoint is left out.)
pub async fn taken(store: &dyn Store, run_id: &str) -> Result<Vec<Taken>, Failure> {
    let mut pending: HashMap<String, CheckpointId> = HashMap::new();
    let mut taken = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .list_events(run_id, after, PAGE)
            .await
            .map_err(|e| e.to_string())?;
        let Some(last) = page.last() else { break };
        after = Some(last.seq);
        for event in page.iter().filter(|e| e.path.is_root()) {
            match &event.kind {
                EventKind::Hook(hook) => {
                    if let (Some(id), Some(call)) = (checkpoint_of(hook), &hook.tool_use_id) {
                        pending.entry(call.clone()).or_insert(id);
                    }
                }
                EventKind::ToolStart(start) => {
                    if let Some(id) = pending.remove(&start.tool_use_id) {
                        taken.push(Taken {
                            started: event.seq,
                            id,
                        });
                    }
                }
                _ => {}
            }
        }
    }
    Ok(taken)
}

/// The checkpoint holding the folder as it was at step `seq`: the first
/// taken after it. `None`: no call that may write started after it, so
/// the run left the folder as it was then.
pub fn at(taken: &[Taken], seq: u64) -> Option<&Taken> {
    taken.iter().find(|t| t.started > seq)
}
