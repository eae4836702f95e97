//! What the memory tool is asked, and where its files live.

use schemars::JsonSchema;
use serde::Deserialize;

/// Root directory of the memory tool.
pub const MEMORY_ROOT: &str = "/memories";

/// The command to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemoryCommand {
    /// Show a directory listing or a file's content.
    View,
    /// Create a file (fails if it exists).
    Create,
    /// Replace one exact occurrence of a string in a file.
    StrReplace,
    /// Insert text after a line.
    Insert,
    /// Delete a file or directory.
    Delete,
    /// Rename or move a file or directory.
    Rename,
}

impl MemoryCommand {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Self::View => "view",
            Self::Create => "create",
            Self::StrReplace => "str_replace",
            Self::Insert => "insert",
            Self::Delete => "delete",
            Self::Rename => "rename",
        }
    }
}

/// Input of the memory tool: a command and the fields it uses.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct MemoryInput {
    /// The command to run.
    pub command: MemoryCommand,
    /// Path under /memories (view, create, str_replace, insert, delete).
    #[serde(default)]
    pub path: Option<String>,
    /// For view of a file: [first_line, last_line], 1-based; -1 as last means to the end.
    #[serde(default)]
    pub view_range: Option<Vec<i64>>,
    /// For create: the file's content.
    #[serde(default)]
    pub file_text: Option<String>,
    /// For str_replace: the exact text to replace.
    #[serde(default)]
    pub old_str: Option<String>,
    /// For str_replace: the replacement text (also accepted for insert).
    #[serde(default)]
    pub new_str: Option<String>,
    /// For insert: the line after which to insert (0 inserts at the top).
    #[serde(default)]
    pub insert_line: Option<i64>,
    /// For insert: the text to insert.
    #[serde(default)]
    pub insert_text: Option<String>,
    /// For rename: the current path.
    #[serde(default)]
    pub old_path: Option<String>,
    /// For rename: the new path.
    #[serde(default)]
    pub new_path: Option<String>,
}
