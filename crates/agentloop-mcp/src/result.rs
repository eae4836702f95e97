//! An MCP `tools/call` result → the agentloop [`ToolResult`].

use agentloop_types::{
    AttachmentSource, BlockCategory, RenderingBlockGroup, RenderingContentBlock, ToolResult,
};
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

/// Converts a call result. Text blocks become the result text; images and
/// audio become a placeholder line for the model and an attachment group for
/// display; embedded resources give their text (or a placeholder); resource
/// links give their URI. `structuredContent` is appended as JSON unless a text
/// block already holds exactly that value. `isError` maps to `is_error`.
pub fn to_tool_result(result: &CallToolResult) -> ToolResult {
    let mut parts: Vec<String> = Vec::new();
    let mut attachments: Vec<RenderingContentBlock> = Vec::new();
    let mut texts_as_json: Vec<Value> = Vec::new();
    for block in &result.content {
        // Working on the wire form keeps this independent of how the SDK
        // models each block kind.
        let value = serde_json::to_value(block).unwrap_or(Value::Null);
        match value.get("type").and_then(Value::as_str).unwrap_or("") {
            "text" => {
                if let Ok(json) = serde_json::from_str::<Value>(&str_field(&value, "text")) {
                    texts_as_json.push(json);
                }
            }
            "image" | "audio" => attachments.push(RenderingContentBlock::Attachment {
                source: AttachmentSource::Base64 {
                    media_type: str_field(&value, "mimeType"),
                    data: str_field(&value, "data"),
                },
            }),
            _ => {}
        }
        parts.push(wire_text(&value));
    }
    if let Some(structured) = &result.structured_content
        && !texts_as_json.contains(structured)
    {
        parts.push(structured.to_string());
    }
    let content = if parts.is_empty() {
        "(no content)".to_owned()
    } else {
        parts.join("\n")
    };
    let mut tool_result = if result.is_error == Some(true) {
        ToolResult::error(content)
    } else {
        ToolResult::ok(content)
    };
    if !attachments.is_empty() {
        tool_result.rendering_groups.push(RenderingBlockGroup {
            category: BlockCategory::Attachment,
            blocks: attachments,
            is_tool_generated: true,
        });
    }
    tool_result
}

/// What the model reads of one content block: a text as it is, an image
/// or audio as `[image: type]`, an embedded resource's text (or a
/// placeholder naming it), a resource link's URI and name.
pub(crate) fn content_text(block: &ContentBlock) -> String {
    wire_text(&serde_json::to_value(block).unwrap_or(Value::Null))
}

/// [`content_text`] of a block in its wire form.
fn wire_text(value: &Value) -> String {
    let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "text" => str_field(value, "text"),
        "image" | "audio" => format!("[{kind}: {}]", str_field(value, "mimeType")),
        "resource" => {
            let resource = value.get("resource").cloned().unwrap_or(Value::Null);
            match resource.get("text").and_then(Value::as_str) {
                Some(text) => text.to_owned(),
                None => format!(
                    "[resource: {} ({})]",
                    str_field(&resource, "uri"),
                    str_field(&resource, "mimeType")
                ),
            }
        }
        "resource_link" => format!(
            "[resource link: {} {}]",
            str_field(value, "uri"),
            str_field(value, "name")
        ),
        _ => value.to_string(),
    }
}

fn str_field(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn convert(wire: Value) -> ToolResult {
        to_tool_result(&serde_json::from_value(wire).unwrap())
    }

    #[test]
    fn text_and_error_flag() {
        let result = convert(
            json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "isError": true}),
        );
        assert_eq!(result.content, "a\nb");
        assert!(result.is_error);
    }

    #[test]
    fn structured_content_is_kept_once() {
        let result = convert(
            json!({"content": [{"type": "text", "text": "{\"t\": 1}"}], "structuredContent": {"t": 1}}),
        );
        assert_eq!(result.content, "{\"t\": 1}");
        let result = convert(
            json!({"content": [{"type": "text", "text": "weather"}], "structuredContent": {"t": 1}}),
        );
        assert_eq!(result.content, "weather\n{\"t\":1}");
        let result = convert(json!({"content": [], "structuredContent": {"t": 1}}));
        assert_eq!(result.content, "{\"t\":1}");
    }

    #[test]
    fn images_become_attachments() {
        let result = convert(
            json!({"content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]}),
        );
        assert_eq!(result.content, "[image: image/png]");
        assert_eq!(
            result.rendering_groups,
            vec![RenderingBlockGroup {
                category: BlockCategory::Attachment,
                blocks: vec![RenderingContentBlock::Attachment {
                    source: AttachmentSource::Base64 {
                        media_type: "image/png".into(),
                        data: "AAAA".into()
                    }
                }],
                is_tool_generated: true,
            }]
        );
    }

    #[test]
    fn resources_and_empty_results() {
        let result = convert(json!({"content": [
            {"type": "resource", "resource": {"uri": "file:///a", "text": "inside"}},
            {"type": "resource", "resource": {"uri": "file:///b", "mimeType": "application/gzip", "blob": "AA=="}},
            {"type": "resource_link", "uri": "file:///c", "name": "c"}
        ]}));
        assert_eq!(
            result.content,
            "inside\n[resource: file:///b (application/gzip)]\n[resource link: file:///c c]"
        );
        assert_eq!(convert(json!({"content": []})).content, "(no content)");
    }
}
