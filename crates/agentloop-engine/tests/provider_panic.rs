//! A provider whose stream panics mid-turn ends the run with a provider
//! error saying so, instead of taking the consumer down with it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::task::Poll;

use agentloop_engine::{RunDeps, collect, run};
use agentloop_types::{
    BlockStart, LoopError, LoopOptions, LoopStatus, Message, ModelChunk, ModelProvider,
    ModelRequest, ModelStream, ProviderError, ProviderErrorKind, StreamDelta,
};
use futures::StreamExt;

/// Opens a text block, then panics when polled again.
struct Panicking;

impl ModelProvider for Panicking {
    fn stream(&self, _request: ModelRequest) -> ModelStream {
        let start = ModelChunk::Delta(StreamDelta::BlockStart {
            index: 0,
            block: BlockStart::Text,
        });
        futures::stream::iter([Ok(start)])
            .chain(futures::stream::poll_fn(
                |_| -> Poll<Option<Result<ModelChunk, ProviderError>>> { panic!("boom") },
            ))
            .boxed()
    }
}

#[tokio::test]
async fn a_panicking_provider_fails_the_turn_as_a_connection_error() {
    let result = collect(run(
        LoopOptions::default(),
        vec![Message::user_text("u1", "hi")],
        RunDeps::new(Arc::new(Panicking)),
    ))
    .await;
    let LoopStatus::Error {
        error: LoopError::Provider { error },
    } = result.status
    else {
        panic!("not a provider error: {:?}", result.status);
    };
    assert_eq!(error.kind, ProviderErrorKind::Connection);
    assert_eq!(error.message, "the provider panicked: boom");
}
