//! `runs rewind`, `runs diff` and `runs fork --restore-files`: the project
//! folder as it was at a run's step, from the file checkpoints the run
//! took (see [`crate::file_checkpoints`]).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use agentloop_storage::Store;
use agentloop_storage::model::{RunRecord, RunStatus};
use agentloop_tools::checkpoint::{self, Change, CheckpointError, Restored};
use clap::Args;

use super::stored::{existing, existing_run};
use crate::file_checkpoints;
use crate::out::{Failure, Outcome, Stdout};

#[derive(Args)]
pub struct RewindArgs {
    /// The run.
    pub id: String,
    /// The seq of the step whose folder to restore (`runs show RUN
    /// --steps` lists them).
    #[arg(long, value_name = "SEQ")]
    pub to: u64,
    /// The folder to restore into (default: the folder the run worked in).
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Database (default: agentloop.db in the platform data folder).
    #[arg(long)]
    pub db: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct DiffArgs {
    /// The run.
    pub id: String,
    /// The seq of the step to compare from.
    #[arg(long, value_name = "SEQ")]
    pub at: u64,
    /// The seq of the step to compare to (default: the folder as it is
    /// now); an earlier one shows what going back would change.
    #[arg(long, value_name = "SEQ")]
    pub to: Option<u64>,
    /// Database (default: agentloop.db in the platform data folder).
    #[arg(long)]
    pub db: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Refuses to restore the folder of run `run` while it runs.
pub(super) fn not_running(run: &RunRecord) -> Result<(), Failure> {
    if run.status == RunStatus::Running {
        return Err(Failure::Runtime(format!(
            "run {} is running: its folder is not rewound under it (cancel it, or let it end, first)",
            run.id
        )));
    }
    Ok(())
}

/// The folder restored as it was at step `seq` of run `run_id`: `None`
/// when no call that may write started after the step.
pub(super) async fn restore_at(
    store: &dyn Store,
    run_id: &str,
    seq: u64,
    into: Option<&Path>,
    db: Option<&str>,
) -> Result<Option<(Restored, PathBuf)>, Failure> {
    let taken = file_checkpoints::taken(store, run_id).await?;
    let Some(checkpoint) = checkpoint::at(&taken, seq) else {
        return Ok(None);
    };
    let checkpoints = file_checkpoints::open(db)?;
    let runtime = |e: CheckpointError| Failure::Runtime(e.to_string());
    let root = match into {
        Some(root) => root.to_owned(),
        None => checkpoints.tree(&checkpoint.id).map_err(runtime)?.root,
    };
    let restored = checkpoints
        .restore(&checkpoint.id, Some(&root))
        .map_err(runtime)?;
    Ok(Some((restored, root)))
}

/// Says what a restore did, a path a line.
pub(super) fn tell_restored(
    out: &mut Stdout,
    run_id: &str,
    seq: u64,
    restored: Option<&(Restored, PathBuf)>,
) -> Result<(), Failure> {
    let Some((restored, root)) = restored else {
        crate::out::note(format!(
            "run {run_id} started no call that may write after seq {seq} (or ran without file \
             checkpoints): no file to restore"
        ));
        return Ok(());
    };
    for path in &restored.removed {
        out.line(format!("- {}", crate::out::sanitize(path)))?;
    }
    for path in &restored.written {
        out.line(format!("+ {}", crate::out::sanitize(path)))?;
    }
    crate::out::note(format!(
        "restored {} as it was at seq {seq} of run {run_id}: {} written, {} removed",
        crate::out::sanitize(&root.to_string_lossy()),
        crate::out::counted(restored.written.len() as u64, "path", "paths"),
        restored.removed.len(),
    ));
    Ok(())
}

pub(super) async fn rewind(args: RewindArgs) -> Outcome {
    let store = existing(args.db.as_deref()).await?;
    let run = existing_run(&*store, &args.id, args.db.as_deref()).await?;
    not_running(&run)?;
    let restored = restore_at(
        &*store,
        &run.id,
        args.to,
        args.root.as_deref(),
        args.db.as_deref(),
    )
    .await?;
    let mut out = Stdout::new();
    if args.json {
        let value = match &restored {
            Some((restored, root)) => serde_json::json!({
                "run_id": run.id, "seq": args.to, "root": root,
                "written": restored.written, "removed": restored.removed,
            }),
            None => serde_json::json!({
                "run_id": run.id, "seq": args.to, "root": null, "written": [], "removed": [],
            }),
        };
        out.line(serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?)?;
        return Ok(ExitCode::SUCCESS);
    }
    tell_restored(&mut out, &run.id, args.to, restored.as_ref())?;
    Ok(ExitCode::SUCCESS)
}

pub(super) async fn diff(args: DiffArgs) -> Outcome {
    let store = existing(args.db.as_deref()).await?;
    let run = existing_run(&*store, &args.id, args.db.as_deref()).await?;
    let taken = file_checkpoints::taken(&*store, &run.id).await?;
    let mut out = Stdout::new();
    let Some(from) = checkpoint::at(&taken, args.at) else {
        if args.json {
            out.line("[]")?;
        }
        crate::out::note(format!(
            "run {} started no call that may write after seq {} (or ran without file \
             checkpoints): no change to show",
            run.id, args.at
        ));
        return Ok(ExitCode::SUCCESS);
    };
    let to = args
        .to
        .and_then(|seq| checkpoint::at(&taken, seq))
        .map(|t| &t.id);
    let checkpoints = file_checkpoints::open(args.db.as_deref())?;
    let changes = checkpoints
        .diff(&from.id, to, None)
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    if args.json {
        out.line(serde_json::to_string_pretty(&changes).map_err(|e| e.to_string())?)?;
        return Ok(ExitCode::SUCCESS);
    }
    for change in &changes {
        match (&change.diff, &change.summary) {
            (Some(diff), _) => out.line(crate::out::sanitize(diff.trim_end()))?,
            (None, summary) => out.line(format!(
                "{} {}: {}",
                match change.change {
                    Change::Added => "added",
                    Change::Modified => "changed",
                    Change::Removed => "removed",
                },
                crate::out::sanitize(&change.path),
                crate::out::sanitize(summary.as_deref().unwrap_or_default()),
            ))?,
        }
    }
    let until = match (args.to, to) {
        (Some(seq), Some(_)) => format!("seq {seq}"),
        _ => "the folder now".to_owned(),
    };
    crate::out::note(format!(
        "{} from seq {} to {until}",
        crate::out::counted(changes.len() as u64, "path changed", "paths changed"),
        args.at
    ));
    Ok(ExitCode::SUCCESS)
}
