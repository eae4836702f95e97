//! Benchmark: SSE parsing plus assembly of the largest recordings of each
//! API, next to the time to merely read the same bytes (the floor). Prints
//! markdown table rows; `cargo xtask bench` runs it in release mode.

use std::hint::black_box;
use std::time::{Duration, Instant};

use agentloop_providers::{replay_sse, sse_from_json_lines};
use agentloop_types::ApiKind;

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
];

/// Runs `work` repeatedly for at least `budget`; returns seconds per run.
fn time_per_run(budget: Duration, mut work: impl FnMut()) -> f64 {
    let start = Instant::now();
    let mut runs = 0u64;
    while start.elapsed() < budget || runs < 10 {
        work();
        runs += 1;
    }
    start.elapsed().as_secs_f64() / runs as f64
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for (api, name) in RECORDINGS {
        let recording = std::fs::read_to_string(dir.join(name))?;
        let body = sse_from_json_lines(*api, &recording).into_bytes();
        let events = body.windows(6).filter(|w| w == b"data: ").count() as f64;
        let megabytes = body.len() as f64 / 1e6;

        let outcome = replay_sse(*api, &body);
        if let Some(error) = outcome.error {
            return Err(format!("{name} did not replay cleanly: {error}").into());
        }
        let parse = time_per_run(Duration::from_millis(700), || {
            black_box(replay_sse(*api, black_box(&body)));
        });
        let floor = time_per_run(Duration::from_millis(300), || {
            let sum = black_box(&body)
                .iter()
                .fold(0u64, |acc, b| acc.wrapping_add(u64::from(*b)));
            black_box(sum);
        });
        let label = format!(
            "providers: SSE parse + assembly, {} ({name}, {:.0} KB)",
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
    }
    Ok(())
}
