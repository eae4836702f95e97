//! The editor core shared by the fs and memory tools: view, create,
//! str_replace, insert, delete and rename over a [`Vfs`].
//!
//! The core makes every decision about files (what exists, how often a
//! string occurs, where a line goes, what is written) and reports typed
//! outcomes. Each tool validates its own input first (path rules, required
//! fields) and words the outcome in its own dialect: the memory tool keeps
//! the texts of Anthropic's reference implementation, the fs tool its own.

use agentloop_types::{EntryKind, Vfs, VfsError};

use crate::text::{insert_after_line, lines, occurrence_lines};

/// Why an editor operation did nothing. The messages are neutral
/// fallbacks; tools word the outcomes they expect themselves.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EditError {
    /// The VFS failed.
    #[error("{0}")]
    Vfs(#[from] VfsError),
    /// The path (for rename: the source) does not exist.
    #[error("the path does not exist")]
    NotFound,
    /// A file was needed and the path is a directory.
    #[error("the path is a directory, not a file")]
    IsDirectory,
    /// `create` without overwrite, or the destination of a rename, exists.
    #[error("the path already exists")]
    Exists,
    /// `str_replace` found the old string nowhere.
    #[error("old_str was not found")]
    NoMatch,
    /// `str_replace` found the old string more than once, on these lines.
    #[error("old_str was found {} times", .0.len())]
    Ambiguous(Vec<usize>),
    /// `insert` after a line the file does not have.
    #[error("insert_line {line} is outside [0, {count}]")]
    InvalidLine {
        /// The line asked for.
        line: i64,
        /// Lines in the file.
        count: usize,
    },
}

/// What is at a viewed path.
pub(crate) enum Viewed {
    /// A directory; each tool lists it in its own format.
    Directory,
    /// A file's text.
    File(String),
}

/// Whether `create` may replace an existing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CreateMode {
    /// Replace a file that exists (never a directory).
    Overwrite,
    /// Refuse any path that exists.
    New,
}

/// The editor over one VFS.
pub(crate) struct Editor<'a> {
    pub(crate) vfs: &'a dyn Vfs,
}

impl Editor<'_> {
    /// What kind of entry is at `path`, if any.
    pub(crate) async fn kind(&self, path: &str) -> Result<Option<EntryKind>, VfsError> {
        Ok(self.vfs.stat(path).await?.map(|m| m.kind))
    }

    /// What is at `path`: a directory, or a file's text.
    pub(crate) async fn view(&self, path: &str) -> Result<Viewed, EditError> {
        match self.kind(path).await? {
            None => Err(EditError::NotFound),
            Some(EntryKind::Directory) => Ok(Viewed::Directory),
            Some(EntryKind::File) => Ok(Viewed::File(self.vfs.read_to_string(path).await?)),
        }
    }

    /// The text of the file at `path`.
    async fn read_file(&self, path: &str) -> Result<String, EditError> {
        match self.view(path).await? {
            Viewed::File(text) => Ok(text),
            Viewed::Directory => Err(EditError::IsDirectory),
        }
    }

    /// Writes `text` to `path`; returns whether a file was replaced.
    pub(crate) async fn create(
        &self,
        path: &str,
        text: &str,
        mode: CreateMode,
    ) -> Result<bool, EditError> {
        let existed = match (self.kind(path).await?, mode) {
            (None, _) => false,
            (Some(_), CreateMode::New) => return Err(EditError::Exists),
            (Some(EntryKind::Directory), CreateMode::Overwrite) => {
                return Err(EditError::IsDirectory);
            }
            (Some(EntryKind::File), CreateMode::Overwrite) => true,
        };
        self.vfs.write(path, text.as_bytes()).await?;
        Ok(existed)
    }

    /// Replaces the one occurrence of `old` with `new` in the file at
    /// `path`; returns the new text and the 1-based line the change starts
    /// on.
    pub(crate) async fn str_replace(
        &self,
        path: &str,
        old: &str,
        new: &str,
    ) -> Result<(String, usize), EditError> {
        let text = self.read_file(path).await?;
        let found = occurrence_lines(&text, old);
        match found[..] {
            [] => Err(EditError::NoMatch),
            [line] => {
                let updated = text.replacen(old, new, 1);
                self.vfs.write(path, updated.as_bytes()).await?;
                Ok((updated, line))
            }
            _ => Err(EditError::Ambiguous(found)),
        }
    }

    /// Inserts `text` after line `after` (0 = at the top) of the file at
    /// `path`; returns the line it was inserted after.
    pub(crate) async fn insert(
        &self,
        path: &str,
        after: i64,
        text: &str,
    ) -> Result<usize, EditError> {
        let current = self.read_file(path).await?;
        let invalid = || EditError::InvalidLine {
            line: after,
            count: lines(&current).len(),
        };
        let at = usize::try_from(after).map_err(|_| invalid())?;
        let updated = insert_after_line(&current, at, text).ok_or_else(invalid)?;
        self.vfs.write(path, updated.as_bytes()).await?;
        Ok(at)
    }

    /// Deletes the file or directory at `path`; returns what it was.
    pub(crate) async fn delete(&self, path: &str) -> Result<EntryKind, EditError> {
        let kind = self.kind(path).await?.ok_or(EditError::NotFound)?;
        self.vfs.delete(path).await?;
        Ok(kind)
    }

    /// Moves `from` to `to`, which must not exist.
    pub(crate) async fn rename(&self, from: &str, to: &str) -> Result<(), EditError> {
        if self.kind(from).await?.is_none() {
            return Err(EditError::NotFound);
        }
        if self.kind(to).await?.is_some() {
            return Err(EditError::Exists);
        }
        self.vfs.rename(from, to).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfs::MemoryVfs;

    fn assert_err(result: Result<impl std::fmt::Debug, EditError>, expected: &str) {
        match result {
            Err(e) => assert_eq!(format!("{e:?}"), expected),
            Ok(v) => panic!("expected {expected}, got {v:?}"),
        }
    }

    #[tokio::test]
    async fn every_operation_decides_over_the_vfs() {
        let vfs = MemoryVfs::new();
        let editor = Editor { vfs: &vfs };

        assert!(
            !editor
                .create("/a.txt", "one\ntwo\ntwo\n", CreateMode::New)
                .await
                .unwrap()
        );
        assert_err(
            editor.create("/a.txt", "x", CreateMode::New).await,
            "Exists",
        );
        assert!(
            editor
                .create("/a.txt", "one\ntwo\n", CreateMode::Overwrite)
                .await
                .unwrap()
        );
        assert_err(
            editor.create("/", "x", CreateMode::Overwrite).await,
            "IsDirectory",
        );

        assert_eq!(
            editor.str_replace("/a.txt", "two", "2").await.unwrap(),
            ("one\n2\n".to_owned(), 2)
        );
        assert_err(editor.str_replace("/a.txt", "two", "2").await, "NoMatch");
        editor
            .create("/b.txt", "x\nx\n", CreateMode::New)
            .await
            .unwrap();
        assert_err(
            editor.str_replace("/b.txt", "x", "y").await,
            "Ambiguous([1, 2])",
        );
        assert_err(editor.str_replace("/", "x", "y").await, "IsDirectory");
        assert_err(editor.str_replace("/nope", "x", "y").await, "NotFound");

        assert_eq!(editor.insert("/a.txt", 0, "zero").await.unwrap(), 0);
        assert_err(
            editor.insert("/a.txt", 9, "x").await,
            "InvalidLine { line: 9, count: 3 }",
        );
        assert_err(
            editor.insert("/a.txt", -1, "x").await,
            "InvalidLine { line: -1, count: 3 }",
        );
        match editor.view("/a.txt").await.unwrap() {
            Viewed::File(text) => assert_eq!(text, "zero\none\n2\n"),
            Viewed::Directory => panic!("a file was expected"),
        }

        assert_err(editor.rename("/nope", "/c.txt").await, "NotFound");
        assert_err(editor.rename("/a.txt", "/b.txt").await, "Exists");
        editor.rename("/a.txt", "/c.txt").await.unwrap();
        assert_eq!(editor.kind("/a.txt").await.unwrap(), None);
        assert_eq!(editor.delete("/c.txt").await.unwrap(), EntryKind::File);
        assert_err(editor.delete("/c.txt").await, "NotFound");
    }
}
