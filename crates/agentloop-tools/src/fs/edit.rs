//! The fs commands that view and change files.

use agentloop_types::vfs::normalize_path;
use agentloop_types::{EntryKind, Vfs, VfsError};

use super::input::{FsCommand, FsInput, FsLimits};
use crate::editor::{CreateMode, EditError, Editor, Viewed};
use crate::text::{counted, human_size, lines, snippet, view_range};

pub(super) type Outcome = Result<String, String>;

pub(super) struct Fs<'a> {
    pub(super) vfs: &'a dyn Vfs,
    pub(super) limits: FsLimits,
}

pub(super) fn require<T>(value: Option<T>, name: &str, command: FsCommand) -> Result<T, String> {
    value.ok_or_else(|| {
        format!(
            "Error: Missing required parameter `{name}` for command `{}`",
            command.as_str()
        )
    })
}

pub(super) fn vfs_error(e: VfsError) -> String {
    format!("Error: {e}")
}

pub(super) fn checked(path: &str) -> Result<String, String> {
    normalize_path(path).map_err(vfs_error)
}

pub(super) fn not_found(path: &str) -> String {
    format!("Error: The path {path} does not exist.")
}

fn is_directory(path: &str) -> String {
    format!("Error: {path} is a directory, not a file.")
}

/// The fs wording of an editor outcome that did nothing, for the file at
/// `path`.
fn edit_error(e: EditError, path: &str) -> String {
    match e {
        EditError::Vfs(e) => vfs_error(e),
        EditError::NotFound => not_found(path),
        EditError::IsDirectory => is_directory(path),
        EditError::Exists => format!("Error: The destination {path} already exists."),
        EditError::NoMatch => format!(
            "Error: No replacement was performed: old_str was found 0 times in {path}; it must occur exactly once, verbatim."
        ),
        EditError::Ambiguous(found) => {
            let list: Vec<String> = found.iter().map(ToString::to_string).collect();
            format!(
                "Error: No replacement was performed: old_str was found {} times in {path} (lines {}); it must occur exactly once. Include more surrounding text to make it unique.",
                found.len(),
                list.join(", ")
            )
        }
        EditError::InvalidLine { line, count } => format!(
            "Error: Invalid `insert_line` {line}: it must be within [0, {count}] for {path}."
        ),
    }
}

impl Fs<'_> {
    fn editor(&self) -> Editor<'_> {
        Editor { vfs: self.vfs }
    }

    pub(super) async fn view(&self, input: FsInput) -> Outcome {
        let path = checked(&require(input.path, "path", FsCommand::View)?)?;
        let viewed = self.editor().view(&path).await;
        match viewed.map_err(|e| edit_error(e, &path))? {
            Viewed::Directory => self.view_dir(&path).await,
            Viewed::File(text) => {
                let all = lines(&text);
                let (first, last) = view_range(input.view_range.as_deref(), all.len())?;
                let mut out = format!("{path} (lines {first}-{last} of {}):\n", all.len());
                let header = out.len();
                for (n, line) in all[first - 1..last].iter().enumerate() {
                    let row = format!("{:>6}\t{line}\n", first + n);
                    if out.len() + row.len() > self.limits.max_view_bytes + header {
                        let shown_last = first + n - 1;
                        out.push_str(&format!(
                            "[Output cut at {} bytes: showed lines {first}-{shown_last} of {}. Use view_range to see more.]\n",
                            self.limits.max_view_bytes,
                            all.len()
                        ));
                        break;
                    }
                    out.push_str(&row);
                }
                Ok(out)
            }
        }
    }

    async fn view_dir(&self, path: &str) -> Outcome {
        let entries = self.vfs.list(path).await.map_err(vfs_error)?;
        let mut out = format!(
            "Directory {path} ({}):\n",
            counted(entries.len(), "entry", "entries")
        );
        for entry in entries.iter().take(self.limits.max_results) {
            match entry.kind {
                EntryKind::Directory => out.push_str(&format!("{}/\n", entry.name)),
                EntryKind::File => {
                    out.push_str(&format!("{}\t{}\n", entry.name, human_size(entry.size)))
                }
            }
        }
        if entries.len() > self.limits.max_results {
            out.push_str(&format!(
                "[Listing cut: showed {} of {} entries.]\n",
                self.limits.max_results,
                entries.len()
            ));
        }
        Ok(out)
    }

    pub(super) async fn create(&self, input: FsInput) -> Outcome {
        let path = checked(&require(input.path, "path", FsCommand::Create)?)?;
        let text = require(input.file_text, "file_text", FsCommand::Create)?;
        let existed = self
            .editor()
            .create(&path, &text, CreateMode::Overwrite)
            .await
            .map_err(|e| edit_error(e, &path))?;
        let verb = if existed { "overwritten" } else { "created" };
        Ok(format!(
            "File {verb} at {path} ({}).",
            counted(lines(&text).len(), "line", "lines")
        ))
    }

    pub(super) async fn str_replace(&self, input: FsInput) -> Outcome {
        let command = FsCommand::StrReplace;
        let path = checked(&require(input.path, "path", command)?)?;
        let old = require(input.old_str, "old_str", command)?;
        let new = input.new_str.unwrap_or_default();
        if old.is_empty() {
            return Err("Error: `old_str` must not be empty.".to_owned());
        }
        let (updated, line) = self
            .editor()
            .str_replace(&path, &old, &new)
            .await
            .map_err(|e| edit_error(e, &path))?;
        Ok(format!(
            "Edited {path}. Lines around the change:\n{}",
            snippet(&updated, line, 3)
        ))
    }

    pub(super) async fn insert(&self, input: FsInput) -> Outcome {
        let command = FsCommand::Insert;
        let path = checked(&require(input.path, "path", command)?)?;
        let line = require(input.insert_line, "insert_line", command)?;
        let text = require(input.insert_text.or(input.new_str), "insert_text", command)?;
        let at = self
            .editor()
            .insert(&path, line, &text)
            .await
            .map_err(|e| edit_error(e, &path))?;
        Ok(format!(
            "Inserted {} after line {at} of {path}.",
            counted(lines(&text).len().max(1), "line", "lines")
        ))
    }

    pub(super) async fn delete(&self, input: FsInput) -> Outcome {
        let path = checked(&require(input.path, "path", FsCommand::Delete)?)?;
        if path == "/" {
            return Err("Error: The root directory cannot be deleted.".to_owned());
        }
        let kind = self
            .editor()
            .delete(&path)
            .await
            .map_err(|e| edit_error(e, &path))?;
        let what = match kind {
            EntryKind::Directory => "directory",
            EntryKind::File => "file",
        };
        Ok(format!("Deleted {what} {path}."))
    }

    pub(super) async fn rename(&self, input: FsInput) -> Outcome {
        let command = FsCommand::Rename;
        let from = checked(&require(input.old_path.or(input.path), "path", command)?)?;
        let to = checked(&require(input.new_path, "new_path", command)?)?;
        match self.editor().rename(&from, &to).await {
            Ok(()) => Ok(format!("Renamed {from} to {to}.")),
            Err(EditError::Exists) => Err(edit_error(EditError::Exists, &to)),
            Err(e) => Err(edit_error(e, &from)),
        }
    }
}
