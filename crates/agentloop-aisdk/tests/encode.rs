//! Real runs of the engine (a scripted model) encoded as UI message
//! stream chunks: the sequences are snapshots; a broken stream, a past
//! suspension and a refused call are checked by what they send.

mod runs;

use agentloop_aisdk::{Encoder, UiChunk};
use agentloop_engine::scripted::ScriptedTurn;
use agentloop_types::{EventKind, LoopEvent, LoopOptions, StreamDelta, StreamingChunkEvent};
use runs::{asking, cases, events, tool_turns};
use serde_json::{Value, json};

/// `events` as one message, each chunk as it goes on the wire, minus the
/// transient data parts (whole events, with their run ids).
fn encode(mut encoder: Encoder, events: &[LoopEvent]) -> Vec<Value> {
    let mut out = encoder.start();
    for event in events {
        out.extend(encoder.encode(event));
    }
    out.extend(encoder.end());
    out.iter()
        .filter(|chunk| !matches!(chunk, UiChunk::Data { .. }))
        .map(UiChunk::to_json)
        .collect()
}

fn types(chunks: &[Value]) -> Vec<&str> {
    chunks
        .iter()
        .map(|chunk| chunk["type"].as_str().unwrap_or("?"))
        .collect()
}

#[tokio::test]
async fn each_run_encodes_to_its_snapshot() {
    for (name, events) in cases().await {
        let encoder = Encoder::new("msg-1").with_metadata(json!({ "agentRunId": "msg-1" }));
        insta::assert_json_snapshot!(name, encode(encoder, &events));
    }
}

#[tokio::test]
async fn a_stream_that_breaks_is_closed_and_finished_with_an_error() {
    let whole = events(
        vec![ScriptedTurn::new().text_chunks(&["Hello", ", Oslo."])],
        LoopOptions::default(),
    )
    .await;
    let cut = whole
        .iter()
        .position(|event| {
            matches!(
                &event.kind,
                EventKind::StreamingChunk(StreamingChunkEvent {
                    delta: StreamDelta::Text { .. }
                })
            )
        })
        .expect("a text delta");
    let chunks = encode(Encoder::new("msg-1"), &whole[..=cut]);
    assert_eq!(
        types(&chunks),
        [
            "start",
            "start-step",
            "text-start",
            "text-delta",
            "text-end",
            "finish-step",
            "error",
            "finish"
        ]
    );
    assert_eq!(chunks[7]["finishReason"], "error");
    // Nothing follows the end.
    let mut encoder = Encoder::new("msg-1");
    for event in &whole[..=cut] {
        encoder.encode(event);
    }
    assert!(!encoder.end().is_empty());
    assert!(encoder.ended());
    assert!(encoder.end().is_empty());
    assert!(encoder.encode(&whole[cut + 1]).is_empty());
}

#[tokio::test]
async fn a_suspension_the_run_was_resumed_from_does_not_finish_a_replay() {
    let events = events(tool_turns(), asking()).await;
    let suspended = events.last().expect("the suspension").seq;
    let chunks = encode(
        Encoder::new("msg-1").replaying_through(Some(suspended)),
        &events,
    );
    let kinds = types(&chunks);
    assert!(kinds.contains(&"tool-approval-request"), "{kinds:?}");
    // The replay has not finished at the suspension: what ends it here is
    // the events running out.
    assert_eq!(kinds[kinds.len() - 2..], ["error", "finish"], "{kinds:?}");
    assert!(
        !chunks
            .iter()
            .any(|chunk| chunk["finishReason"] == "tool-calls"),
        "{chunks:?}"
    );
    // Live, the same suspension finishes the message for the person.
    let live = encode(Encoder::new("msg-1"), &events);
    assert_eq!(live.last().unwrap()["finishReason"], "tool-calls");
}

#[tokio::test]
async fn a_refused_call_is_sent_denied() {
    let events = events(tool_turns(), LoopOptions::default()).await;
    let chunks = encode(
        Encoder::new("msg-1").with_denied(["call-1".to_owned()]),
        &events,
    );
    let denied: Vec<&Value> = chunks
        .iter()
        .filter(|chunk| chunk["type"] == "tool-output-denied")
        .collect();
    assert_eq!(
        denied,
        [&json!({ "type": "tool-output-denied", "toolCallId": "call-1" })]
    );
    assert!(!types(&chunks).contains(&"tool-output-available"));
}
