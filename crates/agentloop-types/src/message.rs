//! Messages and the content blocks they hold.
//!
//! Blocks the loop interprets (text, thinking, tool use, tool result,
//! attachments) are typed. Everything else a provider sends (server tool use,
//! web search results, MCP blocks, block types that do not exist yet) is kept
//! verbatim in [`ContentBlock::Provider`] so it goes back to that provider
//! unchanged.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::attachment::AttachmentSource;

use crate::render_blocks::RenderingBlockGroup;
use crate::tool_input::ToolInput;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions to the model. Adapters lift system messages into the
    /// provider's system prompt, in order.
    System,
    /// The person or program driving the run; tool results travel as user
    /// messages.
    User,
    /// The model.
    Assistant,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Message {
    /// Stable id; a pending tool-result message and its final form share it.
    pub id: String,
    /// Author.
    pub role: Role,
    /// Ordered content.
    pub content: Vec<ContentBlock>,
}

impl Message {
    /// A message with the given id, role and blocks.
    pub fn new(id: impl Into<String>, role: Role, content: Vec<ContentBlock>) -> Self {
        Self {
            id: id.into(),
            role,
            content,
        }
    }

    /// A user message holding one text block.
    pub fn user_text(id: impl Into<String>, text: impl Into<String>) -> Self {
        Self::new(id, Role::User, vec![ContentBlock::text(text)])
    }

    /// A system message holding one text block.
    pub fn system_text(id: impl Into<String>, text: impl Into<String>) -> Self {
        Self::new(id, Role::System, vec![ContentBlock::text(text)])
    }

    /// An assistant message holding one text block.
    pub fn assistant_text(id: impl Into<String>, text: impl Into<String>) -> Self {
        Self::new(id, Role::Assistant, vec![ContentBlock::text(text)])
    }

    /// The concatenated text blocks of this message.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The tool calls this message makes, in order.
    pub fn tool_uses(&self) -> impl Iterator<Item = &ToolUseBlock> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolUse(call) => Some(call),
            _ => None,
        })
    }

    /// The tool results this message carries, in order.
    pub fn tool_results(&self) -> impl Iterator<Item = &ToolResultBlock> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolResult(result) => Some(result),
            _ => None,
        })
    }
}

/// A model's request to run a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ToolUseBlock {
    /// Provider-assigned call id, echoed by the matching result.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments. A JSON object when the model produced valid JSON; when it
    /// did not (a stream cut mid-call), the raw text as a JSON string, so
    /// nothing is lost and the engine answers the call with an error.
    pub input: ToolInput,
}

/// The answer to one [`ToolUseBlock`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ToolResultBlock {
    /// The id of the call this answers.
    pub tool_use_id: String,
    /// What the model sees.
    pub content: String,
    /// Whether the tool failed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// What the tool showed while running (minion transcripts); for display
    /// only, never sent to a provider.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rendering_groups: Vec<RenderingBlockGroup>,
}

impl ToolResultBlock {
    /// A successful result.
    pub fn ok(tool_use_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            tool_use_id: tool_use_id.into(),
            content: content.into(),
            is_error: false,
            rendering_groups: Vec::new(),
        }
    }

    /// A failed result.
    pub fn error(tool_use_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            is_error: true,
            ..Self::ok(tool_use_id, content)
        }
    }
}

/// One block of message content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text, with the provider's citations kept verbatim.
    Text {
        /// The text.
        text: String,
        /// Citations attached by the provider (web search, documents).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        citations: Vec<Value>,
    },
    /// Model reasoning. Anthropic signs it and must get it back unchanged.
    Thinking {
        /// Reasoning text (or summary, for OpenAI).
        thinking: String,
        /// Provider signature; `None` where the provider signs nothing.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Reasoning the provider encrypted; opaque, returned unchanged.
    RedactedThinking {
        /// Opaque payload.
        data: String,
    },
    /// A request to run a client-side tool.
    ToolUse(ToolUseBlock),
    /// The answer to a tool request.
    ToolResult(ToolResultBlock),
    /// An image.
    Image {
        /// Where its bytes are.
        source: AttachmentSource,
    },
    /// A document (PDF, text).
    Document {
        /// Where its bytes are.
        source: AttachmentSource,
        /// File name shown to the model, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// A block the loop does not interpret, kept verbatim for the API that
    /// produced it (server tool use and results, MCP blocks, OpenAI reasoning
    /// items, unknown future types).
    Provider {
        /// The API that produced it; other APIs never receive it.
        api: ApiKind,
        /// The block exactly as the provider sent it.
        block: Value,
    },
}

impl ContentBlock {
    /// A text block without citations.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text {
            text: text.into(),
            citations: Vec::new(),
        }
    }
}

/// The wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum ApiKind {
    /// Anthropic Messages API.
    AnthropicMessages,
    /// OpenAI Chat Completions (and compatible servers).
    OpenaiChat,
    /// OpenAI Responses API.
    OpenaiResponses,
    /// Google Gemini `generateContent` / `streamGenerateContent`.
    Gemini,
}

impl ApiKind {
    /// The kebab-case name used on the wire and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AnthropicMessages => "anthropic-messages",
            Self::OpenaiChat => "openai-chat",
            Self::OpenaiResponses => "openai-responses",
            Self::Gemini => "gemini",
        }
    }

    /// Whether the API has a structured-output request field (a
    /// [`ResponseFormat`](crate::ResponseFormat) it enforces); Anthropic
    /// Messages has none.
    pub fn has_response_format(self) -> bool {
        match self {
            Self::AnthropicMessages => false,
            Self::OpenaiChat | Self::OpenaiResponses | Self::Gemini => true,
        }
    }
}
