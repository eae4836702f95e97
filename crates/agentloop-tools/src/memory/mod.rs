//! The memory tool: Anthropic's memory command set over `/memories` in a
//! [`Vfs`], offered to every provider as a function tool.

mod commands;
mod input;

use std::sync::Arc;

use agentloop_types::{Tool, ToolContext, ToolResult, ToolStream, Vfs, single_result};
use serde_json::Value;

use crate::schema::{input_schema, parse};

pub use input::{MEMORY_ROOT, MemoryCommand, MemoryInput};

const DESCRIPTION: &str = "Persistent memory across conversations, kept as files under /memories. \
Commands: view (a directory listing or a file with line numbers, optional view_range), \
create (path, file_text), str_replace (path, old_str, new_str; old_str must occur exactly once), \
insert (path, insert_line, insert_text), delete (path), rename (old_path, new_path). \
Check your memory directory before starting a task, and record progress and learnings as you go.";

/// The memory tool.
pub struct MemoryTool {
    vfs: Arc<dyn Vfs>,
}

impl MemoryTool {
    /// A memory tool storing its files in `vfs` under [`MEMORY_ROOT`].
    pub fn new(vfs: Arc<dyn Vfs>) -> Self {
        Self { vfs }
    }

    /// Runs one call.
    pub async fn run(&self, input: Value) -> ToolResult {
        let input: MemoryInput = match parse(input) {
            Ok(i) => i,
            Err(e) => return e,
        };
        commands::Memory { vfs: &*self.vfs }.run(input).await
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
        input_schema::<MemoryInput>()
    }

    fn runs_alone(&self) -> bool {
        true
    }

    fn execute(self: Arc<Self>, input: Value, _context: ToolContext) -> ToolStream {
        single_result(async move { self.run(input).await })
    }
}
