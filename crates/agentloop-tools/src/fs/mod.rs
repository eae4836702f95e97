//! The fs tool: a text-editor-style tool over the project [`Vfs`].

mod edit;
mod glob;
mod input;
mod search;

use std::sync::Arc;

use agentloop_types::{
    ApprovalPolicy, ArgumentMatch, Tool, ToolContext, ToolDefinition, ToolOptionSpec, ToolResult,
    ToolStream, Vfs, single_result,
};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::options::{bool_option, boolean_option, resolve_options};
use crate::schema::{definition_of, parse, shared_input_schema};

pub use glob::{GlobError, glob_to_regex};
pub use input::{FsCommand, FsInput, FsLimits};

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

impl Tool for FsTool {
    fn name(&self) -> &str {
        "fs"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        Value::clone(&shared_input_schema::<FsInput>())
    }

    fn definition(&self) -> ToolDefinition {
        definition_of::<FsInput>(self)
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

    fn may_write(&self, input: &Value) -> bool {
        // A call whose command cannot be read is refused before it writes.
        input
            .get("command")
            .and_then(|command| FsCommand::deserialize(command).ok())
            .is_some_and(FsCommand::writes)
    }

    /// Reads run at once; whatever changes files waits for approval.
    fn approval(&self) -> ApprovalPolicy {
        ApprovalPolicy::Unless(ArgumentMatch {
            pointer: "/command".to_owned(),
            any_of: [FsCommand::View, FsCommand::Glob, FsCommand::Grep]
                .iter()
                .map(|c| Value::String(c.as_str().to_owned()))
                .collect(),
            command_prefixes: Vec::new(),
        })
    }

    fn execute(self: Arc<Self>, input: Value, context: ToolContext) -> ToolStream {
        single_result(async move { self.run(input, &context.options).await })
    }
}
