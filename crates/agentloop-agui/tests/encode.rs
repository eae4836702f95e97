//! Real runs of the engine (a scripted model) encoded as AG-UI: the
//! sequences are snapshots, and `tests/agui_client.rs` has the reference
//! AG-UI client verify each of them.

mod runs;

use agentloop_agui::Encoder;
use agentloop_types::{EventKind, LoopEvent, StreamDelta, StreamingChunkEvent};
use runs::{Case, cases, encode};
use serde_json::Value;

/// `events` as JSON with the engine's random run ids (inside message ids)
/// replaced, so snapshots compare.
fn stable(events: &[agentloop_agui::AgUiEvent]) -> Value {
    let text = serde_json::to_string(events).unwrap();
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find("run-") {
        out.push_str(&rest[..at]);
        let id = &rest[at + 4..];
        let hex = id.bytes().take_while(u8::is_ascii_hexdigit).count();
        if hex == 16 {
            out.push_str("run-[id]");
            rest = &id[16..];
        } else {
            out.push_str("run-");
            rest = id;
        }
    }
    out.push_str(rest);
    let mut value = serde_json::from_str(&out).unwrap();
    timeless(&mut value);
    value
}

/// `value` with each call's duration (the run's clock) replaced.
fn timeless(value: &mut Value) {
    match value {
        Value::Object(fields) => {
            for (key, field) in fields.iter_mut() {
                if key == "duration_ms" {
                    *field = Value::String("[ms]".into());
                } else {
                    timeless(field);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(timeless),
        _ => {}
    }
}

#[tokio::test]
async fn each_run_encodes_to_its_snapshot() {
    for Case { name, events } in cases().await {
        insta::assert_json_snapshot!(name, stable(&encode(&events)));
    }
}

#[tokio::test]
async fn a_run_whose_stream_breaks_is_closed_and_reported_failed() {
    let cases = cases().await;
    let whole = &cases
        .iter()
        .find(|case| case.name == "text_answer")
        .expect("the text answer case")
        .events;
    // Up to the first text delta: a message, a step and the run are open.
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
    let events: Vec<LoopEvent> = whole[..=cut].to_vec();
    let mut encoder = Encoder::new("thread-1", "run-1");
    let mut out = encoder.start();
    for event in &events {
        out.extend(encoder.encode(event));
    }
    out.extend(encoder.end());
    insta::assert_json_snapshot!(stable(&out));
    // Nothing follows the end.
    assert!(encoder.end().is_empty());
    assert!(encoder.encode(&whole[cut + 1]).is_empty());
}
