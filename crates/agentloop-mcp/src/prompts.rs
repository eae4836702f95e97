//! An MCP server's prompts, for the person to pick (the spec makes them
//! the user's, not the model's): [`McpServers::prompts`] lists every
//! server's, [`McpServers::prompt`] fills one in with its arguments and
//! gives its messages as the conversation a run starts from. A message's
//! text is read as a tool result's is (an embedded resource gives its
//! text, an image a placeholder).

use std::collections::BTreeMap;

use agentloop_types::{CancellationToken, Message};
use rmcp::model::{GetPromptRequestParams, JsonObject, Prompt, PromptMessage, Role};

use crate::result::content_text;
use crate::server::McpServer;
use crate::servers::McpServers;

/// One prompt a server offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedPrompt {
    /// The server's name.
    pub server: String,
    /// The prompt's name on the server.
    pub name: String,
    /// What it is for, as the server says.
    pub description: Option<String>,
    /// Its arguments, each with whether it is required.
    pub arguments: Vec<(String, bool)>,
}

impl ListedPrompt {
    /// `server:name`, as [`McpServers::prompt`] takes it.
    pub fn qualified(&self) -> String {
        format!("{}:{}", self.server, self.name)
    }
}

impl McpServer {
    /// The prompts the server offers (none when it declares none).
    pub async fn prompts(&self) -> Result<Vec<ListedPrompt>, String> {
        if !self.offers_prompts() {
            return Ok(Vec::new());
        }
        let listed = self
            .request(
                "prompts/list",
                &CancellationToken::new(),
                |peer| async move { peer.list_all_prompts().await },
            )
            .await?;
        Ok(listed
            .into_iter()
            .map(|prompt| listed_prompt(self.name(), prompt))
            .collect())
    }

    /// Prompt `name` filled in with `arguments`, as messages: `user` and
    /// `assistant` turns, ids `mcp-prompt-1`, `mcp-prompt-2`, ….
    pub async fn prompt(
        &self,
        name: &str,
        arguments: &BTreeMap<String, String>,
    ) -> Result<Vec<Message>, String> {
        let mut params = GetPromptRequestParams::new(name);
        if !arguments.is_empty() {
            let arguments: JsonObject = arguments
                .iter()
                .map(|(key, value)| (key.clone(), value.clone().into()))
                .collect();
            params = params.with_arguments(arguments);
        }
        let got = self
            .request(
                "prompts/get",
                &CancellationToken::new(),
                |peer| async move { peer.get_prompt(params).await },
            )
            .await?;
        Ok(messages(&got.messages))
    }
}

impl McpServers {
    /// Every server's prompts, by server.
    pub async fn prompts(&self) -> Result<Vec<ListedPrompt>, String> {
        let mut all = Vec::new();
        for server in self.servers() {
            all.extend(server.prompts().await?);
        }
        Ok(all)
    }

    /// Prompt `qualified` (`server:name`) filled in with `arguments`, as
    /// the messages a run starts from.
    pub async fn prompt(
        &self,
        qualified: &str,
        arguments: &BTreeMap<String, String>,
    ) -> Result<Vec<Message>, String> {
        let Some((server, name)) = qualified.split_once(':') else {
            return Err(format!(
                "`{qualified}` does not name a prompt: write it as SERVER:PROMPT"
            ));
        };
        let Some(found) = self.servers().iter().find(|s| s.name() == server) else {
            let names: Vec<&str> = self.servers().iter().map(McpServer::name).collect();
            return Err(format!(
                "no MCP server `{server}` (started: {})",
                names.join(", ")
            ));
        };
        found.prompt(name, arguments).await
    }
}

fn listed_prompt(server: &str, prompt: Prompt) -> ListedPrompt {
    ListedPrompt {
        server: server.to_owned(),
        name: prompt.name,
        description: prompt.description,
        arguments: prompt
            .arguments
            .unwrap_or_default()
            .into_iter()
            .map(|argument| (argument.name, argument.required == Some(true)))
            .collect(),
    }
}

/// The prompt's messages as agentloop messages.
fn messages(prompt: &[PromptMessage]) -> Vec<Message> {
    prompt
        .iter()
        .enumerate()
        .map(|(n, message)| {
            let id = format!("mcp-prompt-{}", n + 1);
            let text = content_text(&message.content);
            match message.role {
                Role::Assistant => Message::assistant_text(id, text),
                _ => Message::user_text(id, text),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_keep_their_roles_and_read_their_content() {
        let prompt: Vec<PromptMessage> = serde_json::from_value(json!([
            { "role": "user", "content": { "type": "text", "text": "Plan the trip." } },
            { "role": "assistant", "content": { "type": "text", "text": "Where to?" } },
            { "role": "user", "content": { "type": "resource", "resource":
                { "uri": "demo://city", "mimeType": "text/plain", "text": "Paris" } } }
        ]))
        .unwrap();
        let converted = messages(&prompt);
        let seen: Vec<(&str, String)> = converted
            .iter()
            .map(|m| (m.id.as_str(), m.text()))
            .collect();
        assert_eq!(
            seen,
            [
                ("mcp-prompt-1", "Plan the trip.".to_owned()),
                ("mcp-prompt-2", "Where to?".to_owned()),
                ("mcp-prompt-3", "Paris".to_owned())
            ]
        );
        assert_eq!(converted[1].role, agentloop_types::Role::Assistant);
    }
}
