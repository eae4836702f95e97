//! An MCP server's resources, offered to the model as two tools of the
//! server's (when it declares resources): `<server>__list_resources`
//! lists what it offers (each resource's URI, name, type, size and
//! description, and the URI templates it reads), and
//! `<server>__read_resource` reads one by URI. A text resource is its
//! text; a binary one is named by its type and size, its bytes left out
//! (the model cannot read base64 usefully, and it would fill the
//! context). Reading changes nothing, so neither waits for approval. A
//! tool of the server's own with the same name is offered instead.

use std::sync::Arc;

use agentloop_types::{CancellationToken, Tool, ToolContext, ToolResult, ToolStream};
use rmcp::model::{
    ReadResourceRequestParams, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::server::{McpServer, namespaced};

/// Which of the two resource tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    List,
    Read,
}

/// One of a server's resource tools.
pub(crate) struct ResourceTool {
    server: McpServer,
    action: Action,
    name: String,
}

/// The input of `read_resource`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadInput {
    uri: String,
}

/// The resource tools of `server`, left out where the server has a tool
/// of the same name.
pub(crate) fn resource_tools(server: &McpServer) -> Vec<Arc<dyn Tool>> {
    if !server.offers_resources() {
        return Vec::new();
    }
    let listed = server.listed_tools();
    [
        (Action::List, "list_resources"),
        (Action::Read, "read_resource"),
    ]
    .into_iter()
    .map(|(action, suffix)| (action, namespaced(server.name(), suffix)))
    .filter(|(_, name)| !listed.iter().any(|tool| tool.name == *name))
    .map(|(action, name)| {
        Arc::new(ResourceTool {
            server: server.clone(),
            action,
            name,
        }) as Arc<dyn Tool>
    })
    .collect()
}

impl McpServer {
    /// Every resource and resource template the server lists.
    pub(crate) async fn list_resources(
        &self,
        cancel: &CancellationToken,
    ) -> Result<(Vec<Resource>, Vec<ResourceTemplate>), String> {
        self.request("resources/list", cancel, |peer| async move {
            let resources = peer.list_all_resources().await?;
            // A server without templates may not answer their list.
            let templates = peer.list_all_resource_templates().await.unwrap_or_default();
            Ok((resources, templates))
        })
        .await
    }

    /// The contents of the resource at `uri`.
    pub(crate) async fn read_resource(
        &self,
        uri: &str,
        cancel: &CancellationToken,
    ) -> Result<ReadResourceResult, String> {
        let params = ReadResourceRequestParams::new(uri);
        self.request("resources/read", cancel, |peer| async move {
            peer.read_resource(params).await
        })
        .await
    }
}

impl Tool for ResourceTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        match self.action {
            Action::List => {
                "Lists the resources this MCP server offers (documents, files, data), with \
                 their URIs, and the URI templates it can read."
            }
            Action::Read => {
                "Reads one resource of this MCP server by its URI (from its resource list, or \
                 a URI template filled in)."
            }
        }
    }

    fn input_schema(&self) -> Value {
        match self.action {
            Action::List => {
                json!({ "type": "object", "properties": {}, "additionalProperties": false })
            }
            Action::Read => json!({
                "type": "object",
                "properties": {
                    "uri": { "type": "string", "description": "The resource's URI." }
                },
                "required": ["uri"],
                "additionalProperties": false
            }),
        }
    }

    fn execute(self: Arc<Self>, input: Value, context: ToolContext) -> ToolStream {
        Box::pin(futures::stream::once(async move {
            agentloop_types::ToolOutput::Done(self.run(input, &context).await)
        }))
    }
}

impl ResourceTool {
    async fn run(&self, input: Value, context: &ToolContext) -> ToolResult {
        let cancel = &context.cancel;
        match self.action {
            Action::List => match self.server.list_resources(cancel).await {
                Ok((resources, templates)) => ToolResult::ok(listing(&resources, &templates)),
                Err(error) => ToolResult::error(error),
            },
            Action::Read => {
                let input = match serde_json::from_value::<ReadInput>(input) {
                    Ok(input) => input,
                    Err(e) => return ToolResult::error(format!("Invalid input: {e}")),
                };
                match self.server.read_resource(&input.uri, cancel).await {
                    Ok(read) => ToolResult::ok(contents(&read)),
                    Err(error) => ToolResult::error(error),
                }
            }
        }
    }
}

/// The resources and templates, a line each.
fn listing(resources: &[Resource], templates: &[ResourceTemplate]) -> String {
    if resources.is_empty() && templates.is_empty() {
        return "The server offers no resources.".to_owned();
    }
    let mut out = String::new();
    for resource in resources {
        out.push_str(&format!("- {} ({}", resource.uri, resource.name));
        if let Some(mime) = &resource.mime_type {
            out.push_str(&format!(", {mime}"));
        }
        if let Some(size) = resource.size {
            out.push_str(&format!(", {size} bytes"));
        }
        out.push(')');
        if let Some(description) = &resource.description {
            out.push_str(&format!(": {description}"));
        }
        out.push('\n');
    }
    if !templates.is_empty() {
        out.push_str("URI templates (fill in the {placeholders}):\n");
        for template in templates {
            out.push_str(&format!("- {} ({})", template.uri_template, template.name));
            if let Some(description) = &template.description {
                out.push_str(&format!(": {description}"));
            }
            out.push('\n');
        }
    }
    out
}

/// What a read returned: each text as it is (under its URI when there are
/// several), each blob by its type and size.
fn contents(read: &ReadResourceResult) -> String {
    let several = read.contents.len() > 1;
    let parts: Vec<String> = read
        .contents
        .iter()
        .map(|content| match content {
            ResourceContents::TextResourceContents { uri, text, .. } if several => {
                format!("{uri}:\n{text}")
            }
            ResourceContents::TextResourceContents { text, .. } => text.clone(),
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[{uri}: binary, {}, {} bytes, not shown]",
                mime_type.as_deref().unwrap_or("unknown type"),
                blob.len() / 4 * 3
            ),
            // Contents of a later revision of the protocol.
            _ => "[contents of a kind this client does not read]".to_owned(),
        })
        .collect();
    if parts.is_empty() {
        return "The resource is empty.".to_owned();
    }
    parts.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_names_each_resource_and_template() {
        let resources: Vec<Resource> = serde_json::from_value(json!([
            { "uri": "demo://a.md", "name": "a.md", "mimeType": "text/markdown", "size": 12,
              "description": "The first" },
            { "uri": "demo://b", "name": "b" }
        ]))
        .unwrap();
        let templates: Vec<ResourceTemplate> = serde_json::from_value(json!([
            { "uriTemplate": "demo://text/{id}", "name": "text", "description": "A text by id" }
        ]))
        .unwrap();
        assert_eq!(
            listing(&resources, &templates),
            "- demo://a.md (a.md, text/markdown, 12 bytes): The first\n- demo://b (b)\n\
             URI templates (fill in the {placeholders}):\n- demo://text/{id} (text): A text by id\n"
        );
        assert_eq!(listing(&[], &[]), "The server offers no resources.");
    }

    #[test]
    fn texts_are_read_and_blobs_named() {
        let read: ReadResourceResult = serde_json::from_value(json!({ "contents": [
            { "uri": "demo://a", "text": "hello" },
            { "uri": "demo://b", "mimeType": "image/png", "blob": "AAAA" }
        ] }))
        .unwrap();
        assert_eq!(
            contents(&read),
            "demo://a:\nhello\n\n[demo://b: binary, image/png, 3 bytes, not shown]"
        );
        let one: ReadResourceResult =
            serde_json::from_value(json!({ "contents": [{ "uri": "demo://a", "text": "hello" }] }))
                .unwrap();
        assert_eq!(contents(&one), "hello");
    }
}
