//! What a provider streams for one model turn, and the assembler that turns
//! those deltas into content blocks (and, on demand, render groups).
//!
//! Providers and consumers share one assembler, so what a front end shows
//! while streaming is, by construction, what the final message renders to.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::{ApiKind, ContentBlock, ToolUseBlock};
use crate::render::{RenderingBlockGroup, RenderingContentBlock, push_grouped, render_block};
use crate::tokens::TokenTotals;
use crate::tool_input::ToolInput;

pub use crate::stop::{RefusalDetails, StopReason};

/// The opening of a content block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BlockStart {
    /// Text follows as [`StreamDelta::Text`].
    Text,
    /// Reasoning follows as [`StreamDelta::Thinking`] and [`StreamDelta::Signature`].
    Thinking,
    /// An opaque reasoning block, complete.
    RedactedThinking {
        /// Opaque payload.
        data: String,
    },
    /// A tool call; arguments follow as [`StreamDelta::ToolInput`].
    ToolUse {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// A block the loop does not interpret, complete and verbatim.
    Provider {
        /// The API that produced it.
        api: ApiKind,
        /// The block.
        block: Value,
    },
}

/// One incremental change to the assistant message being streamed.
/// `index` names the block; it is the provider's block index and need not be
/// dense, only unique within the turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StreamDelta {
    /// A block opens.
    BlockStart {
        /// Block index.
        index: u32,
        /// What kind of block.
        block: BlockStart,
    },
    /// Text appended to a text block.
    Text {
        /// Block index.
        index: u32,
        /// The new text.
        text: String,
    },
    /// Reasoning appended to a thinking block.
    Thinking {
        /// Block index.
        index: u32,
        /// The new reasoning text.
        thinking: String,
    },
    /// Signature appended to a thinking block.
    Signature {
        /// Block index.
        index: u32,
        /// The signature fragment.
        signature: String,
    },
    /// A fragment of a tool call's JSON arguments (the first may be empty).
    ToolInput {
        /// Block index.
        index: u32,
        /// The fragment.
        partial_json: String,
    },
    /// A citation attached to a text block.
    Citation {
        /// Block index.
        index: u32,
        /// The citation, verbatim.
        citation: Value,
    },
    /// A block is complete.
    BlockStop {
        /// Block index.
        index: u32,
    },
}

/// One item of a provider's stream for a model turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ModelChunk {
    /// A content change.
    Delta(StreamDelta),
    /// The last item of every successful turn.
    Finish {
        /// Why the turn ended.
        stop_reason: StopReason,
        /// Tokens and cost of the turn.
        usage: TokenTotals,
    },
}

/// A delta that does not fit the blocks seen so far: a protocol violation by
/// the provider adapter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum AssemblyError {
    /// A delta named a block that was never opened.
    #[error("delta for block {index}, which was never opened")]
    UnknownBlock {
        /// The index.
        index: u32,
    },
    /// A block index was opened twice.
    #[error("block {index} opened twice")]
    DuplicateBlock {
        /// The index.
        index: u32,
    },
    /// A delta of one kind was sent to a block of another kind.
    #[error("{delta} delta sent to block {index}, which is not of that kind")]
    WrongBlockKind {
        /// The index.
        index: u32,
        /// The delta kind.
        delta: String,
    },
}

#[derive(Debug, Clone)]
enum PartialBlock {
    Text {
        text: String,
        citations: Vec<Value>,
    },
    Thinking {
        thinking: String,
        signature: Option<String>,
    },
    ToolUse {
        id: String,
        name: String,
        json: String,
        input: Option<ToolInput>,
    },
    Done(ContentBlock),
}

impl PartialBlock {
    fn finish(self) -> ContentBlock {
        match self {
            Self::Text { text, citations } => ContentBlock::Text { text, citations },
            Self::Thinking {
                thinking,
                signature,
            } => ContentBlock::Thinking {
                thinking,
                signature,
            },
            Self::ToolUse {
                id,
                name,
                json,
                input,
            } => ContentBlock::ToolUse(ToolUseBlock {
                id,
                name,
                input: input.unwrap_or_else(|| ToolInput::from_model_text(&json)),
            }),
            Self::Done(block) => block,
        }
    }
}

/// Parses streamed tool arguments: empty means no arguments (`{}`); text
/// that is not valid JSON is kept as a JSON string so nothing is lost and the
/// engine can answer the call with an error.
pub fn parse_tool_input(json: &str) -> Value {
    ToolInput::from_model_text(json).value()
}

/// Applies [`StreamDelta`]s to the content blocks of a turn in O(1)
/// amortised per delta: blocks are found by index through a map, and text
/// and argument fragments are appended, never copied again. The render
/// groups are computed from the blocks when asked for
/// ([`groups`](Self::groups)), so a consumer that never shows them does not
/// pay for them per delta.
#[derive(Default)]
pub struct StreamAssembler {
    blocks: Vec<PartialBlock>,
    /// Provider block index → position in `blocks`. A handful of blocks
    /// per turn and a lookup per delta: ordered, so no hashing.
    by_index: BTreeMap<u32, usize>,
}

impl StreamAssembler {
    /// An empty assembler.
    pub fn new() -> Self {
        Self::default()
    }

    /// The render groups of everything applied so far, in O(content). A
    /// tool call still streaming shows its raw arguments as a string; once
    /// its block stops, the parsed value. After the last delta they equal
    /// [`render_groups`](crate::render::render_groups) of
    /// [`finish`](Self::finish)'s content.
    pub fn groups(&self) -> Vec<RenderingBlockGroup> {
        let mut groups = Vec::new();
        for block in &self.blocks {
            let rendered = match block {
                PartialBlock::Text { text, .. } => {
                    RenderingContentBlock::Text { text: text.clone() }
                }
                PartialBlock::Thinking { thinking, .. } => RenderingContentBlock::Thinking {
                    thinking: thinking.clone(),
                },
                PartialBlock::ToolUse {
                    id,
                    name,
                    json,
                    input,
                } => RenderingContentBlock::ToolUse {
                    id: id.clone(),
                    name: name.clone(),
                    input: input
                        .as_ref()
                        .map_or_else(|| Value::String(json.clone()), ToolInput::value),
                },
                PartialBlock::Done(block) => render_block(block, |_| None),
            };
            push_grouped(&mut groups, rendered);
        }
        groups
    }

    /// Whether no block has been opened.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Applies one delta.
    pub fn apply(&mut self, delta: &StreamDelta) -> Result<(), AssemblyError> {
        match delta {
            StreamDelta::BlockStart { index, block } => self.open(*index, block),
            StreamDelta::Text { index, text } => match self.block(*index)? {
                PartialBlock::Text { text: acc, .. } => {
                    acc.push_str(text);
                    Ok(())
                }
                _ => Err(wrong(*index, "text")),
            },
            StreamDelta::Thinking { index, thinking } => match self.block(*index)? {
                PartialBlock::Thinking { thinking: acc, .. } => {
                    acc.push_str(thinking);
                    Ok(())
                }
                _ => Err(wrong(*index, "thinking")),
            },
            StreamDelta::Signature { index, signature } => match self.block(*index)? {
                PartialBlock::Thinking { signature: acc, .. } => {
                    acc.get_or_insert_with(String::new).push_str(signature);
                    Ok(())
                }
                _ => Err(wrong(*index, "signature")),
            },
            StreamDelta::ToolInput {
                index,
                partial_json,
            } => match self.block(*index)? {
                PartialBlock::ToolUse { json, .. } => {
                    json.push_str(partial_json);
                    Ok(())
                }
                _ => Err(wrong(*index, "tool input")),
            },
            StreamDelta::Citation { index, citation } => match self.block(*index)? {
                PartialBlock::Text { citations, .. } => {
                    citations.push(citation.clone());
                    Ok(())
                }
                _ => Err(wrong(*index, "citation")),
            },
            StreamDelta::BlockStop { index } => {
                if let PartialBlock::ToolUse { json, input, .. } = self.block(*index)? {
                    // The text is kept once, in the input.
                    *input = Some(ToolInput::from_model_text(&std::mem::take(json)));
                }
                Ok(())
            }
        }
    }

    /// The finished content blocks, in the order they were opened. Blocks
    /// never stopped (a cut stream) are finished as they are.
    pub fn finish(self) -> Vec<ContentBlock> {
        let mut content: Vec<ContentBlock> =
            self.blocks.into_iter().map(PartialBlock::finish).collect();
        // The content is kept in the history for the rest of the run, and
        // the collect reuses the room the partial blocks had (grown by
        // pushes, and partial blocks are larger): give back what is unused.
        content.shrink_to_fit();
        content
    }

    /// The content assembled so far, without consuming the assembler.
    pub fn snapshot(&self) -> Vec<ContentBlock> {
        self.blocks.iter().map(|b| b.clone().finish()).collect()
    }

    fn open(&mut self, index: u32, start: &BlockStart) -> Result<(), AssemblyError> {
        if self.by_index.contains_key(&index) {
            return Err(AssemblyError::DuplicateBlock { index });
        }
        let block = match start {
            BlockStart::Text => PartialBlock::Text {
                text: String::new(),
                citations: Vec::new(),
            },
            BlockStart::Thinking => PartialBlock::Thinking {
                thinking: String::new(),
                signature: None,
            },
            BlockStart::RedactedThinking { data } => {
                PartialBlock::Done(ContentBlock::RedactedThinking { data: data.clone() })
            }
            BlockStart::ToolUse { id, name } => PartialBlock::ToolUse {
                id: id.clone(),
                name: name.clone(),
                json: String::new(),
                input: None,
            },
            BlockStart::Provider { api, block } => PartialBlock::Done(ContentBlock::Provider {
                api: *api,
                block: block.clone(),
            }),
        };
        self.by_index.insert(index, self.blocks.len());
        self.blocks.push(block);
        Ok(())
    }

    fn block(&mut self, index: u32) -> Result<&mut PartialBlock, AssemblyError> {
        self.by_index
            .get(&index)
            .and_then(|&at| self.blocks.get_mut(at))
            .ok_or(AssemblyError::UnknownBlock { index })
    }
}

fn wrong(index: u32, delta: &'static str) -> AssemblyError {
    AssemblyError::WrongBlockKind {
        index,
        delta: delta.to_owned(),
    }
}
