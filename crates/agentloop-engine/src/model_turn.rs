//! One model turn: request, stream deltas out as events, assemble the
//! message, report the outcome to the machine.

use std::panic::AssertUnwindSafe;

use agentloop_types::{
    CancellationToken, EventKind, LoopError, ModelChunk, ModelProvider, ModelRequest,
    ProviderError, ProviderErrorKind, StreamAssembler,
};
use futures::StreamExt;

use crate::cancel::or_cancelled;
use crate::machine::Input;
use crate::run_stream::Emitter;

/// Streams one turn from `provider`, emitting `streaming_*` events.
pub(crate) async fn model_turn(
    provider: &dyn ModelProvider,
    request: ModelRequest,
    iteration: u32,
    cancel: &CancellationToken,
    emitter: &mut Emitter,
) -> Input {
    emitter.emit(EventKind::StreamingStart { iteration }).await;
    let mut stream = AssertUnwindSafe(provider.stream(request)).catch_unwind();
    let mut assembler = StreamAssembler::new();
    let mut first_chunk = true;
    loop {
        let Some(next) = or_cancelled(cancel, stream.next()).await else {
            emitter
                .emit(EventKind::StreamingEnd { stop_reason: None })
                .await;
            return Input::Cancelled {
                partial_turn: Some(assembler.finish()),
                finished_tools: Vec::new(),
                child_tokens: Default::default(),
            };
        };
        let failure = match next {
            Some(Ok(Ok(ModelChunk::Delta(delta)))) => {
                if first_chunk {
                    first_chunk = false;
                    emitter.emit(EventKind::FirstChunk).await;
                }
                match assembler.apply(&delta) {
                    Ok(()) => {
                        emitter.emit(EventKind::StreamingChunk { delta }).await;
                        continue;
                    }
                    Err(error) => LoopError::Assembly { error },
                }
            }
            Some(Ok(Ok(ModelChunk::Finish { stop_reason, usage }))) => {
                emitter
                    .emit(EventKind::StreamingEnd {
                        stop_reason: Some(stop_reason.clone()),
                    })
                    .await;
                return Input::ModelTurn {
                    content: assembler.finish(),
                    stop_reason,
                    usage,
                };
            }
            Some(Ok(Err(error))) => LoopError::Provider { error },
            Some(Err(panic)) => LoopError::Provider {
                error: ProviderError::new(
                    ProviderErrorKind::Connection,
                    format!("the provider panicked: {}", crate::panic_message(&panic)),
                ),
            },
            None => LoopError::IncompleteStream,
        };
        emitter
            .emit(EventKind::StreamingEnd { stop_reason: None })
            .await;
        return Input::ModelFailed { error: failure };
    }
}
