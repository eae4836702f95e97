//! Benchmark: stream assembly cost per delta as one block grows. Feeds 10,
//! 1,000 and 100,000 tool-argument fragments (and text fragments) into a
//! single block and prints the time per delta; flat figures mean assembly is
//! O(1) amortised per delta. Prints markdown table rows; `cargo xtask bench`
//! runs it in release mode.

use std::hint::black_box;
use std::time::Instant;

use agentloop_types::{BlockStart, StreamAssembler, StreamDelta};

const SIZES: &[usize] = &[10, 1_000, 100_000];
/// Deltas applied per size across repeats, so small sizes are timed over
/// enough work to be measurable.
const DELTAS_PER_SIZE: usize = 2_000_000;
const FRAGMENT: &str = "abcdefghijklmnop";

fn tool_deltas(count: usize) -> Vec<StreamDelta> {
    let mut deltas = vec![
        StreamDelta::BlockStart {
            index: 0,
            block: BlockStart::ToolUse {
                id: "call".into(),
                name: "fs".into(),
            },
        },
        StreamDelta::ToolInput {
            index: 0,
            partial_json: "{\"content\": \"".into(),
        },
    ];
    deltas.extend((0..count).map(|_| StreamDelta::ToolInput {
        index: 0,
        partial_json: FRAGMENT.into(),
    }));
    deltas.push(StreamDelta::ToolInput {
        index: 0,
        partial_json: "\"}".into(),
    });
    deltas.push(StreamDelta::BlockStop { index: 0 });
    deltas
}

fn text_deltas(count: usize) -> Vec<StreamDelta> {
    let mut deltas = vec![StreamDelta::BlockStart {
        index: 0,
        block: BlockStart::Text,
    }];
    deltas.extend((0..count).map(|_| StreamDelta::Text {
        index: 0,
        text: FRAGMENT.into(),
    }));
    deltas.push(StreamDelta::BlockStop { index: 0 });
    deltas
}

/// Nanoseconds per delta of assembling `deltas` from scratch, repeated.
fn nanos_per_delta(deltas: &[StreamDelta]) -> Result<f64, Box<dyn std::error::Error>> {
    let repeats = (DELTAS_PER_SIZE / deltas.len()).max(1);
    let start = Instant::now();
    for _ in 0..repeats {
        let mut assembler = StreamAssembler::new();
        for delta in deltas {
            assembler.apply(delta)?;
        }
        black_box(assembler.finish());
    }
    Ok(start.elapsed().as_nanos() as f64 / (repeats * deltas.len()) as f64)
}

type Build = fn(usize) -> Vec<StreamDelta>;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let kinds: [(&str, Build); 2] = [("tool-argument", tool_deltas), ("text", text_deltas)];
    for (label, build) in kinds {
        for &count in SIZES {
            let nanos = nanos_per_delta(&build(count))?;
            println!(
                "| types: stream assembly, {count} {label} deltas in one block | time per delta | {nanos:.1} ns |"
            );
        }
    }
    Ok(())
}
