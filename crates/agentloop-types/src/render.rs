//! Render blocks (seed 003) from message content: what a front end shows
//! for a message. The block types themselves live in
//! [`render_blocks`](crate::render_blocks) and are re-exported here.

pub use crate::render_blocks::{
    BlockCategory, RenderingBlockGroup, RenderingContentBlock, ToolInfoRenderBlock,
    ToolResultRenderBlock, ToolResultStatus, categorize_block, mark_tool_generated, push_grouped,
};

use crate::message::ContentBlock;

/// The render block for a content block. Tool results need the tool's name,
/// which the result block does not carry; `tool_name` supplies it.
pub fn render_block(
    block: &ContentBlock,
    tool_name: impl Fn(&str) -> Option<String>,
) -> RenderingContentBlock {
    match block {
        ContentBlock::Text { text, .. } => RenderingContentBlock::Text { text: text.clone() },
        ContentBlock::Thinking { thinking, .. } => RenderingContentBlock::Thinking {
            thinking: thinking.clone(),
        },
        ContentBlock::RedactedThinking { .. } => RenderingContentBlock::RedactedThinking,
        ContentBlock::ToolUse(call) => RenderingContentBlock::ToolUse {
            id: call.id.clone(),
            name: call.name.clone(),
            input: call.input.value(),
        },
        ContentBlock::ToolResult(result) => {
            RenderingContentBlock::ToolResult(ToolResultRenderBlock {
                name: tool_name(&result.tool_use_id).unwrap_or_default(),
                tool_use_id: result.tool_use_id.clone(),
                content: result.content.clone(),
                is_error: result.is_error,
                status: if result.is_error {
                    ToolResultStatus::Error
                } else {
                    ToolResultStatus::Complete
                },
                rendered_content: None,
                icon: None,
                rendering_groups: result.rendering_groups.clone(),
            })
        }
        ContentBlock::Image { source } | ContentBlock::Document { source, .. } => {
            RenderingContentBlock::Attachment {
                source: source.clone(),
            }
        }
        ContentBlock::Provider { block, .. } => RenderingContentBlock::Provider {
            block: block.clone(),
        },
    }
}

/// The render groups of a finished list of content blocks.
pub fn render_groups(content: &[ContentBlock]) -> Vec<RenderingBlockGroup> {
    let mut groups = Vec::new();
    for block in content {
        push_grouped(&mut groups, render_block(block, |_| None));
    }
    groups
}
