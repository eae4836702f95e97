//! The `complete_workflow` tool: how an agent ends the implementation ↔
//! review chain of its task.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};

use agentloop_types::{Tool, ToolContext, ToolDefinition, ToolResult, ToolStream, single_result};
use serde_json::{Value, json};

/// The tool's name.
pub const COMPLETE_WORKFLOW: &str = "complete_workflow";

/// Marks the task's workflow complete once the run ends well. The flag is
/// read by the server when the run finishes: the run is completed first,
/// then `workflow_complete` is set, and the chain stops.
#[derive(Debug, Default)]
pub struct CompleteWorkflowTool {
    called: Arc<AtomicBool>,
}

impl CompleteWorkflowTool {
    /// A tool reporting into `called`.
    pub fn new(called: Arc<AtomicBool>) -> Self {
        Self { called }
    }
}

impl Tool for CompleteWorkflowTool {
    fn name(&self) -> &str {
        COMPLETE_WORKFLOW
    }

    fn description(&self) -> &str {
        "Mark this task's workflow as complete: no further implementation or review agent \
will be started after this run. Call it only when the whole task is done."
    }

    fn input_schema(&self) -> Value {
        Value::clone(&schema())
    }

    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: COMPLETE_WORKFLOW.to_owned(),
            description: self.description().to_owned(),
            input_schema: schema(),
        }
    }

    fn execute(self: Arc<Self>, _input: Value, _context: ToolContext) -> ToolStream {
        self.called.store(true, Ordering::SeqCst);
        single_result(async {
            ToolResult::ok("The workflow is marked complete; no further agent will be started.")
        })
    }
}

/// The input schema, built once: every implementation and review run is
/// offered the tool.
fn schema() -> Arc<Value> {
    static SCHEMA: LazyLock<Arc<Value>> = LazyLock::new(|| {
        Arc::new(json!({
            "type": "object",
            "properties": {
                "summary": { "type": "string", "description": "What was done." }
            }
        }))
    });
    Arc::clone(&SCHEMA)
}
