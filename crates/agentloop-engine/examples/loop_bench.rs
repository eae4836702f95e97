//! Benchmark: a 1,000-step tool-calling run against the scripted provider
//! with no delays, with no tracing subscriber and with a JSON one. Prints
//! one markdown table row per figure; `cargo xtask bench` runs it in
//! release mode and collects the rows.

use std::sync::Arc;
use std::time::Instant;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::{RunDeps, run};
use agentloop_types::{
    LoopOptions, LoopStatus, Message, Tool, ToolContext, ToolResult, ToolStream, single_result,
};
use futures::StreamExt;
use serde_json::{Value, json};

const STEPS: usize = 1_000;

struct Echo;

impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Echoes its text."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}})
    }
    fn execute(self: Arc<Self>, input: Value, _: ToolContext) -> ToolStream {
        let text = input["text"].as_str().unwrap_or_default().to_owned();
        single_result(async move { ToolResult::ok(text) })
    }
}

fn script() -> Vec<ScriptedTurn> {
    let mut turns: Vec<ScriptedTurn> = (0..STEPS)
        .map(|i| {
            ScriptedTurn::new()
                .text_chunks(&["Calling ", "the ", "tool."])
                .tool_call(
                    &format!("t{i}"),
                    "echo",
                    json!({"text": format!("step {i}")}),
                )
                .usage(100, 20)
        })
        .collect();
    turns.push(ScriptedTurn::new().text("Finished.").usage(100, 5));
    turns
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Rounds of each variant; the medians are reported.
const ROUNDS: usize = 5;

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// One run of the loop: its wall time in seconds and its event count.
fn run_once(runtime: &tokio::runtime::Runtime) -> Result<(f64, u64), Box<dyn std::error::Error>> {
    let provider = ScriptedProvider::unrecorded(script());
    let options = LoopOptions {
        max_iterations: STEPS as u32 + 1,
        ..LoopOptions::default()
    };
    let deps = RunDeps::new(provider).with_tools([Arc::new(Echo) as Arc<dyn Tool>]);
    let start = Instant::now();
    let (events, status) = runtime.block_on(async {
        let mut stream = run(options, vec![Message::user_text("u1", "go")], deps);
        let mut events = 0u64;
        let mut status = None;
        while let Some(event) = stream.next().await {
            events += 1;
            if let Some(result) = event.root_result() {
                status = Some(result.status.name());
            }
        }
        (events, status)
    });
    let elapsed = start.elapsed().as_secs_f64();
    if status
        != Some(
            LoopStatus::Complete {
                return_value: None,
                output: None,
            }
            .name(),
        )
    {
        return Err(format!("the benchmark run ended {status:?}").into());
    }
    Ok((elapsed, events))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    // Spans are compiled in; with no subscriber they cost a check each.
    // Alternating rounds with every span written as a JSON line (to
    // nowhere) give the subscriber's cost as a ratio measured in one run.
    let mut plain = Vec::new();
    let mut with_json = Vec::new();
    let mut events = 0;
    for _ in 0..ROUNDS {
        let (elapsed, count) = run_once(&runtime)?;
        plain.push(elapsed);
        events = count;
        let json = tracing_subscriber::fmt()
            .json()
            .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
            .with_writer(std::io::sink)
            .finish();
        let (traced, _) = tracing::subscriber::with_default(json, || run_once(&runtime))?;
        with_json.push(traced);
    }
    let elapsed = median(&mut plain);
    let traced = median(&mut with_json);
    let steps = STEPS as f64 + 1.0;
    let row = "engine: {STEPS}-step tool loop, scripted provider";
    let row = row.replace("{STEPS}", &STEPS.to_string());
    println!(
        "| {row} | wall time (median of {ROUNDS}) | {:.1} ms |",
        elapsed * 1e3
    );
    println!("| {row} | steps/s | {:.0} |", steps / elapsed);
    println!(
        "| {row} | events/s | {:.0} ({events} events) |",
        events as f64 / elapsed
    );
    println!(
        "| {row} | wall time, every span to a JSON subscriber | {:.1} ms ({:.2}× the run with no subscriber) |",
        traced * 1e3,
        traced / elapsed
    );
    if let Some(kib) = peak_rss_kib() {
        println!("| {row} | peak RSS | {:.1} MiB |", kib as f64 / 1024.0);
    }
    Ok(())
}
