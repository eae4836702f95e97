//! The memory tool: Anthropic's memory command set over `/memories` in a
//! [`Vfs`], offered to every provider as a function tool. The files may be
//! handed out per call ([`VfsFor`]), so a store behind them can record
//! which run and call wrote each one.

mod commands;
mod input;

use std::sync::Arc;

use agentloop_types::{
    Tool, ToolContext, ToolDefinition, ToolResult, ToolStream, Vfs, VfsFor, WriteOrigin,
    single_result,
};
use serde_json::Value;

use crate::schema::{definition_of, parse, shared_input_schema};

pub use input::{MEMORY_ROOT, MemoryCommand, MemoryInput};

const DESCRIPTION: &str = "Persistent memory across conversations, kept as files under /memories. \
Commands: view (a directory listing or a file with line numbers, optional view_range), \
create (path, file_text), str_replace (path, old_str, new_str; old_str must occur exactly once), \
insert (path, insert_line, insert_text), delete (path), rename (old_path, new_path). \
Check your memory directory before starting a task, and record progress and learnings as you go.";

/// The memory tool.
pub struct MemoryTool {
    files: Arc<dyn VfsFor>,
}

impl MemoryTool {
    /// A memory tool storing its files in `vfs` under [`MEMORY_ROOT`].
    pub fn new(vfs: Arc<dyn Vfs>) -> Self {
        Self::per_call(Arc::new(vfs))
    }

    /// A memory tool whose files each call gets from `files`, told which
    /// run and call it is.
    pub fn per_call(files: Arc<dyn VfsFor>) -> Self {
        Self { files }
    }

    /// Runs one call on behalf of no particular run.
    pub async fn run(&self, input: Value) -> ToolResult {
        self.run_as(
            input,
            WriteOrigin {
                run_id: String::new(),
                step: String::new(),
            },
        )
        .await
    }

    /// Runs one call made by `origin`.
    pub async fn run_as(&self, input: Value, origin: WriteOrigin) -> ToolResult {
        let input: MemoryInput = match parse(input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        let vfs = self.files.vfs_for(origin);
        commands::Memory { vfs: &*vfs }.run(input).await
    }
}

impl Tool for MemoryTool {
    fn name(&self) -> &str {
        "memory"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        Value::clone(&shared_input_schema::<MemoryInput>())
    }

    fn definition(&self) -> ToolDefinition {
        definition_of::<MemoryInput>(self)
    }

    fn runs_alone(&self) -> bool {
        true
    }

    fn execute(self: Arc<Self>, input: Value, context: ToolContext) -> ToolStream {
        let origin = WriteOrigin {
            run_id: context.run_id,
            step: context.tool_use_id,
        };
        single_result(async move { self.run_as(input, origin).await })
    }
}
