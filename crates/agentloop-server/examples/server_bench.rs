//! Benchmark of one `agentloop-server` instance holding many concurrent,
//! slowly streaming agent runs, on SQLite (a temp file) and on PostgreSQL
//! (`AGENTLOOP_TEST_POSTGRES_URL`; a fresh database, dropped at the end;
//! without the variable a row says it was skipped). For each backend it
//! prints:
//! - how fast runs start: the time until every run streams, the rate at
//!   which `POST /api/tasks/{id}/agent-runs` answered 32 clients starting
//!   runs at once, and that route's latency (p50, p99) while the runs
//!   already started stream;
//! - memory per active run: the growth of the process's RSS from before the
//!   runs start to when every run streams, over the run count, and the
//!   anonymous part of it (the rest maps files: SQLite's database);
//! - SSE fan-out latency (p50, p99) to 100 clients following one of the
//!   runs while all of them stream, from the instance's broadcast of an
//!   event to its arrival at a client;
//! - events/s the server appended to the logs while the runs streamed, and
//!   the store's append capacity: 1,000 writers appending one event a call
//!   (as the server does) as fast as they can;
//! - on PostgreSQL, the latency of following a run from another instance
//!   on the same database (notified by `LISTEN/NOTIFY`) beside following it
//!   on the instance that runs it.
//!
//! The run count is the first argument or `AGENTLOOP_BENCH_RUNS` (default
//! 1,000, what `cargo xtask bench` runs); each run streams a chunk every
//! `AGENTLOOP_BENCH_CHUNK_MS` (default 1,000) until the measurements end.
//! The figure the server is held to is taken at 10,000 runs:
//! `AGENTLOOP_TEST_POSTGRES_URL=postgres://… cargo run --release -p
//! agentloop-server --example server_bench -- 10000` (needs a file
//! descriptor limit above 10,000 for the SSE and database sockets: `ulimit
//! -n 65536`).
//!
//! Each backend runs in a child process of its own, so one's freed memory
//! does not hide the next one's growth. Prints markdown table rows; `cargo
//! xtask bench` collects them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agentloop_server::{AppState, Server, ServerConfig};
use agentloop_storage::{PostgresStore, SqliteStore, Store};
use agentloop_types::{
    BlockStart, ModelChunk, ModelProvider, ModelRequest, ModelStream, RunPath, StopReason,
    StreamDelta, TokenTotals,
};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::watch;

const CLIENTS: usize = 100;
/// How many clients start runs at once.
const STARTERS: usize = 32;
/// How long the fan-out and the server's append rate are measured.
const WINDOW: Duration = Duration::from_secs(10);
const APPEND_WRITERS: usize = 1_000;
const APPENDS_PER_WRITER: u64 = 20;
/// The chunk interval of the run followed across instances.
const FOLLOW_CHUNK: Duration = Duration::from_millis(100);
const FOLLOW_CHUNKS: usize = 50;

/// A model that streams a text chunk every `interval` until released.
struct HeldModel {
    interval: Duration,
    release: watch::Receiver<bool>,
    streaming: Arc<AtomicUsize>,
    chunks: Option<usize>,
}

impl ModelProvider for HeldModel {
    fn stream(&self, _request: ModelRequest) -> ModelStream {
        self.streaming.fetch_add(1, Ordering::SeqCst);
        let start = futures::stream::iter([
            Ok(ModelChunk::Delta(StreamDelta::BlockStart {
                index: 0,
                block: BlockStart::Text,
            })),
            Ok(ModelChunk::Delta(StreamDelta::Text {
                index: 0,
                text: "first ".to_owned(),
            })),
        ]);
        let interval = self.interval;
        let chunks = self.chunks;
        let body = futures::stream::unfold(
            (self.release.clone(), 0usize),
            move |(mut release, n)| async move {
                if *release.borrow() || chunks.is_some_and(|c| n >= c) {
                    return None;
                }
                tokio::select! {
                    _ = tokio::time::sleep(interval) => {}
                    _ = release.changed() => return None,
                }
                let chunk = ModelChunk::Delta(StreamDelta::Text {
                    index: 0,
                    text: format!("chunk {n} "),
                });
                Some((Ok(chunk), (release, n + 1)))
            },
        );
        let end = futures::stream::iter([
            Ok(ModelChunk::Delta(StreamDelta::BlockStop { index: 0 })),
            Ok(ModelChunk::Finish {
                stop_reason: StopReason::EndTurn,
                usage: TokenTotals::default(),
            }),
        ]);
        start.chain(body).chain(end).boxed()
    }
}

/// The process's resident memory in KiB: all of it, and the part that is
/// anonymous (heap and stacks; the rest maps files, such as SQLite's
/// memory-mapped database, whose pages the kernel can drop).
#[derive(Clone, Copy)]
struct Resident {
    total: u64,
    anonymous: u64,
}

fn resident() -> Resident {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    Resident {
        total: field("VmRSS:"),
        anonymous: field("RssAnon:"),
    }
}

/// Growth from `before` to `after` per run, in KiB.
fn per_run(before: u64, after: u64, runs: usize) -> f64 {
    after.saturating_sub(before) as f64 / runs as f64
}

/// A backend under test.
#[derive(Clone)]
enum Backend {
    Sqlite(SqliteStore),
    Postgres(PostgresStore),
}

impl Backend {
    fn name(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "SQLite",
            Self::Postgres(_) => "PostgreSQL",
        }
    }

    fn store(&self) -> Arc<dyn Store> {
        match self {
            Self::Sqlite(s) => Arc::new(s.clone()),
            Self::Postgres(s) => Arc::new(s.clone()),
        }
    }

    async fn event_count(&self) -> i64 {
        const COUNT: &str = "SELECT count(*) FROM run_events";
        match self {
            Self::Sqlite(s) => sqlx::query_scalar(COUNT).fetch_one(s.pool()).await.unwrap(),
            Self::Postgres(s) => sqlx::query_scalar(COUNT).fetch_one(s.pool()).await.unwrap(),
        }
    }
}

struct Instance {
    base: String,
    state: AppState,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    served: Option<tokio::task::JoinHandle<()>>,
}

impl Instance {
    async fn start(store: Arc<dyn Store>, model: HeldModel) -> Self {
        let mut config = ServerConfig::new(Arc::new(model), "scripted");
        config.max_iterations = 1;
        config.connections.max_connections = 100_000;
        // One user starts every run, as fast as the server allows: the
        // benchmark measures the server, not the per-client rate limit.
        config.rate_limit = None;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let server = Server::new(store, config);
        let state = server.state.clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = tokio::spawn(async move {
            let _ = server
                .serve(listener, async move {
                    let _ = stopped.await;
                })
                .await;
        });
        Self {
            base,
            state,
            stop: Some(stop),
            served: Some(served),
        }
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(served) = self.served.take() {
            let _ = tokio::time::timeout(Duration::from_secs(60), served).await;
        }
    }
}

/// An HTTP client of the instances, as one user.
#[derive(Clone)]
struct Client {
    token: String,
    http: reqwest::Client,
}

impl Client {
    async fn post(&self, base: &str, path: &str, body: Value) -> Value {
        self.http
            .post(format!("{base}{path}"))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    async fn project(&self, base: &str, repo: &std::path::Path) -> String {
        let project = self
            .post(
                base,
                "/api/projects",
                json!({ "name": "bench", "repoFolder": repo }),
            )
            .await;
        project["id"].as_str().unwrap().to_owned()
    }

    async fn task(&self, base: &str, project: &str) -> String {
        let path = format!("/api/projects/{project}/tasks");
        let task = self.post(base, &path, json!({ "title": "bench" })).await;
        task["id"].as_str().unwrap().to_owned()
    }

    async fn start_run(&self, base: &str, task_id: &str) -> String {
        let path = format!("/api/tasks/{task_id}/agent-runs");
        let run = self
            .post(base, &path, json!({ "agentType": "planification" }))
            .await;
        run["id"]
            .as_str()
            .unwrap_or_else(|| panic!("no run started: {run}"))
            .to_owned()
    }

    /// Follows a run's SSE stream; returns when each seq arrived, and when
    /// the stream was connected.
    fn follow(
        &self,
        base: &str,
        run_id: &str,
    ) -> tokio::task::JoinHandle<(Instant, HashMap<u64, Instant>)> {
        let request = self
            .http
            .get(format!("{base}/api/agent-runs/{run_id}/events"))
            .bearer_auth(&self.token)
            .send();
        tokio::spawn(async move {
            let mut seen = HashMap::new();
            let response = request.await.unwrap();
            let connected = Instant::now();
            let mut stream = response.bytes_stream();
            let mut buffer = String::new();
            while let Some(Ok(bytes)) = stream.next().await {
                let now = Instant::now();
                buffer.push_str(&String::from_utf8_lossy(&bytes));
                while let Some(end) = buffer.find('\n') {
                    let line: String = buffer.drain(..=end).collect();
                    if let Some(seq) = line.strip_prefix("id:").and_then(|s| s.trim().parse().ok())
                    {
                        seen.entry(seq).or_insert(now);
                    }
                }
            }
            (connected, seen)
        })
    }
}

/// When the instance running `run_id` broadcast each of its events, until
/// `until` or its end.
async fn broadcast_times(
    state: &AppState,
    run_id: &str,
    until: Option<Instant>,
) -> HashMap<u64, Instant> {
    let local = loop {
        if let Some(local) = state.local_run(run_id) {
            break local;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    };
    let mut live = local.subscribe();
    let mut sent = HashMap::new();
    loop {
        let next = match until {
            Some(until) => match tokio::time::timeout_at(until.into(), live.recv()).await {
                Ok(next) => next,
                Err(_) => break,
            },
            None => live.recv().await,
        };
        let Ok(event) = next else { break };
        sent.insert(event.seq, Instant::now());
        if event.kind.name() == "finished" && event.path == RunPath::root() {
            break;
        }
    }
    sent
}

/// Latencies (ms) of the live events each follower received.
fn latencies(
    sent: &HashMap<u64, Instant>,
    followers: Vec<(Instant, HashMap<u64, Instant>)>,
) -> Vec<f64> {
    let mut latencies = Vec::new();
    for (connected, seen) in followers {
        for (seq, at) in seen {
            // Events stored before the client connected come from the
            // replay, not the live fan-out.
            if let Some(t0) = sent.get(&seq).filter(|t0| **t0 > connected) {
                latencies.push(at.saturating_duration_since(*t0).as_secs_f64() * 1e3);
            }
        }
    }
    latencies.sort_by(f64::total_cmp);
    latencies
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

/// Runs `f` over `items` with at most `limit` at once.
async fn bounded<T, F, Fut, R>(items: Vec<T>, limit: usize, f: F) -> Vec<R>
where
    F: Fn(T) -> Fut,
    Fut: std::future::Future<Output = R>,
{
    futures::stream::iter(items.into_iter().map(f))
        .buffered(limit)
        .collect()
        .await
}

/// Many runs streaming at once: memory, fan-out, appended events/s.
async fn many_runs(backend: &Backend, runs: usize, chunk: Duration, repo: &std::path::Path) {
    let label = format!(
        "server on {}: {runs} runs streaming a chunk every {} ms",
        backend.name(),
        chunk.as_millis()
    );
    let store = backend.store();
    let (release, released) = watch::channel(false);
    let streaming = Arc::new(AtomicUsize::new(0));
    let model = HeldModel {
        interval: chunk,
        release: released,
        streaming: streaming.clone(),
        chunks: None,
    };
    let (_, token) = agentloop_server::users::create_user(&*store, "bench")
        .await
        .unwrap();
    let instance = Instance::start(store, model).await;
    let client = Client {
        token,
        http: reqwest::Client::new(),
    };
    let base = instance.base.clone();
    let project = client.project(&base, repo).await;
    let tasks = bounded(vec![(); runs], 32, |()| client.task(&base, &project)).await;
    let before = resident();
    let started = Instant::now();
    let timed_starts = bounded(tasks, STARTERS, |task| {
        let (client, base) = (client.clone(), base.clone());
        async move {
            let sent = Instant::now();
            let run_id = client.start_run(&base, &task).await;
            (run_id, sent.elapsed().as_secs_f64() * 1e3)
        }
    })
    .await;
    let answered = started.elapsed().as_secs_f64();
    let (run_ids, mut start_latencies): (Vec<String>, Vec<f64>) = timed_starts.into_iter().unzip();
    start_latencies.sort_by(f64::total_cmp);
    while streaming.load(Ordering::SeqCst) < runs || instance.state.local_count() < runs {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let start_time = started.elapsed().as_secs_f64();
    // Let every run reach its steady state (a few chunks each).
    tokio::time::sleep(chunk * 3).await;
    let all_streaming = resident();

    let events_before = backend.event_count().await;
    let window_start = Instant::now();
    let followed = &run_ids[runs / 2];
    let followers: Vec<_> = (0..CLIENTS)
        .map(|_| client.follow(&base, followed))
        .collect();
    let sent = broadcast_times(&instance.state, followed, Some(window_start + WINDOW)).await;
    let appended = backend.event_count().await - events_before;
    let window = window_start.elapsed().as_secs_f64();
    let active = instance.state.local_count();
    let now = resident();
    let peak = Resident {
        total: now.total.max(all_streaming.total),
        anonymous: now.anonymous.max(all_streaming.anonymous),
    };

    let _ = release.send(true);
    let mut finished = Vec::new();
    for follower in followers {
        finished.push(follower.await.unwrap());
    }
    let fan_out = latencies(&sent, finished);

    println!("| {label} | runs active while measured | {active} |");
    println!("| {label} | time to start all runs | {start_time:.1} s |");
    println!(
        "| {label} | starts answered ({STARTERS} clients at once) | {:.0} runs/s |",
        runs as f64 / answered
    );
    println!(
        "| {label} | `POST /api/tasks/{{id}}/agent-runs`, p50 | {:.1} ms |",
        percentile(&start_latencies, 0.5)
    );
    println!(
        "| {label} | `POST /api/tasks/{{id}}/agent-runs`, p99 | {:.1} ms |",
        percentile(&start_latencies, 0.99)
    );
    println!(
        "| {label} | memory per active run (RSS growth / runs; anonymous) | {:.1} KiB ({:.1}) |",
        per_run(before.total, all_streaming.total, runs),
        per_run(before.anonymous, all_streaming.anonymous, runs)
    );
    println!(
        "| {label} | peak RSS growth while {CLIENTS} clients follow / runs (anonymous) | {:.1} KiB ({:.1}) |",
        per_run(before.total, peak.total, runs),
        per_run(before.anonymous, peak.anonymous, runs)
    );
    println!(
        "| {label} | SSE fan-out to {CLIENTS} clients, p50 | {:.2} ms |",
        percentile(&fan_out, 0.5)
    );
    println!(
        "| {label} | SSE fan-out to {CLIENTS} clients, p99 | {:.2} ms |",
        percentile(&fan_out, 0.99)
    );
    println!(
        "| {label} | SSE events delivered while measured | {} |",
        fan_out.len()
    );
    println!(
        "| {label} | events appended while streaming | {:.0} events/s |",
        appended as f64 / window
    );
    let drained = Instant::now();
    while instance.state.local_count() > 0 && drained.elapsed() < Duration::from_secs(300) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    instance.stop().await;
}

/// The store's append capacity: writers appending one event a call.
async fn append_capacity(backend: &Backend) {
    let store = backend.store();
    let now = agentloop_storage::model::now_millis();
    let ids: Vec<String> = (0..APPEND_WRITERS).map(|i| format!("append-{i}")).collect();
    bounded(ids.clone(), 32, |id| {
        let store = store.clone();
        async move {
            store
                .create_run(&agentloop_storage::model::RunRecord {
                    id,
                    chat_id: None,
                    status: agentloop_storage::model::RunStatus::Running,
                    state: None,
                    result: None,
                    pending_tool_call: None,
                    end_reason: None,
                    lease_owner: None,
                    lease_expires_at: None,
                    created_at: now,
                    updated_at: now,
                })
                .await
                .unwrap();
        }
    })
    .await;
    let started = Instant::now();
    let writers: Vec<_> = ids
        .into_iter()
        .map(|id| {
            let store = store.clone();
            tokio::spawn(async move {
                for seq in 0..APPENDS_PER_WRITER {
                    let event = agentloop_types::LoopEvent {
                        seq,
                        path: RunPath::root(),
                        kind: agentloop_types::EventKind::StreamingChunk(
                            agentloop_types::StreamingChunkEvent {
                                delta: StreamDelta::Text {
                                    index: 0,
                                    text: format!("chunk {seq} "),
                                },
                            },
                        ),
                    };
                    store.append_events(&id, &[event]).await.unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    let rate =
        (APPEND_WRITERS as u64 * APPENDS_PER_WRITER) as f64 / started.elapsed().as_secs_f64();
    println!(
        "| store on {}: {APPEND_WRITERS} writers appending one event a call | events appended | {rate:.0} events/s |",
        backend.name()
    );
}

/// Following a run on another instance of the same PostgreSQL database
/// beside following it on the instance that runs it.
async fn cross_instance(url: &str, repo: &std::path::Path) {
    let label = format!(
        "server on PostgreSQL: one run streaming a chunk every {} ms, followed by {} clients",
        FOLLOW_CHUNK.as_millis(),
        CLIENTS / 2
    );
    let runner_store = PostgresStore::connect(url).await.unwrap();
    let other_store = PostgresStore::connect(url).await.unwrap();
    let (_, token) = agentloop_server::users::create_user(&runner_store, "follower")
        .await
        .unwrap();
    let model = |chunks| {
        let (release, released) = watch::channel(false);
        std::mem::forget(release);
        HeldModel {
            interval: FOLLOW_CHUNK,
            release: released,
            streaming: Arc::new(AtomicUsize::new(0)),
            chunks,
        }
    };
    let runner = Instance::start(Arc::new(runner_store), model(Some(FOLLOW_CHUNKS))).await;
    let other = Instance::start(Arc::new(other_store), model(None)).await;
    let client = Client {
        token,
        http: reqwest::Client::new(),
    };
    let project = client.project(&runner.base, repo).await;
    let task = client.task(&runner.base, &project).await;
    let run_id = client.start_run(&runner.base, &task).await;
    let on_runner: Vec<_> = (0..CLIENTS / 2)
        .map(|_| client.follow(&runner.base, &run_id))
        .collect();
    let on_other: Vec<_> = (0..CLIENTS / 2)
        .map(|_| client.follow(&other.base, &run_id))
        .collect();
    let sent = broadcast_times(&runner.state, &run_id, None).await;
    let mut same = Vec::new();
    for follower in on_runner {
        same.push(follower.await.unwrap());
    }
    let mut cross = Vec::new();
    for follower in on_other {
        cross.push(follower.await.unwrap());
    }
    let (same, cross) = (latencies(&sent, same), latencies(&sent, cross));
    for (what, lat) in [
        ("on the running instance", &same),
        ("on another instance", &cross),
    ] {
        println!(
            "| {label} | latency {what}, p50 | {:.2} ms |",
            percentile(lat, 0.5)
        );
        println!(
            "| {label} | latency {what}, p99 | {:.2} ms |",
            percentile(lat, 0.99)
        );
    }
    println!(
        "| {label} | added by following from another instance, p50 | {:.2} ms |",
        percentile(&cross, 0.5) - percentile(&same, 0.5)
    );
    runner.stop().await;
    other.stop().await;
}

/// A fresh database on the server of `admin_url`, dropped by [`drop_database`].
async fn create_database(admin_url: &str) -> (String, String) {
    use sqlx::Connection;
    let name = format!("agentloop_bench_{}", std::process::id());
    let mut admin = sqlx::PgConnection::connect(admin_url).await.unwrap();
    sqlx::raw_sql(&format!("CREATE DATABASE \"{name}\""))
        .execute(&mut admin)
        .await
        .unwrap();
    let (base, query) = match admin_url.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (admin_url, String::new()),
    };
    let authority_end = base.find("://").map_or(0, |i| i + 3);
    let base = match base[authority_end..].find('/') {
        Some(slash) => &base[..authority_end + slash],
        None => base,
    };
    (name.clone(), format!("{base}/{name}{query}"))
}

async fn drop_database(admin_url: &str, name: &str) {
    use sqlx::Connection;
    let mut admin = sqlx::PgConnection::connect(admin_url).await.unwrap();
    sqlx::raw_sql(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
        .execute(&mut admin)
        .await
        .unwrap();
}

fn run_count() -> usize {
    std::env::args()
        .nth(1)
        .or_else(|| std::env::var("AGENTLOOP_BENCH_RUNS").ok())
        .map(|n| n.parse().expect("the run count is a number"))
        .unwrap_or(1_000)
}

fn main() {
    let runs = run_count();
    let chunk = Duration::from_millis(
        std::env::var("AGENTLOOP_BENCH_CHUNK_MS")
            .ok()
            .map_or(1_000, |ms| ms.parse().expect("a chunk interval in ms")),
    );
    let admin_url = std::env::var("AGENTLOOP_TEST_POSTGRES_URL").ok();
    // Each backend is measured in a process of its own: memory one
    // backend's phase freed stays in the process and would hide the
    // next one's growth.
    let Some(backend) = std::env::var("AGENTLOOP_BENCH_BACKEND").ok() else {
        let mut backends = vec!["sqlite"];
        match &admin_url {
            Some(_) => backends.push("postgres"),
            None => println!(
                "| server on PostgreSQL | skipped | AGENTLOOP_TEST_POSTGRES_URL is not set |"
            ),
        }
        for backend in backends {
            let status = std::process::Command::new(std::env::current_exe().unwrap())
                .arg(runs.to_string())
                .env("AGENTLOOP_BENCH_BACKEND", backend)
                .status()
                .unwrap();
            assert!(status.success(), "the {backend} benchmark failed");
        }
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    agentloop_providers::ensure_crypto_provider();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        if backend == "sqlite" {
            let sqlite = SqliteStore::open(dir.path().join("bench.db"))
                .await
                .unwrap();
            let repo = dir.path().join("sqlite-repo");
            many_runs(&Backend::Sqlite(sqlite.clone()), runs, chunk, &repo).await;
            append_capacity(&Backend::Sqlite(sqlite)).await;
            return;
        }
        let admin_url = admin_url.expect("AGENTLOOP_TEST_POSTGRES_URL");
        let (name, url) = create_database(&admin_url).await;
        let postgres = PostgresStore::connect(&url).await.unwrap();
        let repo = dir.path().join("postgres-repo");
        many_runs(&Backend::Postgres(postgres.clone()), runs, chunk, &repo).await;
        append_capacity(&Backend::Postgres(postgres.clone())).await;
        postgres.close().await;
        cross_instance(&url, &dir.path().join("follow-repo")).await;
        drop_database(&admin_url, &name).await;
    });
}
