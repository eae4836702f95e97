//! A run's project folder at its steps: the checkpoints its runs take
//! before each step that may write (the hook, when the server keeps
//! checkpoints: [`ServerConfig::file_checkpoints`]), and the folder put
//! back as it was at a step, or compared between two steps.
//!
//! The folder restored or compared is always the run's project's folder as
//! the task names it now, never a path read from the store, and the
//! checkpoints are those the run's own log names: a user reaches only the
//! files of runs they may see.
//!
//! [`ServerConfig::file_checkpoints`]: crate::config::ServerConfig::file_checkpoints

use std::path::PathBuf;
use std::sync::Arc;

use agentloop_storage::StorageError;
use agentloop_tools::checkpoint::{
    self, CheckpointError, CheckpointHook, FileChange, FileCheckpoints, Restored, Taken,
    TakenReader,
};
use agentloop_types::{Hook, LoopEvent, Tool};

use crate::runner::TaskContext;
use crate::state::AppState;

/// Events read a page.
const PAGE: u32 = 500;

/// Why a run's folder could not be restored or compared.
#[derive(Debug, thiserror::Error)]
pub enum RunFilesError {
    /// This server keeps no file checkpoints.
    #[error("this server keeps no file checkpoints (it was started with --no-file-checkpoints)")]
    Off,
    /// A checkpoint could not be read or restored.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The run's log could not be read.
    #[error(transparent)]
    Store(#[from] StorageError),
    /// The work stopped before it was done (the instance shuts down).
    #[error("the restore stopped: {0}")]
    Stopped(String),
}

/// The hook that checkpoints the project folder of `ctx` before each call
/// of `tools` that may write, when the server keeps checkpoints.
pub fn hook(state: &AppState, ctx: &TaskContext, tools: &[Arc<dyn Tool>]) -> Option<Arc<dyn Hook>> {
    let checkpoints = state.config.file_checkpoints.clone()?;
    Some(Arc::new(CheckpointHook::new(checkpoints, &ctx.repo, tools)))
}

/// Every checkpoint run `run_id` took for a call that then started.
pub async fn taken(state: &AppState, run_id: &str) -> Result<Vec<Taken>, RunFilesError> {
    let mut reader = TakenReader::default();
    read_log(state, run_id, |page| reader.read(page)).await?;
    Ok(reader.finish())
}

/// Reads run `run_id`'s log page after page, oldest first, handing each
/// page to `each`.
pub async fn read_log(
    state: &AppState,
    run_id: &str,
    mut each: impl FnMut(&[LoopEvent]),
) -> Result<(), StorageError> {
    let mut after = None;
    loop {
        let page = state.store.list_events(run_id, after, PAGE).await?;
        let Some(last) = page.last() else {
            return Ok(());
        };
        after = Some(last.seq);
        each(&page);
    }
}

/// Puts the project folder of `ctx` back as it was at step `seq` of run
/// `run_id`; `None` when no call that may write started after the step.
pub async fn restore(
    state: &AppState,
    ctx: &TaskContext,
    run_id: &str,
    seq: u64,
) -> Result<Option<Restored>, RunFilesError> {
    let checkpoints = store(state)?;
    let taken = taken(state, run_id).await?;
    let Some(at) = checkpoint::at(&taken, seq).cloned() else {
        return Ok(None);
    };
    let folder = ctx.repo.clone();
    blocking(move || checkpoints.restore(&at.id, Some(&folder)))
        .await
        .map(Some)
}

/// What run `run_id` changed in the project folder of `ctx` from step
/// `at` to step `to`, or to the folder as it is now; `None` when no call
/// that may write started after `at`.
pub async fn changes(
    state: &AppState,
    ctx: &TaskContext,
    run_id: &str,
    at: u64,
    to: Option<u64>,
) -> Result<Option<Vec<FileChange>>, RunFilesError> {
    let checkpoints = store(state)?;
    let taken = taken(state, run_id).await?;
    let Some(from) = checkpoint::at(&taken, at).cloned() else {
        return Ok(None);
    };
    let to = to.and_then(|to| checkpoint::at(&taken, to)).cloned();
    let folder: PathBuf = ctx.repo.clone();
    blocking(move || checkpoints.diff(&from.id, to.as_ref().map(|t| &t.id), Some(&folder)))
        .await
        .map(Some)
}

/// What each step of a run that took a file checkpoint changed in the
/// project folder of `ctx`: from its checkpoint to the next step's that
/// took one, or, for the last, to the folder as it is now (`None` as the
/// second of the pair). `taken` are the checkpoints the run's log names
/// ([`TakenReader`]); `steps` are the seqs of the run's kept steps, in
/// order; a checkpoint belongs to the last of them before its call
/// started. Empty when the server keeps no checkpoints.
pub async fn step_changes(
    state: &AppState,
    ctx: &TaskContext,
    taken: Vec<Taken>,
    steps: &[u64],
) -> Result<Vec<StepChanges>, RunFilesError> {
    let Some(checkpoints) = state.config.file_checkpoints.clone() else {
        return Ok(Vec::new());
    };
    // The first checkpoint each step took (its calls' others are of the
    // same folder).
    let mut firsts: Vec<(u64, Taken)> = Vec::new();
    for checkpoint in taken {
        let Some(step) = steps
            .iter()
            .copied()
            .take_while(|seq| *seq < checkpoint.started)
            .last()
        else {
            continue;
        };
        if firsts.last().is_none_or(|(last, _)| *last != step) {
            firsts.push((step, checkpoint));
        }
    }
    let folder = ctx.repo.clone();
    blocking(move || {
        let mut changes = Vec::with_capacity(firsts.len());
        for (i, (seq, checkpoint)) in firsts.iter().enumerate() {
            let next = firsts.get(i + 1).map(|(seq, t)| (*seq, &t.id));
            let diff = checkpoints.diff(&checkpoint.id, next.map(|(_, id)| id), Some(&folder))?;
            changes.push(StepChanges {
                seq: *seq,
                until: next.map(|(seq, _)| seq),
                changes: diff,
            });
        }
        Ok(changes)
    })
    .await
}

/// What one step changed in the folder (see [`step_changes`]).
#[derive(Debug, Clone)]
pub struct StepChanges {
    /// The step.
    pub seq: u64,
    /// The step the changes run to: `None` for the folder as it is now.
    pub until: Option<u64>,
    /// The changes.
    pub changes: Vec<FileChange>,
}

fn store(state: &AppState) -> Result<Arc<FileCheckpoints>, RunFilesError> {
    state
        .config
        .file_checkpoints
        .clone()
        .ok_or(RunFilesError::Off)
}

/// Runs file work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, CheckpointError> + Send + 'static,
) -> Result<T, RunFilesError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| RunFilesError::Stopped(e.to_string()))?
        .map_err(RunFilesError::from)
}
