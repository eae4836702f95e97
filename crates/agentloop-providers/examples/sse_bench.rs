//! Benchmark: SSE parsing, decoding and assembly of the largest recordings
//! of each API, against two references measured in the same run: the time
//! to merely read the same bytes (the floor), and the time serde_json
//! alone takes to deserialise the same `data:` payloads into small borrowed
//! structs holding the fields the decoder reads (the baseline; the ratio
//! baseline time / our time is 1.0 when we are as fast). "Ours" parses,
//! decodes and assembles each chunk and then drops it (`assemble_sse`):
//! like a live turn, it keeps no list of every chunk. `replay_sse`, which
//! keeps one, is timed beside it. Also counts heap allocations per event.
//! Prints markdown table rows; `cargo xtask bench` runs it in release
//! mode. With `AGENTLOOP_SSE_PROFILE=<api>` it times nothing and runs ours
//! and the baseline 100 times on that API's recording, for an
//! instruction-count profiler.

use std::alloc::System;
use std::hint::black_box;
use std::time::{Duration, Instant};

use agentloop_providers::{assemble_sse, replay_sse, sse_from_json_lines};
use agentloop_types::ApiKind;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[path = "support/sse_baseline.rs"]
mod baseline;

/// The system allocator, counting: allocations per event are reported
/// without an external profiler. `stats_alloc` holds the (unsafe)
/// `GlobalAlloc` wrapper, which this workspace forbids writing itself.
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const RECORDINGS: &[(ApiKind, &str)] = &[
    (
        ApiKind::AnthropicMessages,
        "anthropic-compaction.1.chunks.txt",
    ),
    (ApiKind::OpenaiChat, "openai-text.chunks.txt"),
    (
        ApiKind::OpenaiResponses,
        "openai-web-search-tool.1.chunks.txt",
    ),
    (
        ApiKind::Gemini,
        "google-vertex-stream-tool-call-arguments-nested.1.chunks.txt",
    ),
];

/// Seconds per run of one batch of about 20 ms of `work`.
fn batch(mut work: impl FnMut()) -> f64 {
    let started = Instant::now();
    let mut runs = 0u64;
    while started.elapsed() < Duration::from_millis(20) || runs < 3 {
        work();
        runs += 1;
    }
    started.elapsed().as_secs_f64() / runs as f64
}

/// Times each of `works` in turn, in batches of about 20 ms, for at least
/// `budget`; returns seconds per run of each one's fastest batch. The
/// fastest batch is the one least disturbed by other processes on a shared
/// machine, and taking turns puts all through the same states of the
/// machine, so the figures compare fairly.
fn time_side_by_side<const N: usize>(
    budget: Duration,
    mut works: [&mut dyn FnMut(); N],
) -> [f64; N] {
    let start = Instant::now();
    let mut best = [f64::INFINITY; N];
    while start.elapsed() < budget || best[0].is_infinite() {
        for (work, best) in works.iter_mut().zip(&mut best) {
            *best = best.min(batch(work));
        }
    }
    best
}

/// Heap allocations made by one call of `work`.
fn allocations(work: impl FnOnce()) -> usize {
    let region = Region::new(GLOBAL);
    work();
    let stats = region.change();
    stats.allocations + stats.reallocations
}

/// The `data:` payloads of a body, split outside any timing.
fn payloads(body: &str) -> Vec<&str> {
    body.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter(|data| *data != "[DONE]")
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for (api, name) in RECORDINGS {
        let recording = std::fs::read_to_string(dir.join(name))?;
        let text = sse_from_json_lines(*api, &recording);
        let data = payloads(&text);
        let body = text.as_bytes();
        let events = body.windows(6).filter(|w| w == b"data: ").count() as f64;
        let megabytes = body.len() as f64 / 1e6;

        let outcome = replay_sse(*api, body);
        if let Some(error) = outcome.error {
            return Err(format!("{name} did not replay cleanly: {error}").into());
        }
        if assemble_sse(*api, body).content != outcome.content {
            return Err(format!("{name}: assembling alone gave other content").into());
        }
        baseline::parse(*api, &data)?;
        // `AGENTLOOP_SSE_PROFILE=<api>`: a fixed number of runs of ours and
        // of the baseline for that API, untimed, for an instruction-count
        // profiler (`valgrind --tool=callgrind`), which time budgets skew.
        if let Ok(only) = std::env::var("AGENTLOOP_SSE_PROFILE") {
            if only == api.as_str() {
                for _ in 0..100 {
                    black_box(assemble_sse(*api, black_box(body)));
                    black_box(baseline::parse(*api, black_box(&data)).ok());
                }
            }
            continue;
        }
        let [parse, serde, kept] = time_side_by_side(
            Duration::from_millis(2400),
            [
                &mut || {
                    black_box(assemble_sse(*api, black_box(body)));
                },
                &mut || {
                    black_box(baseline::parse(*api, black_box(&data)).ok());
                },
                &mut || {
                    black_box(replay_sse(*api, black_box(body)));
                },
            ],
        );
        let floor = (0..5)
            .map(|_| {
                batch(|| {
                    let sum = black_box(body)
                        .iter()
                        .fold(0u64, |acc, b| acc.wrapping_add(u64::from(*b)));
                    black_box(sum);
                })
            })
            .fold(f64::INFINITY, f64::min);
        let ours = allocations(|| {
            black_box(assemble_sse(*api, black_box(body)));
        });
        let theirs = allocations(|| {
            black_box(baseline::parse(*api, black_box(&data)).ok());
        });
        let label = format!(
            "providers: SSE parse + decode + assembly, {} ({name}, {:.0} KB, {events} events)",
            api.as_str(),
            megabytes * 1e3
        );
        println!(
            "| {label} | throughput | {:.1} MB/s, {:.0} events/s |",
            megabytes / parse,
            events / parse
        );
        println!(
            "| {label} | floor (read the bytes) | {:.0} MB/s |",
            megabytes / floor
        );
        println!(
            "| {label} | parse time / floor time | {:.0}× |",
            parse / floor
        );
        println!(
            "| {label} | serde_json into borrowed structs alone | {:.1} MB/s |",
            megabytes / serde
        );
        println!(
            "| {label} | serde_json time / our time (target ≥ 0.7) | {:.2} |",
            serde / parse
        );
        println!(
            "| {label} | the same, keeping every chunk as `replay_sse` does | {:.2} |",
            serde / kept
        );
        println!(
            "| {label} | allocations per event (serde_json alone) | {:.1} ({:.1}) |",
            ours as f64 / events,
            theirs as f64 / events
        );
    }
    Ok(())
}
