//! The `AGENTS.md` files of the folder a `run`, `chat` or `eval` works in, read
//! into its system prompt (see [`agentloop_tools::agents_md`]), and what
//! `agentloop info` says of them.

use std::path::{Path, PathBuf};

use agentloop_tools::agents_md::{self, MAX_BYTES, ProjectInstructions};

use crate::out::Failure;

/// The folder a run works in: `--root`, else the current folder.
fn folder(root: Option<&Path>) -> Result<PathBuf, Failure> {
    match root {
        Some(root) => Ok(root.to_owned()),
        None => {
            std::env::current_dir().map_err(|e| Failure::Runtime(format!("no current folder: {e}")))
        }
    }
}

fn read(root: Option<&Path>) -> Result<ProjectInstructions, Failure> {
    Ok(agents_md::read(&folder(root)?, MAX_BYTES))
}

/// `system` followed by the folder's `AGENTS.md` instructions, warning on
/// stderr when they are over the cap.
pub fn with_system(root: Option<&Path>, system: Option<String>) -> Result<Option<String>, Failure> {
    let instructions = read(root)?;
    if let Some(warning) = instructions.warning() {
        crate::out::note(warning);
    }
    Ok(instructions.after_system(system))
}

/// One line for `agentloop info`: the files a run here reads, their size,
/// and the warning when they are over the cap.
pub fn describe(root: Option<&Path>) -> Result<String, Failure> {
    let instructions = read(root)?;
    if instructions.is_empty() {
        return Ok("no AGENTS.md in this folder or below".to_owned());
    }
    let paths: Vec<String> = instructions.files.iter().map(|f| f.path()).collect();
    let mut line = format!(
        "{} ({} bytes; a run here reads them)",
        crate::out::sanitize(&paths.join(", ")),
        instructions.size()
    );
    if let Some(warning) = instructions.warning() {
        line.push_str(&format!("; warning: {warning}"));
    }
    Ok(line)
}
