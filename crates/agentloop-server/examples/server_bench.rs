//! Benchmark of one `agentloop-server` instance (in-memory store, scripted
//! provider streaming slowly): how many concurrent agent runs it holds and
//! what each costs in memory, and the latency of SSE fan-out to 100
//! clients. Prints markdown table rows; `cargo xtask bench` collects them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_server::{AppState, Server, ServerConfig};
use agentloop_storage::MemoryStore;
use agentloop_types::ApiKind;
use futures::StreamExt;
use serde_json::{Value, json};

const RUNS: usize = 200;
const CLIENTS: usize = 100;
const CHUNKS: usize = 40;
const CHUNK_DELAY_MS: u64 = 25;

fn slow_turn() -> ScriptedTurn {
    let mut turn = ScriptedTurn::new();
    for i in 0..CHUNKS {
        turn = turn
            .delay_ms(CHUNK_DELAY_MS)
            .text_chunks(&[&format!("chunk {i} ")]);
    }
    turn
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

struct Bench {
    base: String,
    token: String,
    client: reqwest::Client,
    state: AppState,
}

impl Bench {
    async fn start(turns: usize) -> Self {
        agentloop_providers::ensure_crypto_provider();
        let provider = ScriptedProvider::unrecorded((0..turns).map(|_| slow_turn()));
        let mut config = ServerConfig::new(provider, ApiKind::AnthropicMessages, "scripted");
        config.heartbeat = Duration::from_secs(2);
        let store = Arc::new(MemoryStore::new());
        let (_, token) = agentloop_server::users::create_user(&*store, "bench")
            .await
            .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let server = Server::new(store, config);
        let state = server.state.clone();
        tokio::spawn(server.serve(listener, std::future::pending()));
        Self {
            base,
            token,
            client: reqwest::Client::new(),
            state,
        }
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        self.client
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    async fn task(&self, repo: &std::path::Path) -> String {
        let project = self
            .post(
                "/api/projects",
                json!({ "name": "bench", "repoFolder": repo }),
            )
            .await;
        let path = format!("/api/projects/{}/tasks", project["id"].as_str().unwrap());
        let task = self.post(&path, json!({ "title": "bench" })).await;
        task["id"].as_str().unwrap().to_owned()
    }

    async fn start_run(&self, task_id: &str) -> String {
        let path = format!("/api/tasks/{task_id}/agent-runs");
        let run = self
            .post(&path, json!({ "agentType": "planification" }))
            .await;
        run["id"].as_str().unwrap().to_owned()
    }
}

async fn concurrent_runs(repo: &std::path::Path) {
    let bench = Bench::start(RUNS).await;
    let mut tasks = Vec::new();
    for _ in 0..RUNS {
        tasks.push(bench.task(repo).await);
    }
    let before = rss_kib();
    let started = Instant::now();
    for task in &tasks {
        bench.start_run(task).await;
    }
    let mut peak_active = 0;
    let mut peak_rss = before;
    while bench.state.local_count() > 0 {
        peak_active = peak_active.max(bench.state.local_count());
        peak_rss = peak_rss.max(rss_kib());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let label = format!("server: {RUNS} runs streaming {CHUNKS} chunks {CHUNK_DELAY_MS} ms apart");
    println!("| {label} | peak concurrent runs | {peak_active} |");
    println!("| {label} | wall time for all | {:.2} s |", elapsed);
    if peak_active > 0 {
        println!(
            "| {label} | memory per active run | {:.1} KiB |",
            peak_rss.saturating_sub(before) as f64 / peak_active as f64
        );
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

async fn sse_fan_out(repo: &std::path::Path) {
    let bench = Bench::start(1).await;
    let task = bench.task(repo).await;
    let run_id = bench.start_run(&task).await;
    let local = loop {
        if let Some(local) = bench.state.local_run(&run_id) {
            break local;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    };
    let mut reference = local.events.subscribe();
    let url = format!("{}/api/agent-runs/{run_id}/events", bench.base);
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let request = bench.client.get(&url).bearer_auth(&bench.token).send();
            tokio::spawn(async move {
                let mut seen: HashMap<u64, Instant> = HashMap::new();
                let response = request.await.unwrap();
                let connected = Instant::now();
                let mut stream = response.bytes_stream();
                let mut buffer = String::new();
                while let Some(Ok(bytes)) = stream.next().await {
                    let now = Instant::now();
                    buffer.push_str(&String::from_utf8_lossy(&bytes));
                    while let Some(end) = buffer.find('\n') {
                        let line: String = buffer.drain(..=end).collect();
                        if let Some(id) = line.strip_prefix("id:") {
                            if let Ok(seq) = id.trim().parse() {
                                seen.insert(seq, now);
                            }
                        }
                    }
                }
                (connected, seen)
            })
        })
        .collect();
    let mut sent: HashMap<u64, Instant> = HashMap::new();
    while let Ok(event) = reference.recv().await {
        sent.insert(event.seq, Instant::now());
        if event.kind.name() == "finished" {
            break;
        }
    }
    let mut latencies = Vec::new();
    for client in clients {
        let (connected, seen) = client.await.unwrap();
        for (seq, at) in seen {
            // Events stored before the client connected come from the
            // replay, not the live fan-out.
            if let Some(t0) = sent.get(&seq).filter(|t0| **t0 > connected) {
                latencies.push(at.saturating_duration_since(*t0).as_secs_f64() * 1e3);
            }
        }
    }
    latencies.sort_by(f64::total_cmp);
    let label = format!("server: SSE fan-out of one run to {CLIENTS} clients");
    if latencies.is_empty() {
        println!("| {label} | events received | 0 |");
        return;
    }
    println!(
        "| {label} | latency p50 | {:.2} ms |",
        percentile(&latencies, 0.5)
    );
    println!(
        "| {label} | latency p99 | {:.2} ms |",
        percentile(&latencies, 0.99)
    );
    println!("| {label} | events delivered | {} |", latencies.len());
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let repo = tempfile::tempdir().unwrap();
    runtime.block_on(async {
        concurrent_runs(repo.path()).await;
        sse_fan_out(repo.path()).await;
    });
}
