//! File checkpoints of a chat's project folder (see
//! [`agentloop_tools::checkpoint`]): where they are kept, the hook `chat`
//! takes them through, and the checkpoints a stored run took.
//!
//! They are kept beside the database (`agentloop.db` → the folder
//! `agentloop.db.checkpoints`), or in the data folder for a PostgreSQL
//! database, so that a run's log and the files it names travel together.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentloop_storage::Store;
use agentloop_tools::checkpoint::{CheckpointHook, FileCheckpoints, Taken, TakenReader};
use agentloop_types::{Hook, Tool};

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
    open_dir(&store_dir(db)?)
}

/// The store in folder `dir`, opened (created when missing).
pub fn open_dir(dir: &Path) -> Result<FileCheckpoints, Failure> {
    FileCheckpoints::open(dir).map_err(|e| Failure::Runtime(e.to_string()))
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

/// Every checkpoint run `run_id` took for a call that then started, in
/// order.
pub async fn taken(store: &dyn Store, run_id: &str) -> Result<Vec<Taken>, Failure> {
    let mut reader = TakenReader::default();
    let mut after = None;
    loop {
        let page = store
            .list_events(run_id, after, PAGE)
            .await
            .map_err(|e| e.to_string())?;
        let Some(last) = page.last() else { break };
        after = Some(last.seq);
        reader.read(&page);
    }
    Ok(reader.finish())
}
