//! A scripted model provider: plays back turns written in advance and
//! records every request it receives. For tests, demos and benchmarks; the
//! CLI loads scripts from JSON (`--provider scripted:FILE`).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agentloop_types::{
    ApiKind, BlockStart, ModelChunk, ModelProvider, ModelRequest, ModelStream, ProviderError,
    ProviderErrorKind, StopReason, StreamDelta, TokenTotals,
};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One scripted action within a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ScriptStep {
    /// A text block, streamed in the given pieces.
    Text {
        /// The pieces, in order.
        chunks: Vec<String>,
    },
    /// A thinking block with an optional signature.
    Thinking {
        /// The pieces, in order.
        chunks: Vec<String>,
        /// Signature sent after the text.
        #[serde(default)]
        signature: Option<String>,
    },
    /// A tool call whose JSON arguments arrive in the given fragments.
    ToolCall {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Argument fragments; their concatenation is the arguments text.
        fragments: Vec<String>,
    },
    /// Waits before the next step.
    Delay {
        /// Milliseconds.
        ms: u64,
    },
    /// Ends the turn with an error.
    Error {
        /// The error.
        error: ProviderError,
    },
    /// Ends the stream with no finish item (a connection cut).
    Cut,
    /// Never yields again (to test cancellation).
    Hang,
}

/// One model turn: steps, then a finish with usage and a stop reason.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScriptedTurn {
    /// What the turn streams.
    pub steps: Vec<ScriptStep>,
    /// Tokens reported at the end.
    #[serde(default)]
    pub usage: TokenTotals,
    /// Stop reason; by default `tool_use` when the turn calls a tool, else
    /// `end_turn`.
    #[serde(default)]
    pub stop_reason: Option<StopReason>,
}

impl ScriptedTurn {
    /// An empty turn.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a text block streamed as one piece.
    pub fn text(self, text: &str) -> Self {
        self.text_chunks(&[text])
    }

    /// Adds a text block streamed in pieces.
    pub fn text_chunks(mut self, chunks: &[&str]) -> Self {
        self.steps.push(ScriptStep::Text {
            chunks: chunks.iter().map(|c| (*c).to_owned()).collect(),
        });
        self
    }

    /// Adds a signed thinking block.
    pub fn thinking(mut self, thinking: &str, signature: &str) -> Self {
        self.steps.push(ScriptStep::Thinking {
            chunks: vec![thinking.to_owned()],
            signature: Some(signature.to_owned()),
        });
        self
    }

    /// Adds a tool call; the arguments stream in three fragments, the first
    /// empty, as Anthropic sends them.
    pub fn tool_call(mut self, id: &str, name: &str, input: Value) -> Self {
        let json = input.to_string();
        let mid = json
            .char_indices()
            .nth(json.chars().count() / 2)
            .map_or(0, |(i, _)| i);
        self.steps.push(ScriptStep::ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            fragments: vec![
                String::new(),
                json[..mid].to_owned(),
                json[mid..].to_owned(),
            ],
        });
        self
    }

    /// Adds a tool call with raw argument fragments (possibly invalid JSON).
    pub fn tool_call_raw(mut self, id: &str, name: &str, fragments: &[&str]) -> Self {
        self.steps.push(ScriptStep::ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            fragments: fragments.iter().map(|f| (*f).to_owned()).collect(),
        });
        self
    }

    /// Adds a pause.
    pub fn delay_ms(mut self, ms: u64) -> Self {
        self.steps.push(ScriptStep::Delay { ms });
        self
    }

    /// Ends the turn with an error.
    pub fn error(mut self, error: ProviderError) -> Self {
        self.steps.push(ScriptStep::Error { error });
        self
    }

    /// Ends the stream with no finish item.
    pub fn cut(mut self) -> Self {
        self.steps.push(ScriptStep::Cut);
        self
    }

    /// Stops yielding forever.
    pub fn hang(mut self) -> Self {
        self.steps.push(ScriptStep::Hang);
        self
    }

    /// Sets the reported input and output tokens.
    pub fn usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.usage.input_tokens = input_tokens;
        self.usage.output_tokens = output_tokens;
        self
    }

    /// Sets the stop reason.
    pub fn stop(mut self, reason: StopReason) -> Self {
        self.stop_reason = Some(reason);
        self
    }

    fn items(&self) -> Vec<Item> {
        let mut items = Vec::new();
        let mut has_tool_call = false;
        for (index, step) in self.steps.iter().enumerate() {
            let index = index as u32;
            let delta = |d: StreamDelta| Item::Chunk(ModelChunk::Delta(d));
            match step {
                ScriptStep::Text { chunks } => {
                    items.push(delta(StreamDelta::BlockStart {
                        index,
                        block: BlockStart::Text,
                    }));
                    for text in chunks {
                        items.push(delta(StreamDelta::Text {
                            index,
                            text: text.clone(),
                        }));
                    }
                    items.push(delta(StreamDelta::BlockStop { index }));
                }
                ScriptStep::Thinking { chunks, signature } => {
                    items.push(delta(StreamDelta::BlockStart {
                        index,
                        block: BlockStart::Thinking,
                    }));
                    for thinking in chunks {
                        items.push(delta(StreamDelta::Thinking {
                            index,
                            thinking: thinking.clone(),
                        }));
                    }
                    if let Some(signature) = signature {
                        items.push(delta(StreamDelta::Signature {
                            index,
                            signature: signature.clone(),
                        }));
                    }
                    items.push(delta(StreamDelta::BlockStop { index }));
                }
                ScriptStep::ToolCall {
                    id,
                    name,
                    fragments,
                } => {
                    has_tool_call = true;
                    items.push(delta(StreamDelta::BlockStart {
                        index,
                        block: BlockStart::ToolUse {
                            id: id.clone(),
                            name: name.clone(),
                        },
                    }));
                    for fragment in fragments {
                        items.push(delta(StreamDelta::ToolInput {
                            index,
                            partial_json: fragment.clone(),
                        }));
                    }
                    items.push(delta(StreamDelta::BlockStop { index }));
                }
                ScriptStep::Delay { ms } => items.push(Item::Delay(*ms)),
                ScriptStep::Error { error } => {
                    items.push(Item::Error(error.clone()));
                    return items;
                }
                ScriptStep::Cut => return items,
                ScriptStep::Hang => {
                    items.push(Item::Hang);
                    return items;
                }
            }
        }
        let stop_reason = self.stop_reason.clone().unwrap_or(if has_tool_call {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        });
        items.push(Item::Chunk(ModelChunk::Finish {
            stop_reason,
            usage: self.usage,
        }));
        items
    }
}

enum Item {
    Chunk(ModelChunk),
    Error(ProviderError),
    Delay(u64),
    Hang,
}

/// Plays back [`ScriptedTurn`]s in order, one per request.
#[derive(Default)]
pub struct ScriptedProvider {
    turns: Mutex<VecDeque<ScriptedTurn>>,
    requests: Mutex<Vec<ModelRequest>>,
    record: bool,
    api: Option<ApiKind>,
}

impl ScriptedProvider {
    /// A provider that plays `turns`.
    pub fn new(turns: impl IntoIterator<Item = ScriptedTurn>) -> Arc<Self> {
        Arc::new(Self {
            turns: Mutex::new(turns.into_iter().collect()),
            requests: Mutex::new(Vec::new()),
            record: true,
            api: None,
        })
    }

    /// A provider that plays `turns` and says it speaks `api`
    /// ([`ModelProvider::api`]), so a run with an output schema asks for
    /// it as a run over that API would. [`new`](Self::new) names no API:
    /// such a run asks through the `final_output` tool.
    pub fn speaking(api: ApiKind, turns: impl IntoIterator<Item = ScriptedTurn>) -> Arc<Self> {
        Arc::new(Self {
            turns: Mutex::new(turns.into_iter().collect()),
            requests: Mutex::new(Vec::new()),
            record: true,
            api: Some(api),
        })
    }

    /// A provider that plays `turns` without recording requests (each
    /// request holds the whole history, so recording long runs costs memory
    /// quadratic in their length).
    pub fn unrecorded(turns: impl IntoIterator<Item = ScriptedTurn>) -> Arc<Self> {
        Arc::new(Self {
            turns: Mutex::new(turns.into_iter().collect()),
            requests: Mutex::new(Vec::new()),
            record: false,
            api: None,
        })
    }

    /// A provider that plays the turns of a JSON array of [`ScriptedTurn`]s.
    pub fn from_json(json: &str) -> Result<Arc<Self>, serde_json::Error> {
        let turns: Vec<ScriptedTurn> = serde_json::from_str(json)?;
        Ok(Self::new(turns))
    }

    /// Every request received so far (none when [`unrecorded`](Self::unrecorded)).
    pub fn requests(&self) -> Vec<ModelRequest> {
        lock(&self.requests).clone()
    }

    /// Turns not yet played.
    pub fn remaining(&self) -> usize {
        lock(&self.turns).len()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Poisoning means a test thread panicked mid-push; the data is intact.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl ModelProvider for ScriptedProvider {
    fn api(&self) -> Option<ApiKind> {
        self.api
    }

    fn stream(&self, request: ModelRequest) -> ModelStream {
        if self.record {
            lock(&self.requests).push(request);
        }
        let Some(turn) = lock(&self.turns).pop_front() else {
            let error = ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                "the scripted provider has no turns left",
            );
            return Box::pin(futures::stream::once(async move { Err(error) }));
        };
        let items = turn.items();
        Box::pin(
            futures::stream::iter(items)
                .then(|item| async move {
                    match item {
                        Item::Chunk(chunk) => Some(Ok(chunk)),
                        Item::Error(error) => Some(Err(error)),
                        Item::Delay(ms) => {
                            tokio::time::sleep(Duration::from_millis(ms)).await;
                            None
                        }
                        Item::Hang => futures::future::pending().await,
                    }
                })
                .filter_map(futures::future::ready),
        )
    }
}
