//! One model turn: request, stream deltas out as events, assemble the
//! message, report the outcome to the machine. Also the quiet turn of a
//! summarising step, which emits nothing.

use agentloop_types::{StreamingChunkEvent, StreamingEndEvent, StreamingStartEvent};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use agentloop_types::{
    BlockStart, CancellationToken, ContentBlock, EventKind, LoopError, LoopOptions, Message,
    ModelChunk, ModelProvider, ModelRequest, ModelStream, ProviderError, ProviderErrorKind,
    RequestOptions, SentRequest, StreamAssembler, StreamDelta,
};
use futures::StreamExt;

use crate::cancel::or_cancelled;
use crate::machine::Input;
use crate::run_stream::Emitter;

/// One turn of `provider`: its stream, opened from the request, and what
/// the turn adds to it.
pub(crate) struct ModelTurn {
    stream: ModelStream,
    prefill: Vec<StreamDelta>,
    iteration: u32,
    agent: Option<String>,
    record: Box<SentRequest>,
}

impl ModelTurn {
    /// Opens the turn's stream. Synchronous, so that the driver's future
    /// never holds the request across an await.
    pub(crate) fn start(
        provider: &dyn ModelProvider,
        request: ModelRequest,
        iteration: u32,
        agent: Option<String>,
        record: Box<SentRequest>,
    ) -> Self {
        let prefill = prefill_deltas(request.options.prefill_response.as_deref());
        Self {
            stream: provider.stream(request),
            prefill,
            iteration,
            agent,
            record,
        }
    }

    /// Streams the turn, emitting `streaming_*` events.
    pub(crate) async fn run(self, cancel: &CancellationToken, emitter: &mut Emitter) -> Input {
        let Self {
            stream,
            prefill,
            iteration,
            agent,
            record,
        } = self;
        emitter
            .emit(EventKind::StreamingStart(StreamingStartEvent {
                iteration,
                agent,
                request: Some(record),
            }))
            .await;
        let mut stream = AssertUnwindSafe(stream).catch_unwind();
        let mut assembler = StreamAssembler::new();
        let mut first_chunk = true;
        loop {
            let Some(next) = or_cancelled(cancel, stream.next()).await else {
                emitter
                    .emit(EventKind::StreamingEnd(StreamingEndEvent {
                        stop_reason: None,
                    }))
                    .await;
                return Input::Cancelled {
                    partial_turn: Some(assembler.finish()),
                    finished_tools: Vec::new(),
                    child_tokens: Default::default(),
                };
            };
            let failure = match next {
                Some(Ok(Ok(ModelChunk::Delta(delta)))) => {
                    if std::mem::take(&mut first_chunk) {
                        first_content(&prefill, &mut assembler, emitter).await;
                    }
                    match assembler.apply(&delta) {
                        Ok(()) => {
                            emitter
                                .emit(EventKind::StreamingChunk(StreamingChunkEvent { delta }))
                                .await;
                            continue;
                        }
                        Err(error) => LoopError::Assembly { error },
                    }
                }
                Some(Ok(Ok(ModelChunk::Finish { stop_reason, usage }))) => {
                    // A turn with no content of its own still starts with the
                    // prefilled text.
                    if std::mem::take(&mut first_chunk) && !prefill.is_empty() {
                        first_content(&prefill, &mut assembler, emitter).await;
                    }
                    emitter
                        .emit(EventKind::StreamingEnd(StreamingEndEvent {
                            stop_reason: Some(stop_reason.clone()),
                        }))
                        .await;
                    return Input::ModelTurn {
                        content: assembler.finish(),
                        stop_reason,
                        usage,
                    };
                }
                Some(Ok(Err(error))) => LoopError::Provider { error },
                Some(Err(panic)) => provider_panicked(&panic),
                None => LoopError::IncompleteStream,
            };
            emitter
                .emit(EventKind::StreamingEnd(StreamingEndEvent {
                    stop_reason: None,
                }))
                .await;
            return Input::ModelFailed { error: failure };
        }
    }
}

/// A provider whose stream panicked: a connection failure of the turn.
fn provider_panicked(panic: &Box<dyn std::any::Any + Send>) -> LoopError {
    LoopError::Provider {
        error: ProviderError::new(
            ProviderErrorKind::Connection,
            format!("the provider panicked: {}", crate::panic_message(panic)),
        ),
    }
}

/// Emits `first_chunk`, then the prefilled text as its own block.
async fn first_content(
    prefill: &[StreamDelta],
    assembler: &mut StreamAssembler,
    emitter: &mut Emitter,
) {
    emitter.emit(EventKind::FirstChunk).await;
    for delta in prefill {
        // Prefill deltas are built here and always fit.
        let _ = assembler.apply(delta);
        emitter
            .emit(EventKind::StreamingChunk(StreamingChunkEvent {
                delta: delta.clone(),
            }))
            .await;
    }
}

/// Block index of the prefill text; providers number their own blocks from 0.
const PREFILL_INDEX: u32 = u32::MAX;

/// The prefilled start of the answer as a text block of its own, so the
/// committed message holds the whole answer (the provider streams only the
/// continuation).
fn prefill_deltas(prefill: Option<&str>) -> Vec<StreamDelta> {
    match prefill.filter(|p| !p.is_empty()) {
        None => Vec::new(),
        Some(text) => vec![
            StreamDelta::BlockStart {
                index: PREFILL_INDEX,
                block: BlockStart::Text,
            },
            StreamDelta::Text {
                index: PREFILL_INDEX,
                text: text.to_owned(),
            },
            StreamDelta::BlockStop {
                index: PREFILL_INDEX,
            },
        ],
    }
}

/// The request of a summarising step: the run's model and limits, with
/// nothing of the run's own that would shape the answer (system prompt,
/// prefill, stop sequences, server tools, thinking, the output schema) and
/// no tools.
pub(crate) fn summary_request(options: &LoopOptions, messages: Vec<Message>) -> ModelRequest {
    let options = RequestOptions {
        system_prompt: None,
        prefill_response: None,
        stop_sequences: Vec::new(),
        web_search_enabled: false,
        enable_reasoning: false,
        ..options.request.clone()
    };
    ModelRequest {
        options,
        response_format: None,
        messages: messages.into(),
        tools: Arc::new([]),
        attachments: None,
    }
}

/// One summarising turn from `provider`: its text and usage, with no
/// events (the core reports the compaction and the tokens).
pub(crate) async fn summary_turn(
    provider: &dyn ModelProvider,
    request: ModelRequest,
    cancel: &CancellationToken,
) -> Input {
    let mut stream = AssertUnwindSafe(provider.stream(request)).catch_unwind();
    let mut assembler = StreamAssembler::new();
    loop {
        let Some(next) = or_cancelled(cancel, stream.next()).await else {
            return Input::Cancelled {
                partial_turn: None,
                finished_tools: Vec::new(),
                child_tokens: Default::default(),
            };
        };
        let error = match next {
            Some(Ok(Ok(ModelChunk::Delta(delta)))) => match assembler.apply(&delta) {
                Ok(()) => continue,
                Err(error) => LoopError::Assembly { error },
            },
            Some(Ok(Ok(ModelChunk::Finish { usage, .. }))) => {
                let text = assembler
                    .finish()
                    .iter()
                    .filter_map(|block| match block {
                        ContentBlock::Text { text, .. } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                return Input::Summary { text, usage };
            }
            Some(Ok(Err(error))) => LoopError::Provider { error },
            Some(Err(panic)) => provider_panicked(&panic),
            None => LoopError::IncompleteStream,
        };
        return Input::SummaryFailed { error };
    }
}
