//! Benchmark: many concurrent runs in one process. N runs of a 10-step tool
//! loop (the `echo` script of `floor_bench`) start at once against a mock
//! that answers every turn after ~200 ms. Two floors make the same requests
//! at the same concurrency: the bare floor, a reqwest client that reads each
//! response whole, and the parsing floor, a minimal hand-written loop that
//! parses each SSE chunk with `serde_json` into typed deltas, assembles the
//! turn and keeps the messages (`support/parsing_floor.rs`). Over HTTP/1.1 each
//! run in flight holds a connection; over HTTP/2 (h2c, prior knowledge)
//! all share one.
//!
//! The mock runs in this process on its own runtime; each side runs in a
//! child process of this program, so its CPU time and peak memory are its
//! own. Each child first makes one run alone (the single-run wall time),
//! then the N concurrent runs. Figures per side: wall of the N runs over a
//! single run's, CPU per step (process CPU over N × 10 model calls), and
//! peak memory per run (peak resident set minus the resident set before the
//! N runs, over N). Each side runs three times, alternating with the
//! others; every figure is the median of its side's three, and the loop's
//! ratios to the parsing floor are also printed round by round. The mock's CPU
//! use is printed too, to show it stays far from saturation.
//!
//! `concurrency_bench [N…] [--http1|--http2]` (default: 1,000 and 10,000,
//! both protocols). To profile one side: `concurrency_bench --mock` prints the
//! mock's URL, then `concurrency_bench --child loop|floor|parsing --http1|--http2 N
//! URL` runs that side alone. Prints markdown table rows; `cargo xtask bench` runs it in
//! release mode.
#![allow(clippy::expect_used)]

use std::convert::Infallible;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentloop_engine::{RunDeps, collect, run};
use agentloop_providers::{HttpProvider, ProviderConfig, RetryPolicy, ensure_crypto_provider};
use agentloop_types::{ApiKind, LoopOptions, LoopStatus, Message, RequestOptions, Tool};
use axum::body::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::Value;

#[allow(dead_code)]
#[path = "support/scripted.rs"]
mod scripted;
use scripted::{Echo, MAX_TOKENS, MODEL};
#[path = "support/parsing_floor.rs"]
mod parsing_floor;

/// Model calls per run (9 tool calls, then a text answer).
const STEPS: usize = 10;
/// How long the mock takes to answer each turn.
const TURN: Duration = Duration::from_millis(200);
const DEFAULT_RUNS: &[usize] = &[1_000, 10_000];
/// Times each side runs; its figures are the medians. CPU time of many
/// runs on two shared cores moves by a fifth between runs of one build.
const ROUNDS: usize = 3;

#[derive(Clone, Copy, PartialEq)]
enum Proto {
    Http1,
    Http2,
}

impl Proto {
    fn name(self) -> &'static str {
        match self {
            Proto::Http1 => "HTTP/1.1",
            Proto::Http2 => "HTTP/2 (h2c)",
        }
    }
    fn arg(self) -> &'static str {
        match self {
            Proto::Http1 => "--http1",
            Proto::Http2 => "--http2",
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    raise_fd_limit()?;
    if args.first().map(String::as_str) == Some("--child") {
        return child(&args[1..]);
    }
    // `--mock`: only the mock, until killed (to profile one side alone
    // with `--child`).
    if args.first().map(String::as_str) == Some("--mock") {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        return runtime.block_on(async {
            println!("{}", start_mock().await?);
            std::future::pending::<()>().await;
            Ok(())
        });
    }
    let mut runs = Vec::new();
    let mut protos = Vec::new();
    for arg in &args {
        match arg.as_str() {
            "--http1" => protos.push(Proto::Http1),
            "--http2" => protos.push(Proto::Http2),
            n => runs.push(n.replace([',', '_'], "").parse::<usize>().map_err(|_| {
                format!("usage: concurrency_bench [N…] [--http1|--http2]; bad argument {n:?}")
            })?),
        }
    }
    if runs.is_empty() {
        runs.extend_from_slice(DEFAULT_RUNS);
    }
    if protos.is_empty() {
        protos = vec![Proto::Http1, Proto::Http2];
    }

    let mock_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let base = mock_runtime.block_on(start_mock())?;
    let exe = std::env::current_exe()?;
    for &proto in &protos {
        for &n in &runs {
            let label = format!(
                "concurrency: {n} runs of a {STEPS}-step tool loop at once, openai-chat, {}, mock ~{} ms/turn",
                proto.name(),
                TURN.as_millis()
            );
            // Rounds alternate the sides, so that drift in the machine's
            // load falls on both; each figure is the median of its side's.
            let mut rounds = Vec::with_capacity(ROUNDS);
            for _ in 0..ROUNDS {
                rounds.push(Round {
                    floor: run_side(&exe, "floor", proto, n, &base)?,
                    parsing: run_side(&exe, "parsing", proto, n, &base)?,
                    looped: run_side(&exe, "loop", proto, n, &base)?,
                });
            }
            let sides = "bare floor / parsing floor / loop";
            let three = |figure: &dyn Fn(&Ran) -> f64| {
                [
                    median(rounds.iter().map(|r| figure(&r.floor))),
                    median(rounds.iter().map(|r| figure(&r.parsing))),
                    median(rounds.iter().map(|r| figure(&r.looped))),
                ]
            };
            let steps = (n * STEPS) as f64;
            let [f, p, l] = three(&|r| scripted::ms(r.figures.single));
            println!("| {label} | {sides}: single run wall | {f:.0} ms / {p:.0} ms / {l:.0} ms |");
            let wall = |r: &Ran| r.figures.wall.as_secs_f64() / r.figures.single.as_secs_f64();
            let [f, p, l] = three(&wall);
            println!(
                "| {label} | {sides}: wall of {n} runs / a single run | {f:.2}× / {p:.2}× / {l:.2}× (loop {:.2}× the parsing floor; by round {}) |",
                l / p,
                by_round(&rounds, &wall)
            );
            let cpu = |r: &Ran| r.figures.cpu.as_secs_f64() / steps * 1e6;
            let [f, p, l] = three(&cpu);
            println!(
                "| {label} | {sides}: CPU per step | {f:.0} µs / {p:.0} µs / {l:.0} µs (loop {:.2}× the parsing floor; by round {}) |",
                l / p,
                by_round(&rounds, &cpu)
            );
            let memory = |r: &Ran| r.figures.memory_kib as f64 / n as f64;
            let [f, p, l] = three(&memory);
            println!(
                "| {label} | {sides}: peak memory per run | {f:.1} KiB / {p:.1} KiB / {l:.1} KiB (loop {:.2}× the parsing floor; by round {}) |",
                l / p,
                by_round(&rounds, &memory)
            );
            let [f, p, l] = three(&|r| r.mock_busy);
            println!(
                "| {label} | mock CPU during the {sides} side (cores busy) | {f:.2} / {p:.2} / {l:.2} |"
            );
        }
    }
    Ok(())
}

/// One side's run: what its child reported, and the mock's CPU use
/// meanwhile (cores busy).
struct Ran {
    figures: Figures,
    mock_busy: f64,
}

/// Each side's run, one after the other.
struct Round {
    floor: Ran,
    parsing: Ran,
    looped: Ran,
}

/// Runs one side in a child process.
fn run_side(
    exe: &std::path::Path,
    side: &str,
    proto: Proto,
    n: usize,
    base: &str,
) -> Result<Ran, Box<dyn std::error::Error>> {
    let mock_cpu = process_cpu();
    let started = Instant::now();
    let output = Command::new(exe)
        .args(["--child", side, proto.arg(), &n.to_string(), base])
        .stderr(std::process::Stdio::inherit())
        .output()?;
    let wall = started.elapsed();
    let mock_cpu = process_cpu() - mock_cpu;
    if !output.status.success() {
        return Err(format!("the {side} side failed ({})", output.status).into());
    }
    let text = String::from_utf8(output.stdout)?;
    let figures =
        Figures::parse(&text).ok_or_else(|| format!("the {side} side printed {text:?}"))?;
    Ok(Ran {
        figures,
        mock_busy: mock_cpu.as_secs_f64() / wall.as_secs_f64(),
    })
}

fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut values: Vec<f64> = values.collect();
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The loop's figure over the parsing floor's in each round, as `1.12×,
/// 1.09×, …`.
fn by_round(rounds: &[Round], figure: &dyn Fn(&Ran) -> f64) -> String {
    rounds
        .iter()
        .map(|round| format!("{:.2}×", figure(&round.looped) / figure(&round.parsing)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a child reports.
#[derive(Clone, Copy)]
struct Figures {
    single: Duration,
    wall: Duration,
    cpu: Duration,
    memory_kib: u64,
}

impl Figures {
    fn print(&self) {
        println!(
            "{} {} {} {}",
            self.single.as_nanos(),
            self.wall.as_nanos(),
            self.cpu.as_nanos(),
            self.memory_kib
        );
    }

    fn parse(text: &str) -> Option<Self> {
        let mut fields = text.split_whitespace().map(|f| f.parse::<u64>().ok());
        let mut next = || fields.next().flatten();
        Some(Self {
            single: Duration::from_nanos(next()?),
            wall: Duration::from_nanos(next()?),
            cpu: Duration::from_nanos(next()?),
            memory_kib: next()?,
        })
    }
}

/// `--child floor|parsing|loop --http1|--http2 N BASE_URL`: one side's runs.
fn child(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let [side, proto, n, base] = args else {
        return Err("usage: --child floor|parsing|loop --http1|--http2 N BASE_URL".into());
    };
    let proto = if proto == "--http2" {
        Proto::Http2
    } else {
        Proto::Http1
    };
    let n: usize = n.parse()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let figures = runtime.block_on(async {
        ensure_crypto_provider();
        let mut client = reqwest::Client::builder();
        if proto == Proto::Http2 {
            client = client.http2_prior_knowledge();
        }
        let client = client.build()?;
        let url: Arc<str> = Arc::from(format!("{base}/chat/completions"));
        let tools = Arc::new(scripted::tools());
        let side: Side = if side == "loop" {
            let config = ProviderConfig::for_api(ApiKind::OpenaiChat, "bench-key")
                .with_base_url(base.as_str())
                .with_retry(RetryPolicy {
                    max_retries: 0,
                    ..RetryPolicy::default()
                });
            Side::Loop(Arc::new(HttpProvider::with_client(config, client)))
        } else if side == "parsing" {
            Side::Parsing { client, url, tools }
        } else {
            Side::Floor { client, url, tools }
        };
        let side = Arc::new(side);
        let started = Instant::now();
        side.run().await?;
        let single = started.elapsed();

        let resident = memory_kib("VmRSS:")?;
        let cpu = process_cpu();
        let started = Instant::now();
        let mut runs = tokio::task::JoinSet::new();
        for _ in 0..n {
            let side = side.clone();
            runs.spawn(async move { side.run().await });
        }
        while let Some(result) = runs.join_next().await {
            result??;
        }
        let wall = started.elapsed();
        let cpu = process_cpu() - cpu;
        let peak = memory_kib("VmHWM:")?;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(Figures {
            single,
            wall,
            cpu,
            memory_kib: peak.saturating_sub(resident),
        })
    });
    figures.map_err(|e| chain(e.as_ref()))?.print();
    Ok(())
}

enum Side {
    Floor {
        client: reqwest::Client,
        url: Arc<str>,
        tools: Arc<Value>,
    },
    Parsing {
        client: reqwest::Client,
        url: Arc<str>,
        tools: Arc<Value>,
    },
    Loop(Arc<HttpProvider>),
}

impl Side {
    async fn run(&self) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        match self {
            Side::Floor { client, url, tools } => {
                scripted::floor_run(client, url, tools, STEPS).await?;
                Ok(())
            }
            Side::Parsing { client, url, tools } => {
                let conversation = parsing_floor::run(client, url, tools, STEPS).await?;
                if conversation.len() == 2 * STEPS {
                    Ok(())
                } else {
                    Err(format!("the parsing floor kept {} messages", conversation.len()).into())
                }
            }
            Side::Loop(provider) => {
                let options = LoopOptions {
                    request: RequestOptions {
                        model: MODEL.into(),
                        max_tokens: MAX_TOKENS,
                        ..RequestOptions::default()
                    },
                    max_iterations: STEPS as u32 + 1,
                    ..LoopOptions::default()
                };
                let deps =
                    RunDeps::new(provider.clone()).with_tools([Arc::new(Echo) as Arc<dyn Tool>]);
                let result =
                    collect(run(options, vec![Message::user_text("u1", "go")], deps)).await;
                match result.status {
                    LoopStatus::Complete { .. } if result.messages.len() == 2 * STEPS => Ok(()),
                    other => Err(format!(
                        "the loop ended {} with {} messages",
                        other.name(),
                        result.messages.len()
                    )
                    .into()),
                }
            }
        }
    }
}

/// Starts the mock (HTTP/1.1 and h2c on one port); returns its base URL.
/// It tells a run's step from the tool results in the request, so any
/// number of runs can interleave.
async fn start_mock() -> Result<String, Box<dyn std::error::Error>> {
    let responses: Arc<[Bytes]> = (0..STEPS).map(|i| scripted::response(i, STEPS)).collect();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}/v1", listener.local_addr()?);
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    // Far above any N measured: the mock must never be the limit.
    // A connection window that takes every run's body at once: with the
    // default (1 MB) 10,000 runs send their bodies in slivers as the window
    // reopens, which the server's flood guard (too many small DATA frames)
    // ends with a GOAWAY.
    builder
        .http2()
        .max_concurrent_streams(1_000_000)
        .initial_connection_window_size(256 << 20);
    let builder = Arc::new(builder);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let builder = builder.clone();
            let responses = responses.clone();
            tokio::spawn(async move {
                let service =
                    hyper::service::service_fn(move |request| answer(request, responses.clone()));
                if let Err(e) = builder
                    .serve_connection(TokioIo::new(stream), service)
                    .await
                {
                    eprintln!("mock: connection ended: {}", chain(e.as_ref()));
                }
            });
        }
    });
    Ok(base)
}

async fn answer(
    request: Request<Incoming>,
    responses: Arc<[Bytes]>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = match request.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let step = count(&body, b"\"tool_call_id\"").min(responses.len() - 1);
    tokio::time::sleep(TURN).await;
    let mut response = Response::new(Full::new(responses[step].clone()));
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/event-stream"),
    );
    Ok(response)
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

/// An error and its sources, for the report of a failed side.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// CPU time (user and system) of this process so far.
fn process_cpu() -> Duration {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_SELF).map_or(Duration::ZERO, |usage| {
        let time = |t: nix::sys::time::TimeVal| {
            Duration::new(t.tv_sec() as u64, t.tv_usec() as u32 * 1_000)
        };
        time(usage.user_time()) + time(usage.system_time())
    })
}

/// A `/proc/self/status` line's value in KiB (`VmRSS:`, `VmHWM:`).
fn memory_kib(key: &str) -> Result<u64, Box<dyn std::error::Error + Send + Sync>> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| format!("no {key} in /proc/self/status").into())
}

/// Each run in flight over HTTP/1.1 holds a socket on both ends: raise the
/// soft limit on open files to the hard one (children inherit it).
fn raise_fd_limit() -> Result<(), Box<dyn std::error::Error>> {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard)?;
    }
    Ok(())
}
