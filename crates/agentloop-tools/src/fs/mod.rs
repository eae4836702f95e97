//! The fs tool: a text-editor-style tool over the project [`Vfs`].

mod edit;
mod glob;
mod search;

use std::sync::Arc;

use agentloop_types::{
    ApprovalPolicy, ArgumentMatch, Tool, ToolContext, ToolDefinition, ToolOptionSpec, ToolResult,
    ToolStream, Vfs, single_result,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::options::{bool_option, boolean_option, resolve_options};
use crate::schema::{input_schema, parse};

pub use glob::{GlobError, glob_to_regex};

/// Option key: refuse every command that changes files.
pub const READ_ONLY: &str = "read_only";

const DESCRIPTION: &str = "Read and edit the project's files. Commands: \
view (a file with line numbers, optional view_range [first, last]; a directory lists its entries), \
create (path, file_text; replaces an existing file), \
str_replace (path, old_str, new_str; old_str must occur exactly once), \
insert (path, insert_line, insert_text; 0 inserts at the top), \
delete (path), rename (path, new_path), \
glob (pattern such as **/*.md, optional path to search under), \
grep (pattern as a regular expression, optional path and include glob). \
Long output is cut with a note saying how to see the rest.";

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
    fn as_str(self) -> &'static str {
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

    fn writes(self) -> bool {
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

/// The fs tool.
pub struct FsTool {
    vfs: Arc<dyn Vfs>,
    limits: FsLimits,
}

impl FsTool {
    /// An fs tool over `vfs` with default limits.
    pub fn new(vfs: Arc<dyn Vfs>) -> Self {
        Self {
            vfs,
            limits: FsLimits::default(),
        }
    }

    /// Sets the limits.
    pub fn with_limits(mut self, limits: FsLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Runs one call with the given option values.
    pub async fn run(&self, input: Value, options: &Map<String, Value>) -> ToolResult {
        let options = match resolve_options(&self.options(), options) {
            Ok(o) => o,
            Err(e) => return ToolResult::error(format!("Invalid options: {e}")),
        };
        let input: FsInput = match parse(input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        if input.command.writes() && bool_option(&options, READ_ONLY) {
            return ToolResult::error(format!(
                "Error: `{}` is not allowed: the fs tool is read-only",
                input.command.as_str()
            ));
        }
        let fs = edit::Fs {
            vfs: &*self.vfs,
            limits: self.limits,
        };
        let outcome = match input.command {
            FsCommand::View => fs.view(input).await,
            FsCommand::Create => fs.create(input).await,
            FsCommand::StrReplace => fs.str_replace(input).await,
            FsCommand::Insert => fs.insert(input).await,
            FsCommand::Delete => fs.delete(input).await,
            FsCommand::Rename => fs.rename(input).await,
            FsCommand::Glob => fs.glob(input).await,
            FsCommand::Grep => fs.grep(input).await,
        };
        match outcome {
            Ok(text) => ToolResult::ok(text),
            Err(text) => ToolResult::error(text),
        }
    }
}

/// The input schema, generated once: a server offers the tool to every run,
/// and each copy of this schema is several kilobytes.
fn shared_schema() -> Arc<Value> {
    static SCHEMA: std::sync::OnceLock<Arc<Value>> = std::sync::OnceLock::new();
    SCHEMA
        .get_or_init(|| Arc::new(input_schema::<FsInput>()))
        .clone()
}

impl Tool for FsTool {
    fn name(&self) -> &str {
        "fs"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        Value::clone(&shared_schema())
    }

    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: self.name().to_owned(),
            description: DESCRIPTION.to_owned(),
            input_schema: shared_schema(),
        }
    }

    fn options(&self) -> Vec<ToolOptionSpec> {
        vec![boolean_option(
            READ_ONLY,
            false,
            "Refuse create, str_replace, insert, delete and rename.",
        )]
    }

    fn runs_alone(&self) -> bool {
        true
    }

    /// Reads run at once; whatever changes files waits for approval.
    fn approval(&self) -> ApprovalPolicy {
        ApprovalPolicy::Unless(ArgumentMatch {
            pointer: "/command".to_owned(),
            any_of: [FsCommand::View, FsCommand::Glob, FsCommand::Grep]
                .iter()
                .map(|c| Value::String(c.as_str().to_owned()))
                .collect(),
        })
    }

    fn execute(self: Arc<Self>, input: Value, context: ToolContext) -> ToolStream {
        single_result(async move { self.run(input, &context.options).await })
    }
}
