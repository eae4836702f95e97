//! Benchmark of agent runs on Restate (`agentloop serve --engine restate`)
//! against the built-in engine, through the `agentloop` binary and a real
//! `restate-server` (installed by `scripts/install-restate.sh`), the model
//! an OpenAI-compatible mock over HTTP that answers at once:
//!
//! - the 200-step tool loop (200 `fs` calls, then an answer) as one run on
//!   each engine, SQLite store: time per step and the ratio, measured in
//!   the same process one after the other (median of 3 runs each);
//! - runs completed per minute, 20 runs of a 10-step tool loop started at
//!   once, with one and with two workers behind one TCP balancer
//!   (`--restate-protocol http1`) on PostgreSQL
//!   (`AGENTLOOP_TEST_POSTGRES_URL`; a fresh database each, dropped after;
//!   without the variable a row says it was skipped).
//!
//! The binary is `AGENTLOOP_BIN` (`cargo xtask bench` builds it in release
//! mode and sets it), else `target/release/agentloop`. Prints markdown
//! table rows; `cargo xtask bench` collects them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/balancer.rs"]
mod balancer;
#[path = "../../agentloop-restate/tests/support/restate_server.rs"]
mod restate_server;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use restate_server::RestateServer;
use serde_json::{Value, json};

const LOOP_STEPS: usize = 200;
const THROUGHPUT_RUNS: usize = 20;
const THROUGHPUT_STEPS: usize = 10;

fn main() {
    let Some(restate) = RestateServer::start("bench") else {
        println!("| restate | every figure | skipped: restate-server is not installed |");
        return;
    };
    let binary = binary();
    let (builtin, on_restate) = step_times(&binary, &restate);
    let name = format!(
        "restate: {LOOP_STEPS}-step tool loop, one run, openai-compatible mock over HTTP, SQLite"
    );
    println!(
        "| {name} | built-in engine: time per step, median of 3 | {:.2} ms |",
        builtin * 1e3
    );
    println!(
        "| {name} | Restate engine: time per step, median of 3 | {:.2} ms |",
        on_restate * 1e3
    );
    println!(
        "| {name} | Restate / built-in, time per step | {:.1}× |",
        on_restate / builtin
    );
    let name = format!(
        "restate: {THROUGHPUT_RUNS} runs of a {THROUGHPUT_STEPS}-step tool loop at once, HTTP/1.1 workers behind a TCP balancer, PostgreSQL"
    );
    match std::env::var("AGENTLOOP_TEST_POSTGRES_URL") {
        Err(_) => println!(
            "| {name} | runs completed per minute | skipped: AGENTLOOP_TEST_POSTGRES_URL is not set |"
        ),
        Ok(admin) => {
            let one = runs_per_minute(&binary, &restate, &admin, 1);
            let two = runs_per_minute(&binary, &restate, &admin, 2);
            println!("| {name} | runs completed per minute, one worker | {one:.0} |");
            println!("| {name} | runs completed per minute, two workers | {two:.0} |");
            println!("| {name} | two workers / one | {:.2}× |", two / one);
        }
    }
}

fn binary() -> PathBuf {
    std::env::var_os("AGENTLOOP_BIN").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/release/agentloop"),
        PathBuf::from,
    )
}

/// Seconds per step of the loop on the built-in engine and on Restate.
fn step_times(binary: &Path, restate: &RestateServer) -> (f64, f64) {
    let model = LoopModel::start(LOOP_STEPS);
    let mut times = [Vec::new(), Vec::new()];
    for (engine, samples) in times.iter_mut().enumerate() {
        for _ in 0..3 {
            let dir = tempfile::tempdir().unwrap();
            let db = dir.path().join("db.sqlite").display().to_string();
            let token = create_user(binary, &db);
            let mut flags = Vec::new();
            let endpoint = format!("127.0.0.1:{}", free_port());
            if engine == 1 {
                flags = restate_flags(restate, &endpoint);
            }
            let worker = Worker::start(binary, &db, dir.path(), &model.base_url, &flags);
            let task = task(&worker.address, &token, &dir.path().join("repo"), "t");
            let started = Instant::now();
            let run = start_run(&worker.address, &token, &task);
            until_completed(&worker.address, &token, &run);
            samples.push(started.elapsed().as_secs_f64() / LOOP_STEPS as f64);
        }
        samples.sort_by(f64::total_cmp);
    }
    (times[0][1], times[1][1])
}

/// Runs completed per minute with `workers` workers.
fn runs_per_minute(binary: &Path, restate: &RestateServer, admin: &str, workers: usize) -> f64 {
    let model = LoopModel::start(THROUGHPUT_STEPS);
    let name = format!("agentloop_restate_bench_{}_{workers}", std::process::id());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let db = runtime.block_on(scratch_database(admin, &name, true));
    let dir = tempfile::tempdir().unwrap();
    let token = create_user(binary, &db);
    let ports: Vec<String> = (0..workers)
        .map(|_| format!("127.0.0.1:{}", free_port()))
        .collect();
    let balancer = balancer::Balancer::start(&ports);
    let url = format!("http://{}", balancer.address);
    let running: Vec<Worker> = ports
        .iter()
        .map(|endpoint| {
            let mut flags = restate_flags(restate, endpoint);
            flags.extend(
                [
                    "--restate-protocol",
                    "http1",
                    "--restate-endpoint-url",
                    &url,
                ]
                .map(str::to_owned),
            );
            Worker::start(binary, &db, dir.path(), &model.base_url, &flags)
        })
        .collect();
    let address = running[0].address.clone();
    let tasks: Vec<String> = (0..THROUGHPUT_RUNS)
        .map(|i| task(&address, &token, &dir.path().join(format!("repo{i}")), "t"))
        .collect();
    let started = Instant::now();
    let runs: Vec<String> = tasks
        .iter()
        .enumerate()
        .map(|(i, task)| start_run(&running[i % workers].address, &token, task))
        .collect();
    for run in &runs {
        until_completed(&address, &token, run);
    }
    let elapsed = started.elapsed().as_secs_f64();
    drop(running);
    runtime.block_on(scratch_database(admin, &name, false));
    THROUGHPUT_RUNS as f64 * 60.0 / elapsed
}

/// Creates (or, with `create` false, drops) database `name` on the server
/// `admin` names; its URL.
async fn scratch_database(admin: &str, name: &str, create: bool) -> String {
    use sqlx::Connection;
    let mut connection = sqlx::PgConnection::connect(admin).await.unwrap();
    let drop_it = format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)");
    sqlx::raw_sql(&drop_it)
        .execute(&mut connection)
        .await
        .unwrap();
    if create {
        let sql = format!("CREATE DATABASE \"{name}\"");
        sqlx::raw_sql(&sql).execute(&mut connection).await.unwrap();
    }
    let base = admin.rsplit_once('/').map_or(admin, |(base, _)| base);
    format!("{base}/{name}")
}

fn restate_flags(restate: &RestateServer, endpoint: &str) -> Vec<String> {
    [
        "--engine",
        "restate",
        "--restate-ingress",
        &restate.ingress,
        "--restate-admin",
        &restate.admin,
        "--restate-bind",
        endpoint,
    ]
    .map(str::to_owned)
    .to_vec()
}

/// An `agentloop serve` process, killed when dropped.
struct Worker {
    child: Child,
    address: String,
}

impl Worker {
    fn start(binary: &Path, db: &str, root: &Path, base_url: &str, flags: &[String]) -> Self {
        let mut child = Command::new(binary)
            .args(["serve", "--db", db, "--bind", "127.0.0.1:0"])
            .args(["--provider", "openai-compatible", "--base-url", base_url])
            .args(["--model", "mock", "--projects-root"])
            .arg(root)
            .args(["--lease-ms", "2000", "--heartbeat-ms", "500"])
            .args(["--max-iterations", "1000"])
            // One client polling every 5 ms: the benchmark measures the
            // engines, not the per-client rate limit.
            .args(["--rate-limit", "off"])
            .args(flags)
            .env("RUST_LOG", "warn")
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { return };
                if let Some(rest) = line.split("serving on http://").nth(1) {
                    let _ = tx.send(rest.split_whitespace().next().unwrap_or("").to_owned());
                }
            }
        });
        let address = rx.recv_timeout(Duration::from_secs(60)).unwrap();
        Self { child, address }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn create_user(binary: &Path, db: &str) -> String {
    let output = Command::new(binary)
        .args(["users", "create", "bench", "--db", db])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn http(address: &str, token: &str, method: &str, path: &str, body: Option<Value>) -> Value {
    let mut stream = TcpStream::connect(address).unwrap();
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (_, body) = response.split_once("\r\n\r\n").unwrap();
    serde_json::from_str(body).unwrap_or(Value::Null)
}

fn task(address: &str, token: &str, repo: &Path, title: &str) -> String {
    let body = json!({ "name": title, "repoFolder": repo });
    let project = http(address, token, "POST", "/api/projects", Some(body));
    let path = format!("/api/projects/{}/tasks", project["id"].as_str().unwrap());
    let task = http(
        address,
        token,
        "POST",
        &path,
        Some(json!({ "title": title })),
    );
    task["id"].as_str().unwrap().to_owned()
}

fn start_run(address: &str, token: &str, task: &str) -> String {
    let path = format!("/api/tasks/{task}/agent-runs");
    let run = http(
        address,
        token,
        "POST",
        &path,
        Some(json!({ "agentType": "planification" })),
    );
    run["id"].as_str().unwrap().to_owned()
}

fn until_completed(address: &str, token: &str, run: &str) {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let now = http(
            address,
            token,
            "GET",
            &format!("/api/agent-runs/{run}"),
            None,
        );
        match now["status"].as_str() {
            Some("completed") => return,
            Some("running") | Some("waiting") => {}
            _ => panic!("run {run} did not complete: {now}"),
        }
        assert!(Instant::now() < deadline, "run {run} took over 10 minutes");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// An OpenAI-compatible model answering at once: an `fs` call per turn
/// until the conversation holds `steps` answers, then a text answer.
struct LoopModel {
    base_url: String,
}

impl LoopModel {
    fn start(steps: usize) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                std::thread::spawn(move || answer(stream, steps));
            }
        });
        Self { base_url }
    }
}

fn answer(mut stream: TcpStream, steps: usize) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut length = 0;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).is_err() {
            return;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let turns = request["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count());
    let delta = if turns < steps {
        let arguments = json!({ "command": "view", "path": "." }).to_string();
        json!({ "tool_calls": [{ "index": 0, "id": format!("c{turns}"), "type": "function",
                                 "function": { "name": "fs", "arguments": arguments } }] })
    } else {
        json!({ "role": "assistant", "content": "done" })
    };
    let finish = if turns < steps { "tool_calls" } else { "stop" };
    let chunk = |delta: Value, finish: Value| {
        let chunk = json!({ "id": "c", "object": "chat.completion.chunk", "model": "mock",
                            "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }] });
        format!("data: {chunk}\n\n")
    };
    let body = [
        chunk(delta, Value::Null),
        chunk(json!({}), Value::from(finish)),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{body}",
        body.len()
    );
}
