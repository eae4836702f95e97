//! A served `agentloop serve` process driven over raw HTTP/1.1: starting
//! it on a scripted provider (and writing that provider's turns), creating
//! projects and tasks, polling a run's status and reading its event stream.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use super::agentloop;

/// A running `agentloop serve`, the address it listens on, and every line
/// it wrote to stderr so far.
pub struct Served {
    pub child: Child,
    pub address: String,
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

/// A test that fails midway leaves no server behind.
impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn serve(db: &str, script: &Path, instance: &str) -> Served {
    serve_with(db, script, instance, &[])
}

/// [`serve`] with more flags. The script is shared by every run, in the
/// order they ask (`scripted-shared:`), so one file scripts a whole chain.
pub fn serve_with(db: &str, script: &Path, instance: &str, extra: &[&str]) -> Served {
    let provider = format!("scripted-shared:{}", script.display());
    let root = script.parent().unwrap();
    serve_provider(db, &["--provider", &provider], root, instance, extra)
}

/// `agentloop serve` on the model `provider` flags name, its projects in
/// `root`, once its health says it serves.
pub fn serve_provider(
    db: &str,
    provider: &[&str],
    root: &Path,
    instance: &str,
    extra: &[&str],
) -> Served {
    let served = serve_starting(db, provider, root, instance, extra);
    until_healthy(&served);
    served
}

/// Polls `GET /api/health` (bounded) until it answers 200: a server that
/// must first register with Restate answers 503 until then.
pub fn until_healthy(served: &Served) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (status, health) = http(&served.address, "", "GET", "/api/health", None);
        if status == 200 {
            assert_eq!(health["status"], "ok", "{health}");
            return;
        }
        assert_eq!(status, 503, "{health}");
        assert!(
            std::time::Instant::now() < deadline,
            "the server never became ready: {health}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// [`serve_provider`] returning as soon as the server says where it
/// listens, before it may be ready.
pub fn serve_starting(
    db: &str,
    provider: &[&str],
    root: &Path,
    instance: &str,
    extra: &[&str],
) -> Served {
    let mut child = agentloop()
        .args(["serve", "--db", db, "--bind", "127.0.0.1:0"])
        .args(provider)
        .args([
            "--instance-id",
            instance,
            "--lease-ms",
            "1000",
            "--heartbeat-ms",
            "100",
            "--claim-interval-ms",
            "100",
            "--projects-root",
            &root.display().to_string(),
        ])
        .args(extra)
        .args(checkpoints_flag(root, extra))
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let lines = log.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { return };
            eprintln!("[server] {line}");
            if let Some(rest) = line.split("serving on http://").nth(1) {
                let _ = tx.send(rest.split_whitespace().next().unwrap_or("").to_owned());
            }
            lines.lock().unwrap().push(line);
        }
    });
    let address = rx.recv_timeout(Duration::from_secs(60)).unwrap();
    Served {
        child,
        address,
        log,
    }
}

/// Where the server keeps file checkpoints: in the test's own folder
/// (beside the projects), unless `extra` says otherwise.
fn checkpoints_flag(root: &Path, extra: &[&str]) -> Vec<String> {
    if extra.iter().any(|flag| flag.contains("file-checkpoints")) {
        return Vec::new();
    }
    vec![
        "--file-checkpoints".to_owned(),
        root.join(".checkpoints").display().to_string(),
    ]
}

/// One HTTP/1.1 request with `Connection: close`; returns status and JSON.
pub fn http(
    address: &str,
    token: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
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
    let status = response[9..12].parse().unwrap();
    let (_, body) = response.split_once("\r\n\r\n").unwrap();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

pub fn task(address: &str, token: &str, repo: &Path) -> String {
    task_with(address, token, repo, json!({}))
}

/// A project of the user's in `repo`, created with the fields of `extra`
/// too (e.g. `approvals`); its id.
pub fn project(address: &str, token: &str, repo: &Path, extra: Value) -> String {
    let mut body = json!({ "name": "demo", "repoFolder": repo });
    for (key, value) in extra.as_object().cloned().unwrap_or_default() {
        body[key] = value;
    }
    let (status, project) = http(address, token, "POST", "/api/projects", Some(body));
    assert_eq!(status, 201, "{project}");
    project["id"].as_str().unwrap().to_owned()
}

/// [`task`] in a project created with more fields (e.g. `approvals`).
pub fn task_with(address: &str, token: &str, repo: &Path, extra: Value) -> String {
    let project_id = project(address, token, repo, extra);
    let path = format!("/api/projects/{project_id}/tasks");
    let (status, task) = http(address, token, "POST", &path, Some(json!({ "title": "t" })));
    assert_eq!(status, 201, "{task}");
    task["id"].as_str().unwrap().to_owned()
}

/// Starts an agent run of `agent` on the task; returns the run's id.
pub fn start_run(address: &str, token: &str, task_id: &str, agent: &str) -> String {
    let (status, run) = http(
        address,
        token,
        "POST",
        &format!("/api/tasks/{task_id}/agent-runs"),
        Some(json!({ "agentType": agent })),
    );
    assert_eq!(status, 201, "{run}");
    run["id"].as_str().unwrap().to_owned()
}

pub fn write_script(path: &Path, turns: Value) {
    std::fs::write(path, turns.to_string()).unwrap();
}

/// A model turn that only says `text`.
pub fn text(text: &str) -> Value {
    json!({ "steps": [{ "type": "text", "chunks": [text] }] })
}

/// A model turn that calls the fs tool to create `path` holding `text`.
pub fn fs_create(id: &str, path: &str, text: &str) -> Value {
    let input = json!({ "command": "create", "path": path, "file_text": text }).to_string();
    json!({ "steps": [{ "type": "tool_call", "id": id, "name": "fs", "fragments": [input] }] })
}

pub fn slow_text(text: &str) -> Value {
    json!({ "steps": [
        { "type": "text", "chunks": ["Working"] },
        { "type": "delay", "ms": 1500 },
        { "type": "text", "chunks": [text] }
    ] })
}

/// Polls an agent run over HTTP until it has `status` (bounded).
pub fn until_status(address: &str, token: &str, run_id: &str, status: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..600 {
        let (_, run) = http(
            address,
            token,
            "GET",
            &format!("/api/agent-runs/{run_id}"),
            None,
        );
        if run["status"] == status {
            return run;
        }
        last = run;
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("agent run {run_id} never became {status}: {last}");
}

/// Reads a run's SSE stream until it closes, cancelling the run when the
/// first `cancel_at` event arrives; returns the event names and data.
pub fn read_sse(address: &str, token: &str, run_id: &str, cancel_at: &str) -> Vec<(String, Value)> {
    read_sse_acting(address, token, run_id, cancel_at, || {
        let (status, body) = http(
            address,
            token,
            "POST",
            &format!("/api/agent-runs/{run_id}/cancel"),
            Some(json!({})),
        );
        assert_eq!(status, 200, "{body}");
    })
}

/// The whole stream of a run that no longer runs.
pub fn whole_stream(address: &str, token: &str, run_id: &str) -> Vec<(String, Value)> {
    read_sse_acting(address, token, run_id, "\u{0}never", || {})
}

/// The root `finished` events of a stream, in order.
pub fn terminal_events(events: &[(String, Value)]) -> Vec<&Value> {
    events
        .iter()
        .filter(|(name, data)| name == "finished" && data.get("path").is_none())
        .map(|(_, data)| data)
        .collect()
}

/// Reads a run's SSE stream until it closes, doing `act` when the first
/// `at` event arrives; returns the event names and data.
pub fn read_sse_acting(
    address: &str,
    token: &str,
    run_id: &str,
    at: &str,
    act: impl FnOnce(),
) -> Vec<(String, Value)> {
    let mut stream = TcpStream::connect(address).unwrap();
    write!(
        stream,
        "GET /api/agent-runs/{run_id}/events HTTP/1.1\r\nHost: {address}\r\n\
Authorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut reader = BufReader::new(stream);
    let mut events = Vec::new();
    let mut name = String::new();
    let mut act = Some(act);
    let mut line = String::new();
    loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) => return events,
            Ok(_) => {}
            Err(e) => panic!("the event stream stayed open: {e}; events so far {events:?}"),
        }
        let line = line.trim_end();
        if let Some(value) = line.strip_prefix("event:") {
            name = value.trim().to_owned();
        } else if let Some(data) = line.strip_prefix("data:") {
            events.push((name.clone(), serde_json::from_str(data.trim()).unwrap()));
            if name == at
                && let Some(act) = act.take()
            {
                act();
            }
        }
    }
}

/// A PostgreSQL database of one test's own, created on the server whose
/// admin database `admin_url` names; [`remove`](Self::remove) removes it.
pub struct ScratchDatabase {
    admin: sqlx::PgConnection,
    name: String,
    pub url: String,
}

impl ScratchDatabase {
    pub async fn create(admin_url: &str, name: &str) -> Self {
        use sqlx::Connection;
        // A plain connection: the admin database itself is never migrated.
        let mut admin = sqlx::PgConnection::connect(admin_url).await.unwrap();
        pg_exec(&mut admin, &format!("DROP DATABASE IF EXISTS \"{name}\"")).await;
        pg_exec(&mut admin, &format!("CREATE DATABASE \"{name}\"")).await;
        let base = admin_url.rsplit_once('/').map_or(admin_url, |(b, _)| b);
        let url = format!("{base}/{name}");
        Self {
            admin,
            name: name.to_owned(),
            url,
        }
    }

    pub async fn remove(mut self) {
        let sql = format!("DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)", self.name);
        pg_exec(&mut self.admin, &sql).await;
    }
}

async fn pg_exec(admin: &mut sqlx::PgConnection, sql: &str) {
    sqlx::raw_sql(sql).execute(admin).await.unwrap();
}

/// Runs `test` (blocking: it drives the binary) with the URL of a scratch
/// PostgreSQL database named after `name` and the process, and a
/// temporary folder, when `AGENTLOOP_TEST_POSTGRES_URL` names a server.
/// Without it the test says it skipped, and fails under CI.
pub async fn on_scratch_postgres(name: &str, test: impl FnOnce(&str, &Path) + Send + 'static) {
    let Ok(admin_url) = std::env::var("AGENTLOOP_TEST_POSTGRES_URL") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs AGENTLOOP_TEST_POSTGRES_URL"
        );
        println!("skipping: AGENTLOOP_TEST_POSTGRES_URL is not set");
        return;
    };
    let name = format!("{name}_{}", std::process::id());
    let database = ScratchDatabase::create(&admin_url, &name).await;
    let dir = tempfile::tempdir().unwrap();
    let url = database.url.clone();
    let path = dir.path().to_owned();
    tokio::task::spawn_blocking(move || test(&url, &path))
        .await
        .unwrap();
    database.remove().await;
}
