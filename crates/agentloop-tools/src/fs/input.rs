//! What the fs tool is asked: its command, the fields the command uses, and
//! the limits it answers within.

use schemars::JsonSchema;
use serde::Deserialize;

/// The command to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FsCommand {
    /// Show a file with line numbers, or list a directory.
    View,
    /// Write a file, creating parent directories.
    Create,
    /// Replace the one occurrence of old_str with new_str.
    StrReplace,
    /// Insert text after a line.
    Insert,
    /// Delete a file or a directory with its content.
    Delete,
    /// Move a file or directory to new_path.
    Rename,
    /// Find files whose path matches a glob pattern.
    Glob,
    /// Search file contents for a regular expression.
    Grep,
}

impl FsCommand {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Self::View => "view",
            Self::Create => "create",
            Self::StrReplace => "str_replace",
            Self::Insert => "insert",
            Self::Delete => "delete",
            Self::Rename => "rename",
            Self::Glob => "glob",
            Self::Grep => "grep",
        }
    }

    pub(super) fn writes(self) -> bool {
        matches!(
            self,
            Self::Create | Self::StrReplace | Self::Insert | Self::Delete | Self::Rename
        )
    }
}

/// Input of the fs tool: a command and the fields it uses.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct FsInput {
    /// The command to run.
    pub command: FsCommand,
    /// The file or directory (for glob and grep: where to search, default /).
    #[serde(default)]
    pub path: Option<String>,
    /// For view: [first_line, last_line], 1-based; -1 as last means to the end.
    #[serde(default)]
    pub view_range: Option<Vec<i64>>,
    /// For create: the file's content.
    #[serde(default)]
    pub file_text: Option<String>,
    /// For str_replace: the exact text to replace.
    #[serde(default)]
    pub old_str: Option<String>,
    /// For str_replace: the replacement (also accepted for insert).
    #[serde(default)]
    pub new_str: Option<String>,
    /// For insert: the line after which to insert (0 = at the top).
    #[serde(default)]
    pub insert_line: Option<i64>,
    /// For insert: the text to insert.
    #[serde(default)]
    pub insert_text: Option<String>,
    /// For rename: the current path (`path` is accepted too).
    #[serde(default)]
    pub old_path: Option<String>,
    /// For rename: the new path.
    #[serde(default)]
    pub new_path: Option<String>,
    /// For glob: a glob pattern (`*`, `**`, `?`, `[abc]`, `{a,b}`); for grep: a regular expression.
    #[serde(default)]
    pub pattern: Option<String>,
    /// For grep: only search files whose path matches this glob.
    #[serde(default)]
    pub include: Option<String>,
    /// For grep: match case-insensitively.
    #[serde(default)]
    pub case_insensitive: Option<bool>,
}

/// Output and size limits of the fs tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsLimits {
    /// Largest output of view, in bytes; longer output is cut with a note.
    pub max_view_bytes: usize,
    /// Most entries listed for a directory, glob or grep.
    pub max_results: usize,
    /// Files larger than this are not searched by grep.
    pub max_grep_file_bytes: u64,
    /// Most files and directories a glob or grep walks.
    pub max_walk: usize,
}

impl Default for FsLimits {
    fn default() -> Self {
        Self {
            max_view_bytes: 64 * 1024,
            max_results: 500,
            max_grep_file_bytes: 1024 * 1024,
            max_walk: 20_000,
        }
    }
}
