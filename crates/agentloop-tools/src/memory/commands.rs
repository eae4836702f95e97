//! The memory commands, with the texts of Anthropic's reference
//! implementation.

use agentloop_types::vfs::{is_within, normalize_path};
use agentloop_types::{EntryKind, ToolResult, Vfs, VfsError};

use super::{MEMORY_ROOT, MemoryCommand, MemoryInput};
use crate::text::{
    human_size, insert_after_line, lines, number_lines, occurrence_lines, snippet, view_range,
};

/// Largest file the memory tool shows, in lines.
const MAX_LINES: usize = 999_999;

pub(super) struct Memory<'a> {
    pub(super) vfs: &'a dyn Vfs,
}

type Outcome = Result<String, String>;

fn missing(name: &str, command: MemoryCommand) -> String {
    format!(
        "Error: Missing required parameter `{name}` for command `{}`",
        command.as_str()
    )
}

fn require<T>(value: Option<T>, name: &str, command: MemoryCommand) -> Result<T, String> {
    value.ok_or_else(|| missing(name, command))
}

fn vfs_error(e: VfsError) -> String {
    format!("Error: {e}")
}

/// Checks a path is valid and lies under `/memories`; returns it normalised.
fn memory_path(path: &str) -> Result<String, String> {
    let normal = normalize_path(path).map_err(vfs_error)?;
    if !is_within(&normal, MEMORY_ROOT) {
        return Err(format!(
            "Error: The path {path} is not allowed: memory paths must be under {MEMORY_ROOT}"
        ));
    }
    Ok(normal)
}

impl Memory<'_> {
    pub(super) async fn run(&self, input: MemoryInput) -> ToolResult {
        if let Err(e) = self.vfs.create_dir(MEMORY_ROOT).await {
            return ToolResult::error(vfs_error(e));
        }
        let command = input.command;
        let outcome = match command {
            MemoryCommand::View => self.view(input).await,
            MemoryCommand::Create => self.create(input).await,
            MemoryCommand::StrReplace => self.str_replace(input).await,
            MemoryCommand::Insert => self.insert(input).await,
            MemoryCommand::Delete => self.delete(input).await,
            MemoryCommand::Rename => self.rename(input).await,
        };
        match outcome {
            Ok(text) => ToolResult::ok(text),
            Err(text) => ToolResult::error(text),
        }
    }

    async fn kind(&self, path: &str) -> Result<Option<EntryKind>, String> {
        Ok(self
            .vfs
            .stat(path)
            .await
            .map_err(vfs_error)?
            .map(|m| m.kind))
    }

    async fn read(&self, path: &str) -> Result<String, String> {
        self.vfs.read_to_string(path).await.map_err(vfs_error)
    }

    async fn view(&self, input: MemoryInput) -> Outcome {
        let shown = require(input.path, "path", MemoryCommand::View)?;
        let path = memory_path(&shown)?;
        match self.kind(&path).await? {
            None => Err(format!(
                "The path {shown} does not exist. Please provide a valid path."
            )),
            Some(EntryKind::Directory) => self.view_dir(&path).await,
            Some(EntryKind::File) => {
                let text = self.read(&path).await?;
                let all = lines(&text);
                if all.len() > MAX_LINES {
                    return Err(format!(
                        "File {shown} exceeds maximum line limit of 999,999 lines."
                    ));
                }
                let (first, last) = view_range(input.view_range.as_deref(), all.len())?;
                let body = number_lines(all[first - 1..last].iter().copied(), first);
                Ok(format!(
                    "Here's the content of {shown} with line numbers:\n{body}"
                ))
            }
        }
    }

    async fn view_dir(&self, path: &str) -> Outcome {
        let mut out = format!(
            "Here're the files and directories up to 2 levels deep in {path}, excluding hidden items and node_modules:\n"
        );
        let mut rows = vec![(path.to_owned(), dir_size())];
        for entry in visible(self.vfs.list(path).await.map_err(vfs_error)?) {
            let is_dir = entry.kind == EntryKind::Directory;
            let size = if is_dir {
                dir_size()
            } else {
                human_size(entry.size)
            };
            rows.push((entry.path.clone(), size));
            if is_dir {
                let children = self.vfs.list(&entry.path).await.map_err(vfs_error)?;
                for child in visible(children) {
                    let size = match child.kind {
                        EntryKind::Directory => dir_size(),
                        EntryKind::File => human_size(child.size),
                    };
                    rows.push((child.path, size));
                }
            }
        }
        for (p, size) in rows {
            out.push_str(&format!("{size}\t{p}\n"));
        }
        Ok(out)
    }

    async fn create(&self, input: MemoryInput) -> Outcome {
        let shown = require(input.path, "path", MemoryCommand::Create)?;
        let text = require(input.file_text, "file_text", MemoryCommand::Create)?;
        let path = memory_path(&shown)?;
        if self.kind(&path).await?.is_some() {
            return Err(format!("Error: File {shown} already exists"));
        }
        self.vfs
            .write(&path, text.as_bytes())
            .await
            .map_err(vfs_error)?;
        Ok(format!("File created successfully at: {shown}"))
    }

    async fn str_replace(&self, input: MemoryInput) -> Outcome {
        let command = MemoryCommand::StrReplace;
        let shown = require(input.path, "path", command)?;
        let old = require(input.old_str, "old_str", command)?;
        let new = input.new_str.unwrap_or_default();
        let path = memory_path(&shown)?;
        match self.kind(&path).await? {
            Some(EntryKind::File) => {}
            Some(EntryKind::Directory) => {
                return Err(format!(
                    "Error: The path {shown} is a directory, not a file"
                ));
            }
            None => {
                return Err(format!(
                    "Error: The path {shown} does not exist. Please provide a valid path."
                ));
            }
        }
        let text = self.read(&path).await?;
        let found = occurrence_lines(&text, &old);
        match found.len() {
            0 => Err(format!(
                "No replacement was performed, old_str `{old}` did not appear verbatim in {shown}."
            )),
            1 => {
                let updated = text.replacen(&old, &new, 1);
                self.vfs
                    .write(&path, updated.as_bytes())
                    .await
                    .map_err(vfs_error)?;
                let line = found[0];
                Ok(format!(
                    "The memory file has been edited.\n{}",
                    snippet(&updated, line, 4)
                ))
            }
            _ => {
                let list: Vec<String> = found.iter().map(ToString::to_string).collect();
                Err(format!(
                    "No replacement was performed. Multiple occurrences of old_str `{old}` in lines: {}. Please ensure it is unique",
                    list.join(", ")
                ))
            }
        }
    }

    async fn insert(&self, input: MemoryInput) -> Outcome {
        let command = MemoryCommand::Insert;
        let shown = require(input.path, "path", command)?;
        let line = require(input.insert_line, "insert_line", command)?;
        let text = require(input.insert_text.or(input.new_str), "insert_text", command)?;
        let path = memory_path(&shown)?;
        if self.kind(&path).await? != Some(EntryKind::File) {
            return Err(format!("Error: The file {shown} does not exist"));
        }
        let current = self.read(&path).await?;
        let count = lines(&current).len();
        let invalid = || {
            format!(
                "Error: Invalid `insert_line` parameter: {line}. It should be within the range of lines of the file: [0, {count}]"
            )
        };
        let at = usize::try_from(line).map_err(|_| invalid())?;
        let updated = insert_after_line(&current, at, &text).ok_or_else(invalid)?;
        self.vfs
            .write(&path, updated.as_bytes())
            .await
            .map_err(vfs_error)?;
        Ok(format!("The file {shown} has been edited."))
    }

    async fn delete(&self, input: MemoryInput) -> Outcome {
        let shown = require(input.path, "path", MemoryCommand::Delete)?;
        let path = memory_path(&shown)?;
        if path == MEMORY_ROOT {
            return Err(format!(
                "Error: Cannot delete the {MEMORY_ROOT} directory itself"
            ));
        }
        if self.kind(&path).await?.is_none() {
            return Err(format!("Error: The file {shown} does not exist"));
        }
        self.vfs.delete(&path).await.map_err(vfs_error)?;
        Ok(format!("Successfully deleted {shown}"))
    }

    async fn rename(&self, input: MemoryInput) -> Outcome {
        let command = MemoryCommand::Rename;
        let old_shown = require(input.old_path, "old_path", command)?;
        let new_shown = require(input.new_path, "new_path", command)?;
        let old = memory_path(&old_shown)?;
        let new = memory_path(&new_shown)?;
        if old == MEMORY_ROOT || new == MEMORY_ROOT {
            return Err(format!(
                "Error: Cannot rename the {MEMORY_ROOT} directory itself"
            ));
        }
        if self.kind(&old).await?.is_none() {
            return Err(format!("Error: The file {old_shown} does not exist"));
        }
        if self.kind(&new).await?.is_some() {
            return Err(format!("Error: The destination {new_shown} already exists"));
        }
        self.vfs.rename(&old, &new).await.map_err(vfs_error)?;
        Ok(format!("Successfully renamed {old_shown} to {new_shown}"))
    }
}

fn dir_size() -> String {
    "4.0K".to_owned()
}

fn visible(
    entries: Vec<agentloop_types::DirEntry>,
) -> impl Iterator<Item = agentloop_types::DirEntry> {
    entries
        .into_iter()
        .filter(|e| !e.name.starts_with('.') && e.name != "node_modules")
}
