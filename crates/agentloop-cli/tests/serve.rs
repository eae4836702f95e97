//! `agentloop serve` as a process: SIGKILL mid-run and recovery by a
//! restarted server, SIGTERM hand-back, `users create`, `complete-workflow`,
//! two servers sharing one PostgreSQL database, a cancel that stops the
//! agent, a run waiting for approval across a SIGKILL, and the OpenAPI
//! description checked by a fuzzer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agentloop_types::FinishedEvent;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use agentloop_storage::model::{AgentRunStatus, AgentType};
use agentloop_types::EventKind;
use serde_json::{Value, json};
use sqlx::Connection;

fn agentloop() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentloop"));
    command
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL");
    command
}

fn create_user(db: &str) -> String {
    let output = agentloop()
        .args(["users", "create", "ada", "--db", db])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// A running `agentloop serve`, the address it listens on, and every line
/// it wrote to stderr so far.
struct Served {
    child: Child,
    address: String,
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

fn serve(db: &str, script: &Path, instance: &str) -> Served {
    serve_with(db, script, instance, &[])
}

fn serve_with(db: &str, script: &Path, instance: &str, extra: &[&str]) -> Served {
    let mut child = agentloop()
        .args([
            "serve",
            "--db",
            db,
            "--bind",
            "127.0.0.1:0",
            "--provider",
            &format!("scripted:{}", script.display()),
            "--instance-id",
            instance,
            "--lease-ms",
            "1000",
            "--heartbeat-ms",
            "100",
            "--claim-interval-ms",
            "100",
            "--projects-root",
            &script.parent().unwrap().display().to_string(),
        ])
        .args(extra)
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

/// One HTTP/1.1 request with `Connection: close`; returns status and JSON.
fn http(address: &str, token: &str, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
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

fn task(address: &str, token: &str, repo: &Path) -> String {
    task_with(address, token, repo, json!({}))
}

/// [`task`] in a project created with more fields (e.g. `approvals`).
fn task_with(address: &str, token: &str, repo: &Path, extra: Value) -> String {
    let mut body = json!({ "name": "demo", "repoFolder": repo });
    for (key, value) in extra.as_object().cloned().unwrap_or_default() {
        body[key] = value;
    }
    let (status, project) = http(address, token, "POST", "/api/projects", Some(body));
    assert_eq!(status, 201, "{project}");
    let path = format!("/api/projects/{}/tasks", project["id"].as_str().unwrap());
    let (status, task) = http(address, token, "POST", &path, Some(json!({ "title": "t" })));
    assert_eq!(status, 201, "{task}");
    task["id"].as_str().unwrap().to_owned()
}

fn write_script(path: &Path, turns: Value) {
    std::fs::write(path, turns.to_string()).unwrap();
}

fn slow_text(text: &str) -> Value {
    json!({ "steps": [
        { "type": "text", "chunks": ["Working"] },
        { "type": "delay", "ms": 1500 },
        { "type": "text", "chunks": [text] }
    ] })
}

/// Every agent run's log holds exactly one terminal event and seqs 0..n.
async fn assert_logs_whole(store: &dyn agentloop_storage::Store, task_id: &str) {
    for run in store.list_agent_runs(task_id).await.unwrap() {
        let events = store.list_events(&run.id, None, 100_000).await.unwrap();
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
        let finished = events
            .iter()
            .filter(|e| {
                matches!(e.kind, EventKind::Finished(FinishedEvent { .. })) && e.path.is_root()
            })
            .count();
        assert_eq!(finished, 1, "run {} finished {finished} times", run.id);
    }
}

async fn wait_settled(store: &dyn agentloop_storage::Store, task_id: &str, count: usize) {
    for _ in 0..600 {
        let runs = store.list_agent_runs(task_id).await.unwrap();
        if runs.len() >= count && runs.iter().all(|r| r.status != AgentRunStatus::Running) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the agent runs did not settle");
}

#[tokio::test]
async fn a_run_survives_sigkill_and_the_restarted_server_finishes_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    write_script(&script, json!([slow_text(" done.")]));
    let repo = dir.path().join("repo");
    let token = create_user(&db);
    let mut first = serve(&db, &script, "first");
    let task_id = task(&first.address, &token, &repo);
    let (status, run) = http(
        &first.address,
        &token,
        "POST",
        &format!("/api/tasks/{task_id}/agent-runs"),
        Some(json!({ "agentType": "planification" })),
    );
    assert_eq!(status, 201, "{run}");
    let run_id = run["id"].as_str().unwrap().to_owned();
    let store = agentloop_storage::open_store(&db).await.unwrap();
    for _ in 0..600 {
        if !store
            .list_events(&run_id, None, 10)
            .await
            .unwrap()
            .is_empty()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    assert_eq!(
        store.get_agent_run(&run_id).await.unwrap().status,
        AgentRunStatus::Running
    );

    let mut second = serve(&db, &script, "second");
    wait_settled(&*store, &task_id, 1).await;
    let run = store.get_agent_run(&run_id).await.unwrap();
    assert_eq!(run.status, AgentRunStatus::Completed);
    let conversation = store
        .get_conversation(run.conversation_id.as_deref().unwrap())
        .await
        .unwrap();
    let messages = store
        .list_messages(conversation.chat_id.as_deref().unwrap())
        .await
        .unwrap();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[1].message.text(), "Working done.");
    assert_logs_whole(&*store, &task_id).await;

    let output = agentloop()
        .args(["complete-workflow", &task_id, "--db", &db])
        .output()
        .unwrap();
    assert!(output.status.success());
    assert!(store.get_task(&task_id).await.unwrap().workflow_complete);

    let term = Command::new("kill")
        .args(["-TERM", &second.child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    assert!(second.child.wait().unwrap().success());
}

/// Polls an agent run over HTTP until it has `status` (bounded).
fn until_status(address: &str, token: &str, run_id: &str, status: &str) -> Value {
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

#[tokio::test]
async fn a_run_waiting_for_approval_survives_sigkill_and_a_decision_resumes_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([
            { "steps": [
                { "type": "tool_call", "id": "w1", "name": "fs",
                  "fragments": ["{\"command\": \"create\", \"path\": \"notes.md\", \"file_text\": \"hello\"}"] }
            ] }
        ]),
    );
    // The restarted server's model goes on where the first one stopped.
    let rest = dir.path().join("rest.json");
    write_script(
        &rest,
        json!([{ "steps": [{ "type": "text", "chunks": ["Written."] }] }]),
    );
    let repo = dir.path().join("repo");
    let token = create_user(&db);
    let mut first = serve(&db, &script, "first");
    let task_id = task(&first.address, &token, &repo);
    let (status, run) = http(
        &first.address,
        &token,
        "POST",
        &format!("/api/tasks/{task_id}/agent-runs"),
        Some(json!({ "agentType": "planification" })),
    );
    assert_eq!(status, 201, "{run}");
    let run_id = run["id"].as_str().unwrap().to_owned();
    let waiting = until_status(&first.address, &token, &run_id, "waiting");
    assert_eq!(waiting["pending"][0]["call_id"], "w1");
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    assert!(!repo.join("notes.md").exists());

    let mut second = serve(&db, &rest, "second");
    let (status, pending) = http(
        &second.address,
        &token,
        "GET",
        &format!("/api/agent-runs/{run_id}/pending"),
        None,
    );
    assert_eq!(status, 200, "{pending}");
    assert_eq!(pending["agent_run"]["status"], "waiting");
    assert_eq!(pending["pending"][0]["call_id"], "w1");
    assert_eq!(pending["pending"][0]["kind"], "approval");
    let (status, decided) = http(
        &second.address,
        &token,
        "POST",
        &format!("/api/agent-runs/{run_id}/decisions"),
        Some(json!({ "decisions": [{ "call_id": "w1", "decision": "approve" }] })),
    );
    assert_eq!(status, 200, "{decided}");
    assert_eq!(decided["resumed"], true);
    until_status(&second.address, &token, &run_id, "completed");
    assert_eq!(
        std::fs::read_to_string(repo.join("notes.md")).unwrap(),
        "hello"
    );

    let store = agentloop_storage::open_store(&db).await.unwrap();
    let events = store.list_events(&run_id, None, 10_000).await.unwrap();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
    let statuses: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Finished(FinishedEvent { result }) if e.path.is_root() => {
                Some(result.status.name())
            }
            _ => None,
        })
        .collect();
    assert_eq!(statuses, ["suspended", "complete"]);

    let term = Command::new("kill")
        .args(["-TERM", &second.child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    assert!(second.child.wait().unwrap().success());
}

#[tokio::test]
async fn two_servers_on_postgres_share_a_chain_and_run_each_step_once() {
    let Ok(admin_url) = std::env::var("AGENTLOOP_TEST_POSTGRES_URL") else {
        println!("skipping: AGENTLOOP_TEST_POSTGRES_URL is not set");
        return;
    };
    let name = format!("agentloop_cli_{}", std::process::id());
    // A plain connection: the admin database itself is never migrated.
    let mut admin = sqlx::PgConnection::connect(&admin_url).await.unwrap();
    sqlx_exec(&mut admin, &format!("DROP DATABASE IF EXISTS \"{name}\"")).await;
    sqlx_exec(&mut admin, &format!("CREATE DATABASE \"{name}\"")).await;
    let base = admin_url
        .rsplit_once('/')
        .map_or(admin_url.as_str(), |(b, _)| b);
    let url = format!("{base}/{name}");

    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    let finish = json!({ "steps": [
        { "type": "tool_call", "id": "c1", "name": "complete_workflow", "fragments": ["{}"] }
    ] });
    write_script(
        &script,
        json!([
            slow_text(" one."),
            slow_text(" two."),
            finish,
            slow_text(" end.")
        ]),
    );
    let token = create_user(&url);
    let mut a = serve(&url, &script, "a");
    let mut b = serve(&url, &script, "b");
    let task_id = task(&a.address, &token, &dir.path().join("repo"));
    let (status, _) = http(
        &a.address,
        &token,
        "POST",
        &format!("/api/tasks/{task_id}/agent-runs"),
        Some(json!({ "agentType": "implementation" })),
    );
    assert_eq!(status, 201);
    let store = agentloop_storage::open_store(&url).await.unwrap();
    // Stop `a` mid-chain: it hands its run back and `b` continues the chain.
    for _ in 0..600 {
        if !store.list_agent_runs(&task_id).await.unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let term = Command::new("kill")
        .args(["-TERM", &a.child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    assert!(a.child.wait().unwrap().success());
    wait_settled(&*store, &task_id, 3).await;
    let runs = store.list_agent_runs(&task_id).await.unwrap();
    assert!(runs.len() >= 3);
    assert_eq!(runs[0].agent_type, AgentType::Implementation);
    assert_eq!(runs[1].agent_type, AgentType::Review);
    assert_logs_whole(&*store, &task_id).await;
    b.child.kill().unwrap();
    b.child.wait().unwrap();
    sqlx_exec(
        &mut admin,
        &format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"),
    )
    .await;
}

async fn sqlx_exec(admin: &mut sqlx::PgConnection, sql: &str) {
    sqlx::raw_sql(sql).execute(admin).await.unwrap();
}

/// Reads a run's SSE stream until it closes; returns the event names and
/// data, and how long the stream stayed open after `since`.
fn read_sse(address: &str, token: &str, run_id: &str, cancel_at: &str) -> Vec<(String, Value)> {
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
    let mut cancelled = false;
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
            if name == cancel_at && !cancelled {
                cancelled = true;
                let (status, body) = http(
                    address,
                    token,
                    "POST",
                    &format!("/api/agent-runs/{run_id}/cancel"),
                    Some(json!({})),
                );
                assert_eq!(status, 200, "{body}");
            }
        }
    }
}

#[tokio::test]
async fn a_cancel_stops_the_agent_and_closes_the_stream() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([
            { "steps": [
                { "type": "text", "chunks": ["working "] },
                { "type": "delay", "ms": 3000 },
                { "type": "tool_call", "id": "c1", "name": "fs",
                  "fragments": ["{\"command\": \"create\", \"path\": \"effect.txt\", \"file_text\": \"late\"}"] }
            ] },
            { "steps": [{ "type": "text", "chunks": ["never requested"] }] }
        ]),
    );
    let repo = dir.path().join("repo");
    let token = create_user(&db);
    let mut server = serve(&db, &script, "only");
    // Writes run without asking: a file on disk would show the stop came too late.
    let task_id = task_with(
        &server.address,
        &token,
        &repo,
        json!({ "approvals": { "*": "never" } }),
    );
    let (status, run) = http(
        &server.address,
        &token,
        "POST",
        &format!("/api/tasks/{task_id}/agent-runs"),
        Some(json!({ "agentType": "implementation" })),
    );
    assert_eq!(status, 201, "{run}");
    let run_id = run["id"].as_str().unwrap().to_owned();
    // The stream must close well before the scripted delay would have ended.
    let started = std::time::Instant::now();
    let events = read_sse(&server.address, &token, &run_id, "first_chunk");
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "the stream closed only after {:?}",
        started.elapsed()
    );
    let finished: Vec<_> = events.iter().filter(|(n, _)| n == "finished").collect();
    assert_eq!(finished.len(), 1, "{events:?}");
    assert_eq!(finished[0].1["result"]["status"], "cancelled");
    let (_, record) = http(
        &server.address,
        &token,
        "GET",
        &format!("/api/agent-runs/{run_id}"),
        None,
    );
    assert_eq!(record["status"], "cancelled");
    assert_eq!(record["stopped_by"], "cancel");
    let (status, again) = http(
        &server.address,
        &token,
        "POST",
        &format!("/api/agent-runs/{run_id}/cancel"),
        Some(json!({})),
    );
    assert_eq!(
        (status, again["agentRun"]["status"].as_str()),
        (409, Some("cancelled"))
    );

    // Past the point where the tool call would have come, then stopped.
    let term = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    assert!(server.child.wait().unwrap().success());
    let store = agentloop_storage::open_store(&db).await.unwrap();
    let logged = store.list_events(&run_id, None, 10_000).await.unwrap();
    let requests = logged
        .iter()
        .filter(|e| e.path.is_root() && e.kind.name() == "streaming_start")
        .count();
    assert_eq!(requests, 1, "no model request after the cancel");
    assert!(logged.iter().all(|e| e.kind.name() != "tool_start"));
    assert!(!repo.join("effect.txt").exists());
}

/// The folder of the Python test tools `.ci/run` installs (schemathesis,
/// openapi-spec-validator), if present.
fn python_tools() -> Option<std::path::PathBuf> {
    let dir = match std::env::var_os("AGENTLOOP_TEST_PYTHON_BIN") {
        Some(dir) => std::path::PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-tools/py/bin"),
    };
    dir.join("schemathesis").exists().then_some(dir)
}

#[tokio::test]
async fn the_openapi_description_validates_and_a_fuzzer_finds_nothing() {
    let Some(tools) = python_tools() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "schemathesis is not installed; .ci/run installs it into target/test-tools/py"
        );
        eprintln!(
            "SKIPPED the OpenAPI fuzz test: schemathesis is not installed \
             (run .ci/run, or install .ci/python-test-tools.txt into target/test-tools/py)"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([{ "steps": [{ "type": "text", "chunks": ["Done."] }] }]),
    );
    let token = create_user(&db);
    let mut server = serve(&db, &script, "fuzzed");
    let document = dir.path().join("openapi.json");
    let (status, body) = http(&server.address, &token, "GET", "/api/openapi.json", None);
    assert_eq!(status, 200);
    std::fs::write(&document, body.to_string()).unwrap();
    let validated = Command::new(tools.join("openapi-spec-validator"))
        .arg(&document)
        .output()
        .unwrap();
    assert!(
        validated.status.success(),
        "{}{}",
        String::from_utf8_lossy(&validated.stdout),
        String::from_utf8_lossy(&validated.stderr)
    );
    let fuzzed = Command::new(tools.join("schemathesis"))
        // It keeps a cache in its working folder: not in the repository.
        .current_dir(dir.path())
        .args([
            "run",
            &format!("http://{}/api/openapi.json", server.address),
            "--header",
            &format!("Authorization: Bearer {token}"),
            "--checks",
            "all",
            "--max-examples",
            "25",
            "--seed",
            "20261122",
            "--no-color",
        ])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&fuzzed.stdout);
    assert!(
        fuzzed.status.success(),
        "{report}{}",
        String::from_utf8_lossy(&fuzzed.stderr)
    );
    assert!(report.contains("passed"), "{report}");
    server.child.kill().unwrap();
    server.child.wait().unwrap();
}

#[tokio::test]
async fn logs_and_metrics_tell_an_operator_what_happened_and_keep_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([
            { "steps": [
                { "type": "tool_call", "id": "c1", "name": "fs",
                  "fragments": ["{\"command\": \"view\", \"path\": \"/nope.txt\"}"] }
              ],
              "usage": { "input_tokens": 12, "output_tokens": 3 } },
            { "steps": [{ "type": "text", "chunks": ["Planned."] }] }
        ]),
    );
    let token = create_user(&db);
    let mut server = serve_with(
        &db,
        &script,
        "observed",
        &["--log-format", "json", "--metrics-bind", "127.0.0.1:0"],
    );
    let task_id = task(&server.address, &token, &dir.path().join("repo"));
    let (status, run) = http(
        &server.address,
        &token,
        "POST",
        &format!("/api/tasks/{task_id}/agent-runs"),
        Some(json!({ "agentType": "planification" })),
    );
    assert_eq!(status, 201, "{run}");
    let run_id = run["id"].as_str().unwrap().to_owned();
    let events = read_sse(&server.address, &token, &run_id, "none");
    assert!(events.iter().any(|(n, _)| n == "finished"));
    // A token in a URL is refused outside the WebSocket route, and not logged.
    let (status, _) = http(
        &server.address,
        "",
        "GET",
        &format!("/api/me?token={token}"),
        None,
    );
    assert_eq!(status, 401);

    let metrics_address = server
        .log
        .lock()
        .unwrap()
        .iter()
        .find_map(|l| {
            l.split("metrics on http://")
                .nth(1)
                .map(|r| r.trim_end_matches("/metrics").to_owned())
        })
        .expect("the metrics address is printed");
    let mut scrape = String::new();
    for _ in 0..200 {
        let mut stream = TcpStream::connect(&metrics_address).unwrap();
        write!(
            stream,
            "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        scrape.clear();
        stream.read_to_string(&mut scrape).unwrap();
        if scrape.contains("agentloop_runs_finished_total{status=\"completed\"} 1") {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    for expected in [
        "agentloop_runs_finished_total{status=\"completed\"} 1",
        "agentloop_tool_errors_total{tool=\"fs\"} 1",
        "agentloop_tokens_total{provider=\"anthropic-messages\",model=\"scripted\",kind=\"input\"} 12",
        "agentloop_model_turn_seconds_count{provider=\"anthropic-messages\",model=\"scripted\"} 2",
        "agentloop_tool_call_seconds_count{tool=\"fs\"} 1",
        "agentloop_sse_clients 0",
        "agentloop_http_requests_total{method=\"POST\",route=\"/api/tasks/{task_id}/agent-runs\",status=\"201\"} 1",
    ] {
        assert!(
            scrape.contains(expected),
            "missing {expected} in:\n{scrape}"
        );
    }

    let term = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    assert!(server.child.wait().unwrap().success());
    let log = server.log.lock().unwrap().join("\n");
    assert!(!log.contains(&token), "the bearer token was logged");
    let lines: Vec<Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let created = lines
        .iter()
        .find(|l| {
            l["fields"]["message"] == "request"
                && l["span"]["http.route"] == "/api/tasks/{task_id}/agent-runs"
        })
        .unwrap_or_else(|| panic!("no request line for the run in:\n{log}"));
    assert_eq!(created["fields"]["http.response.status_code"], 201);
    assert_eq!(created["span"]["http.request.method"], "POST");
    assert!(created["span"]["user_id"].is_string(), "{created}");
    assert!(created["span"]["request_id"].is_string(), "{created}");
    assert!(
        lines
            .iter()
            .any(|l| l["fields"]["message"] == "agent run status"
                && l["fields"]["status"] == "completed"
                && l["fields"]["agent_run_id"] == run_id.as_str()),
        "no run status line in:\n{log}"
    );
}
