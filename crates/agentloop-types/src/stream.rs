//! What a provider streams for one model turn, and the assembler that turns
//! those deltas into content blocks and render groups.
//!
//! Providers and consumers share one assembler, so what a front end shows
//! while streaming is, by construction, what the final message renders to.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::{ApiKind, ContentBlock, ToolUseBlock};
use crate::render::{
    RenderingBlockGroup, RenderingContentBlock, categorize_block, push_grouped, render_block,
};
use crate::tokens::TokenTotals;

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
        input: Option<Value>,
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
                input: input.unwrap_or_else(|| parse_tool_input(&json)),
            }),
            Self::Done(block) => block,
        }
    }
}

/// Parses streamed tool arguments: empty means no arguments (`{}`); text
/// that is not valid JSON is kept as a JSON string so nothing is lost and the
/// engine can answer the call with an error.
pub fn parse_tool_input(json: &str) -> Value {
    if json.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(json).unwrap_or_else(|_| Value::String(json.to_owned()))
}

struct Slot {
    block: PartialBlock,
    group: usize,
    position: usize,
}

/// Applies [`StreamDelta`]s, keeping both the content blocks and their
/// render groups current in O(1) amortised per delta: blocks are found by
/// index through a map, and text and argument fragments are appended, never
/// copied again.
#[derive(Default)]
pub struct StreamAssembler {
    slots: Vec<Slot>,
    /// Provider block index → position in `slots`. A handful of blocks
    /// per turn and a lookup per delta: ordered, so no hashing.
    by_index: BTreeMap<u32, usize>,
    groups: Vec<RenderingBlockGroup>,
}

impl StreamAssembler {
    /// An empty assembler.
    pub fn new() -> Self {
        Self::default()
    }

    /// The render groups of everything applied so far.
    pub fn groups(&self) -> &[RenderingBlockGroup] {
        &self.groups
    }

    /// Whether no block has been opened.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Applies one delta.
    pub fn apply(&mut self, delta: &StreamDelta) -> Result<(), AssemblyError> {
        match delta {
            StreamDelta::BlockStart { index, block } => self.open(*index, block),
            StreamDelta::Text { index, text } => {
                let slot = self.slot(*index)?;
                let PartialBlock::Text { text: acc, .. } = &mut slot.block else {
                    return Err(wrong(*index, "text"));
                };
                acc.push_str(text);
                let (group, position) = (slot.group, slot.position);
                if let Some(RenderingContentBlock::Text { text: shown }) =
                    self.render_slot(group, position)
                {
                    shown.push_str(text);
                }
                Ok(())
            }
            StreamDelta::Thinking { index, thinking } => {
                let slot = self.slot(*index)?;
                let PartialBlock::Thinking { thinking: acc, .. } = &mut slot.block else {
                    return Err(wrong(*index, "thinking"));
                };
                acc.push_str(thinking);
                let (group, position) = (slot.group, slot.position);
                if let Some(RenderingContentBlock::Thinking { thinking: shown }) =
                    self.render_slot(group, position)
                {
                    shown.push_str(thinking);
                }
                Ok(())
            }
            StreamDelta::Signature { index, signature } => {
                let slot = self.slot(*index)?;
                let PartialBlock::Thinking { signature: acc, .. } = &mut slot.block else {
                    return Err(wrong(*index, "signature"));
                };
                acc.get_or_insert_with(String::new).push_str(signature);
                Ok(())
            }
            StreamDelta::ToolInput {
                index,
                partial_json,
            } => {
                let slot = self.slot(*index)?;
                let PartialBlock::ToolUse { json, .. } = &mut slot.block else {
                    return Err(wrong(*index, "tool input"));
                };
                json.push_str(partial_json);
                let (group, position) = (slot.group, slot.position);
                // The rendering shows the raw arguments as a string until the
                // block stops; the fragment is appended to it in place.
                if let Some(RenderingContentBlock::ToolUse {
                    input: Value::String(shown),
                    ..
                }) = self.render_slot(group, position)
                {
                    shown.push_str(partial_json);
                }
                Ok(())
            }
            StreamDelta::Citation { index, citation } => {
                let slot = self.slot(*index)?;
                let PartialBlock::Text { citations, .. } = &mut slot.block else {
                    return Err(wrong(*index, "citation"));
                };
                citations.push(citation.clone());
                Ok(())
            }
            StreamDelta::BlockStop { index } => {
                let slot = self.slot(*index)?;
                if let PartialBlock::ToolUse { json, input, .. } = &mut slot.block {
                    let parsed = parse_tool_input(json);
                    *input = Some(parsed.clone());
                    let (group, position) = (slot.group, slot.position);
                    if let Some(RenderingContentBlock::ToolUse { input: shown, .. }) =
                        self.render_slot(group, position)
                    {
                        *shown = parsed;
                    }
                }
                Ok(())
            }
        }
    }

    /// The finished content blocks, in the order they were opened. Blocks
    /// never stopped (a cut stream) are finished as they are.
    pub fn finish(self) -> Vec<ContentBlock> {
        self.slots.into_iter().map(|s| s.block.finish()).collect()
    }

    /// The content assembled so far, without consuming the assembler.
    pub fn snapshot(&self) -> Vec<ContentBlock> {
        self.slots
            .iter()
            .map(|s| s.block.clone().finish())
            .collect()
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
        let rendered = match &block {
            PartialBlock::ToolUse { id, name, .. } => RenderingContentBlock::ToolUse {
                id: id.clone(),
                name: name.clone(),
                input: Value::String(String::new()),
            },
            other => render_block(&other.clone().finish(), |_| None),
        };
        let category = categorize_block(&rendered);
        push_grouped(&mut self.groups, rendered);
        let group = self.groups.len() - 1;
        let position = self.groups[group].blocks.len() - 1;
        debug_assert_eq!(self.groups[group].category, category);
        self.by_index.insert(index, self.slots.len());
        self.slots.push(Slot {
            block,
            group,
            position,
        });
        Ok(())
    }

    fn slot(&mut self, index: u32) -> Result<&mut Slot, AssemblyError> {
        self.by_index
            .get(&index)
            .and_then(|&at| self.slots.get_mut(at))
            .ok_or(AssemblyError::UnknownBlock { index })
    }

    fn render_slot(&mut self, group: usize, position: usize) -> Option<&mut RenderingContentBlock> {
        self.groups.get_mut(group)?.blocks.get_mut(position)
    }
}

fn wrong(index: u32, delta: &'static str) -> AssemblyError {
    AssemblyError::WrongBlockKind {
        index,
        delta: delta.to_owned(),
    }
}
