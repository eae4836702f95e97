//! Benchmark of the tools: JavaScript call latency with a fresh context per
//! call and with one kept context, and fs tool operations per second on a
//! `DirJail` in a temporary folder. Prints one markdown table row per
//! figure; `cargo xtask bench` runs it in release mode and collects the rows.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentloop_tools::js::KEEP_STATE;
use agentloop_tools::vfs::DirJail;
use agentloop_tools::{FsTool, JsTool};
use agentloop_types::{CancellationToken, RunPath, ToolContext};
use serde_json::{Map, Value, json};

const JS_CALLS: usize = 500;
const FS_FILES: usize = 500;

fn context(keep_state: bool) -> ToolContext {
    let mut options = Map::new();
    options.insert(KEEP_STATE.into(), Value::Bool(keep_state));
    ToolContext {
        run_id: "bench".into(),
        project_id: String::new(),
        chat_id: Some("bench-chat".into()),
        tool_use_id: "call".into(),
        path: RunPath::root(),
        options,
        cancel: CancellationToken::new(),
        resume: None,
        budget: None,
    }
}

/// Mean, p50 and p99 of the samples, in microseconds.
fn summary(mut samples: Vec<Duration>) -> (f64, f64, f64) {
    samples.sort();
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    let mean = samples.iter().copied().map(micros).sum::<f64>() / samples.len().max(1) as f64;
    let at = |q: f64| {
        let index = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples.get(index).copied().map_or(0.0, micros)
    };
    (mean, at(0.50), at(0.99))
}

async fn js_latency(keep_state: bool) -> Result<(f64, f64, f64), String> {
    let tool = JsTool::without_library();
    let ctx = context(keep_state);
    let mut samples = Vec::with_capacity(JS_CALLS);
    for i in 0..JS_CALLS {
        let code = format!("const x{i} = {i} * 2; x{i} + 1");
        let start = Instant::now();
        let result = tool.run(json!({ "code": code }), &ctx).await;
        samples.push(start.elapsed());
        if result.is_error {
            return Err(format!("js call {i} failed: {}", result.content));
        }
    }
    Ok(summary(samples))
}

async fn fs_rate(tool: &FsTool, inputs: Vec<Value>) -> Result<f64, String> {
    let options = Map::new();
    let count = inputs.len();
    let start = Instant::now();
    for input in inputs {
        let result = tool.run(input, &options).await;
        if result.is_error {
            return Err(format!("fs call failed: {}", result.content));
        }
    }
    Ok(count as f64 / start.elapsed().as_secs_f64())
}

async fn bench() -> Result<(), Box<dyn std::error::Error>> {
    for (label, keep) in [("fresh context", false), ("kept context", true)] {
        let (mean, p50, p99) = js_latency(keep).await?;
        println!("| tools: js call, {label} ({JS_CALLS} calls) | mean | {mean:.0} µs |");
        println!("| tools: js call, {label} ({JS_CALLS} calls) | p50 | {p50:.0} µs |");
        println!("| tools: js call, {label} ({JS_CALLS} calls) | p99 | {p99:.0} µs |");
    }

    let dir = tempfile::tempdir()?;
    let tool = FsTool::new(Arc::new(DirJail::new(dir.path())?));
    let text = "fn main() {\n    println!(\"hello\");\n}\n".repeat(20);
    let create: Vec<Value> = (0..FS_FILES)
        .map(|i| json!({"command": "create", "path": format!("/src/f{i}.rs"), "file_text": text}))
        .collect();
    let view: Vec<Value> = (0..FS_FILES)
        .map(|i| json!({"command": "view", "path": format!("/src/f{i}.rs")}))
        .collect();
    // The whole file is the (unique) old text, so every call replaces once.
    let replace: Vec<Value> = (0..FS_FILES)
        .map(|i| {
            json!({
                "command": "str_replace",
                "path": format!("/src/f{i}.rs"),
                "old_str": text,
                "new_str": "fn main() {}\n",
            })
        })
        .collect();
    let created = fs_rate(&tool, create).await?;
    let viewed = fs_rate(&tool, view).await?;
    let replaced = fs_rate(&tool, replace).await?;
    let label = format!(
        "tools: fs on DirJail ({FS_FILES} files of {} B)",
        text.len()
    );
    println!("| {label} | create | {created:.0} ops/s |");
    println!("| {label} | view | {viewed:.0} ops/s |");
    println!("| {label} | str_replace | {replaced:.0} ops/s |");
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(bench())
}
