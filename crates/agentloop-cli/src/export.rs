//! `agentloop export` / `agentloop import`: a project as one JSON document,
//! through the storage export.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use agentloop_storage::{ProjectExport, export_project, import_project};
use clap::Args;

use crate::db::{self, Access};
use crate::out::{Failure, Outcome, Stdout};
use crate::session::CLI_PROJECT;

#[derive(Args)]
pub struct ExportArgs {
    /// Database (default: agentloop.db in the platform data folder).
    #[arg(long)]
    pub db: Option<String>,
    /// The project (default: the CLI's own project).
    #[arg(long, default_value = CLI_PROJECT)]
    pub project: String,
    /// File to write (default: stdout).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

#[derive(Args)]
pub struct ImportArgs {
    /// The export file (`-` for stdin).
    pub file: PathBuf,
    /// Database (default: agentloop.db in the platform data folder).
    #[arg(long)]
    pub db: Option<String>,
}

pub async fn export(args: ExportArgs) -> Outcome {
    let missing = || {
        Failure::Runtime(format!(
            "no project {} in {}",
            args.project,
            db::describe(args.db.as_deref())
        ))
    };
    let store = db::open(args.db.as_deref(), Access::Read)
        .await?
        .ok_or_else(missing)?;
    let document = match export_project(&*store, &args.project).await {
        Ok(document) => document,
        Err(agentloop_storage::StorageError::NotFound {
            kind: "project", ..
        }) => {
            return Err(missing());
        }
        Err(e) => return Err(Failure::Runtime(e.to_string())),
    };
    let text = serde_json::to_string_pretty(&document).map_err(|e| e.to_string())?;
    match &args.output {
        Some(path) => std::fs::write(path, text)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?,
        None => Stdout::new().line(text)?,
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn import(args: ImportArgs) -> Outcome {
    let text = if args.file.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Failure::usage(format!("cannot read stdin: {e}")))?;
        text
    } else {
        std::fs::read_to_string(&args.file)
            .map_err(|e| Failure::usage(format!("cannot read {}: {e}", args.file.display())))?
    };
    let document: ProjectExport = serde_json::from_str(&text).map_err(|e| {
        Failure::usage(format!(
            "{} is not a project export (made by `agentloop export`): {e}",
            args.file.display()
        ))
    })?;
    let store = db::open_for_write(args.db.as_deref()).await?;
    import_project(&*store, &document)
        .await
        .map_err(|e| e.to_string())?;
    crate::out::note(format!(
        "imported project {} ({})",
        document.project.id,
        crate::out::counted(document.chats.len() as u64, "chat", "chats")
    ));
    Ok(ExitCode::SUCCESS)
}
