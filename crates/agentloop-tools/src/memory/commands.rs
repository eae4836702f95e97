//! The memory commands, with the texts of Anthropic's reference
//! implementation.

use agentloop_types::vfs::{is_within, normalize_path};
use agentloop_types::{EntryKind, ToolResult, Vfs, VfsError};

use super::input::{MEMORY_ROOT, MemoryCommand, MemoryInput};
use crate::editor::{CreateMode, EditError, Editor, Viewed};
use crate::text::{human_size, lines, number_lines, snippet, view_range};

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

    fn editor(&self) -> Editor<'_> {
        Editor { vfs: self.vfs }
    }

    async fn view(&self, input: MemoryInput) -> Outcome {
        let shown = require(input.path, "path", MemoryCommand::View)?;
        let path = memory_path(&shown)?;
        let text = match self.editor().view(&path).await {
            Ok(Viewed::Directory) => return self.view_dir(&path).await,
            Ok(Viewed::File(text)) => text,
            Err(EditError::NotFound) => {
                return Err(format!(
                    "The path {shown} does not exist. Please provide a valid path."
                ));
            }
            Err(e) => return Err(unexpected(e)),
        };
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
        match self.editor().create(&path, &text, CreateMode::New).await {
            Ok(_) => Ok(format!("File created successfully at: {shown}")),
            Err(EditError::Exists) => Err(format!("Error: File {shown} already exists")),
            Err(e) => Err(unexpected(e)),
        }
    }

    async fn str_replace(&self, input: MemoryInput) -> Outcome {
        let command = MemoryCommand::StrReplace;
        let shown = require(input.path, "path", command)?;
        let old = require(input.old_str, "old_str", command)?;
        let new = input.new_str.unwrap_or_default();
        let path = memory_path(&shown)?;
        match self.editor().str_replace(&path, &old, &new).await {
            Ok((updated, line)) => Ok(format!(
                "The memory file has been edited.\n{}",
                snippet(&updated, line, 4)
            )),
            Err(EditError::IsDirectory) => Err(format!(
                "Error: The path {shown} is a directory, not a file"
            )),
            Err(EditError::NotFound) => Err(format!(
                "Error: The path {shown} does not exist. Please provide a valid path."
            )),
            Err(EditError::NoMatch) => Err(format!(
                "No replacement was performed, old_str `{old}` did not appear verbatim in {shown}."
            )),
            Err(EditError::Ambiguous(found)) => {
                let list: Vec<String> = found.iter().map(ToString::to_string).collect();
                Err(format!(
                    "No replacement was performed. Multiple occurrences of old_str `{old}` in lines: {}. Please ensure it is unique",
                    list.join(", ")
                ))
            }
            Err(e) => Err(unexpected(e)),
        }
    }

    async fn insert(&self, input: MemoryInput) -> Outcome {
        let command = MemoryCommand::Insert;
        let shown = require(input.path, "path", command)?;
        let line = require(input.insert_line, "insert_line", command)?;
        let text = require(input.insert_text.or(input.new_str), "insert_text", command)?;
        let path = memory_path(&shown)?;
        match self.editor().insert(&path, line, &text).await {
            Ok(_) => Ok(format!("The file {shown} has been edited.")),
            Err(EditError::NotFound | EditError::IsDirectory) => {
                Err(format!("Error: The file {shown} does not exist"))
            }
            Err(EditError::InvalidLine { line, count }) => Err(format!(
                "Error: Invalid `insert_line` parameter: {line}. It should be within the range of lines of the file: [0, {count}]"
            )),
            Err(e) => Err(unexpected(e)),
        }
    }

    async fn delete(&self, input: MemoryInput) -> Outcome {
        let shown = require(input.path, "path", MemoryCommand::Delete)?;
        let path = memory_path(&shown)?;
        if path == MEMORY_ROOT {
            return Err(format!(
                "Error: Cannot delete the {MEMORY_ROOT} directory itself"
            ));
        }
        match self.editor().delete(&path).await {
            Ok(_) => Ok(format!("Successfully deleted {shown}")),
            Err(EditError::NotFound) => Err(format!("Error: The file {shown} does not exist")),
            Err(e) => Err(unexpected(e)),
        }
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
        match self.editor().rename(&old, &new).await {
            Ok(()) => Ok(format!("Successfully renamed {old_shown} to {new_shown}")),
            Err(EditError::NotFound) => Err(format!("Error: The file {old_shown} does not exist")),
            Err(EditError::Exists) => {
                Err(format!("Error: The destination {new_shown} already exists"))
            }
            Err(e) => Err(unexpected(e)),
        }
    }
}

/// The wording of an editor outcome a command has no text of its own for:
/// a VFS failure (the only one each command can meet), as `Error: ...`.
fn unexpected(e: EditError) -> String {
    format!("Error: {e}")
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
