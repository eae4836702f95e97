//! Render blocks (seed 003): what a front end shows for a message, grouped
//! by category, including tool results that stream while they run.
//!
//! Messages carry these groups (a tool result's nested transcript), so they
//! sit below [`message`](crate::message); [`render`](crate::render) turns
//! message content into them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::attachment::AttachmentSource;

/// How a front end lays out a group of blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum BlockCategory {
    /// The visible answer.
    Text,
    /// Work behind the answer: thinking, tool calls and results, provider
    /// blocks, tool info.
    Backstage,
    /// Images and documents.
    Attachment,
}

/// Lifecycle of a tool result shown while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ToolResultStatus {
    /// The tool is still running.
    Running,
    /// Finished successfully.
    Complete,
    /// Finished with an error.
    Error,
}

/// A tool result as shown to a person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ToolResultRenderBlock {
    /// Tool name.
    pub name: String,
    /// Call id.
    pub tool_use_id: String,
    /// Final result text (empty while running).
    pub content: String,
    /// Whether the tool failed.
    #[serde(default)]
    pub is_error: bool,
    /// Lifecycle state.
    pub status: ToolResultStatus,
    /// Pre-rendered display text, if the tool made one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rendered_content: Option<String>,
    /// Icon hint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
    /// Nested groups from the tool's own work (a minion's transcript).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rendering_groups: Vec<RenderingBlockGroup>,
}

/// What a tool was asked and where its own chat lives.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ToolInfoRenderBlock {
    /// The task sent to the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// The sub-chat the tool ran in (minion chats).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<String>,
}

/// One renderable block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RenderingContentBlock {
    /// Answer text.
    Text {
        /// The text.
        text: String,
    },
    /// Reasoning.
    Thinking {
        /// The reasoning text.
        thinking: String,
    },
    /// Reasoning the provider hid.
    RedactedThinking,
    /// A tool call; `input` is the parsed arguments, or the raw text while
    /// they are still streaming.
    ToolUse {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Arguments.
        input: Value,
    },
    /// A tool result.
    ToolResult(ToolResultRenderBlock),
    /// Tool input and sub-chat id.
    ToolInfo(ToolInfoRenderBlock),
    /// An image or document.
    Attachment {
        /// Where it is.
        source: AttachmentSource,
    },
    /// A provider block the loop does not interpret.
    Provider {
        /// The block verbatim.
        block: Value,
    },
}

/// Consecutive blocks of one category.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RenderingBlockGroup {
    /// Category of every block in the group.
    pub category: BlockCategory,
    /// The blocks, in order.
    pub blocks: Vec<RenderingContentBlock>,
    /// Produced by a tool (a minion's transcript), styled apart.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_tool_generated: bool,
}

/// The category a render block belongs to.
pub fn categorize_block(block: &RenderingContentBlock) -> BlockCategory {
    match block {
        RenderingContentBlock::Text { .. } => BlockCategory::Text,
        RenderingContentBlock::Attachment { .. } => BlockCategory::Attachment,
        RenderingContentBlock::Thinking { .. }
        | RenderingContentBlock::RedactedThinking
        | RenderingContentBlock::ToolUse { .. }
        | RenderingContentBlock::ToolResult(_)
        | RenderingContentBlock::ToolInfo(_)
        | RenderingContentBlock::Provider { .. } => BlockCategory::Backstage,
    }
}

/// Appends a block to `groups`, opening a new group when its category
/// differs from the last group's.
pub fn push_grouped(groups: &mut Vec<RenderingBlockGroup>, block: RenderingContentBlock) {
    let category = categorize_block(&block);
    match groups.last_mut() {
        Some(last) if last.category == category && !last.is_tool_generated => {
            last.blocks.push(block)
        }
        _ => groups.push(RenderingBlockGroup {
            category,
            blocks: vec![block],
            is_tool_generated: false,
        }),
    }
}

/// Marks groups as produced by a tool (a minion's transcript shown inside
/// its parent's tool result).
pub fn mark_tool_generated(groups: &mut [RenderingBlockGroup]) {
    for group in groups {
        group.is_tool_generated = true;
    }
}
