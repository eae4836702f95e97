//! An MCP server's tools as agentloop [`Tool`]s.

use std::sync::Arc;

use agentloop_types::{
    ApprovalPolicy, BlockCategory, RenderingBlockGroup, RenderingContentBlock, Tool, ToolContext,
    ToolOutput, ToolResult, ToolStream, ToolStreamEvent,
};
use futures::future::BoxFuture;
use rmcp::model::ProgressNotificationParam;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::server::{ListedTool, McpServer};

/// One tool of an MCP server. Its stream reports the server's progress
/// notifications as [`ToolStreamEvent::GroupsUpdate`]s and ends with the
/// call's result.
pub struct McpTool {
    server: McpServer,
    listed: ListedTool,
}

impl McpServer {
    /// The tools the server offers now, as agentloop tools, and the two
    /// that list and read its resources when it has some.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.listed_tools()
            .into_iter()
            .map(|listed| {
                Arc::new(McpTool {
                    server: self.clone(),
                    listed,
                }) as Arc<dyn Tool>
            })
            .chain(crate::resources::resource_tools(self))
            .collect()
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.listed.name
    }

    fn description(&self) -> &str {
        &self.listed.description
    }

    fn input_schema(&self) -> Value {
        self.listed.input_schema.clone()
    }

    /// A tool of another program may do anything: its calls wait for
    /// approval unless its server declares it read-only.
    fn approval(&self) -> ApprovalPolicy {
        if self.listed.read_only {
            ApprovalPolicy::Never
        } else {
            ApprovalPolicy::Always
        }
    }

    fn execute(self: Arc<Self>, input: Value, context: ToolContext) -> ToolStream {
        let (progress_tx, progress_rx) = mpsc::unbounded_channel();
        let work: BoxFuture<'static, ToolResult> = Box::pin(async move {
            let arguments = match input {
                Value::Object(map) => Some(map),
                Value::Null => None,
                other => {
                    return ToolResult::error(format!(
                        "Invalid input: expected a JSON object, got {other}"
                    ));
                }
            };
            self.server
                .call(
                    &self.listed.mcp_name,
                    arguments,
                    context.cancel,
                    progress_tx,
                )
                .await
        });
        Box::pin(futures::stream::unfold(
            Some((work, progress_rx)),
            |state| async move {
                let (mut work, mut progress) = state?;
                tokio::select! {
                    // Progress already received is reported before the result.
                    biased;
                    Some(update) = progress.recv() => {
                        Some((ToolOutput::Event(progress_event(&update)), Some((work, progress))))
                    }
                    result = &mut work => Some((ToolOutput::Done(result), None)),
                }
            },
        ))
    }
}

/// A progress notification as the tool's display group: one line such as
/// `Progress 2/5: indexing`.
fn progress_event(update: &ProgressNotificationParam) -> ToolStreamEvent {
    let mut line = format!("Progress {}", number(update.progress));
    if let Some(total) = update.total {
        line.push_str(&format!("/{}", number(total)));
    }
    if let Some(message) = &update.message {
        line.push_str(": ");
        line.push_str(message);
    }
    ToolStreamEvent::GroupsUpdate {
        groups: vec![RenderingBlockGroup {
            category: BlockCategory::Text,
            blocks: vec![RenderingContentBlock::Text { text: line }],
            is_tool_generated: true,
        }],
    }
}

/// Whole numbers without a trailing `.0`.
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_lines() {
        let update: ProgressNotificationParam = serde_json::from_value(serde_json::json!(
            {"progressToken": 1, "progress": 2, "total": 5, "message": "indexing"}
        ))
        .unwrap();
        let ToolStreamEvent::GroupsUpdate { groups } = progress_event(&update) else {
            panic!("not a groups update")
        };
        assert_eq!(
            groups[0].blocks,
            vec![RenderingContentBlock::Text {
                text: "Progress 2/5: indexing".into()
            }]
        );
        let update: ProgressNotificationParam =
            serde_json::from_value(serde_json::json!({"progressToken": 1, "progress": 0.5}))
                .unwrap();
        let ToolStreamEvent::GroupsUpdate { groups } = progress_event(&update) else {
            panic!("not a groups update")
        };
        assert_eq!(
            groups[0].blocks,
            vec![RenderingContentBlock::Text {
                text: "Progress 0.5".into()
            }]
        );
    }
}
