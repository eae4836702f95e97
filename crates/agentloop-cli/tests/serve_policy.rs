//! `agentloop serve` over HTTP: Mark Done force-completes running and
//! waiting runs (`completed`, stopped by `workflow_complete`, in the run,
//! its record and the terminal event of its stream) on SQLite and
//! PostgreSQL; and the approval policy: by default a chain writes files
//! and goes on to review with no person, with `--approvals ask` (or a
//! project set to `ask`) the same write waits.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use agentloop_storage::model::RunStatus;
use common::served::*;
use common::{agentloop, create_user};
use serde_json::{Value, json};

/// A turn that streams a little, then takes long enough to be stopped in
/// the middle, then would write `path`.
fn slow_write(id: &str, path: &str) -> Value {
    let input = json!({ "command": "create", "path": path, "file_text": "too late" }).to_string();
    json!({ "steps": [
        { "type": "text", "chunks": ["working "] },
        { "type": "delay", "ms": 3000 },
        { "type": "tool_call", "id": id, "name": "fs", "fragments": [input] }
    ] })
}

fn mark_done(address: &str, token: &str, task_id: &str) {
    let (status, body) = http(
        address,
        token,
        "PUT",
        &format!("/api/tasks/{task_id}/workflow-complete"),
        Some(json!({ "complete": true })),
    );
    assert_eq!(status, 200, "{body}");
}

/// The run, its stream's terminal event and its stored record all say
/// Mark Done force-completed it.
async fn assert_force_completed(
    address: &str,
    token: &str,
    db: &str,
    run_id: &str,
    events: &[(String, Value)],
) {
    let (_, run) = http(
        address,
        token,
        "GET",
        &format!("/api/agent-runs/{run_id}"),
        None,
    );
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["stopped_by"], "workflow_complete", "{run}");
    assert_eq!(
        run["stop_message"],
        "stopped because its task was marked done"
    );
    let terminal = terminal_events(events);
    let last = terminal.last().expect("a terminal event");
    assert_eq!(last["result"]["status"], "complete", "{last}");
    assert_eq!(last["result"]["stopped_by"], "workflow_complete", "{last}");
    assert_eq!(
        last["result"]["stop_message"],
        "stopped because its task was marked done"
    );
    assert_eq!(
        events.last().map(|(name, _)| name.as_str()),
        Some("finished"),
        "nothing after the terminal event"
    );
    let store = agentloop_storage::open_store(db).await.unwrap();
    let record = store.get_run(run_id).await.unwrap();
    assert_eq!(record.status, RunStatus::Completed);
    assert_eq!(record.result.unwrap()["stopped_by"], "workflow_complete");
}

async fn mark_done_force_completes_running_and_waiting_runs(db: &str, dir: &Path) {
    let script = dir.join("script.json");
    write_script(
        &script,
        json!([
            slow_write("c1", "early.txt"),
            fs_create("w1", "waited.md", "never"),
            slow_write("c3", "late.txt"),
            fs_create("w4", "stranded.md", "never"),
        ]),
    );
    let token = create_user(db, "ada");
    let mut server = serve(db, &script, "only");
    let address = server.address.clone();

    // A running run, marked done on the API while it streams.
    let running = task(&address, &token, &dir.join("one"));
    let run1 = start_run(&address, &token, &running, "implementation");
    let events = read_sse_acting(&address, &token, &run1, "first_chunk", || {
        mark_done(&address, &token, &running);
    });
    assert_eq!(terminal_events(&events).len(), 1, "{events:?}");
    assert_force_completed(&address, &token, db, &run1, &events).await;
    let (_, runs) = http(
        &address,
        &token,
        "GET",
        &format!("/api/tasks/{running}/agent-runs"),
        None,
    );
    assert_eq!(runs.as_array().unwrap().len(), 1, "no chained run: {runs}");

    // A run waiting for approval, marked done.
    let asking = task_with(
        &address,
        &token,
        &dir.join("two"),
        json!({ "approvals": "ask" }),
    );
    let run2 = start_run(&address, &token, &asking, "planification");
    until_status(&address, &token, &run2, "waiting");
    mark_done(&address, &token, &asking);
    let events = whole_stream(&address, &token, &run2);
    let statuses: Vec<&Value> = terminal_events(&events)
        .iter()
        .map(|e| &e["result"]["status"])
        .collect();
    assert_eq!(statuses, [&json!("suspended"), &json!("complete")]);
    assert_force_completed(&address, &token, db, &run2, &events).await;

    // A running run, marked done by `agentloop complete-workflow`.
    let third = task(&address, &token, &dir.join("three"));
    let run3 = start_run(&address, &token, &third, "implementation");
    let events = read_sse_acting(&address, &token, &run3, "first_chunk", || {
        let output = agentloop()
            .args(["complete-workflow", &third, "--db", db])
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
    });
    assert_eq!(terminal_events(&events).len(), 1, "{events:?}");
    assert_force_completed(&address, &token, db, &run3, &events).await;

    // A waiting run marked done by `agentloop complete-workflow`, which
    // cannot close what it waits on: the server does, and logs the end.
    let fourth = task_with(
        &address,
        &token,
        &dir.join("four"),
        json!({ "approvals": "ask" }),
    );
    let run4 = start_run(&address, &token, &fourth, "planification");
    until_status(&address, &token, &run4, "waiting");
    let output = agentloop()
        .args(["complete-workflow", &fourth, "--db", db])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let events = loop {
        let events = whole_stream(&address, &token, &run4);
        if terminal_events(&events).len() == 2 || std::time::Instant::now() > deadline {
            break events;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_force_completed(&address, &token, db, &run4, &events).await;

    let term = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    assert!(server.child.wait().unwrap().success());
    for (folder, file) in [
        ("one", "early.txt"),
        ("two", "waited.md"),
        ("three", "late.txt"),
        ("four", "stranded.md"),
    ] {
        assert!(!dir.join(folder).join(file).exists(), "{file} was written");
    }
}

#[tokio::test]
async fn mark_done_force_completes_running_and_waiting_runs_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    mark_done_force_completes_running_and_waiting_runs(&db, dir.path()).await;
}

#[tokio::test]
async fn mark_done_force_completes_running_and_waiting_runs_on_postgres() {
    let Ok(admin_url) = std::env::var("AGENTLOOP_TEST_POSTGRES_URL") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs AGENTLOOP_TEST_POSTGRES_URL"
        );
        println!("skipping: AGENTLOOP_TEST_POSTGRES_URL is not set");
        return;
    };
    let name = format!("agentloop_cli_mark_done_{}", std::process::id());
    let database = ScratchDatabase::create(&admin_url, &name).await;
    let dir = tempfile::tempdir().unwrap();
    mark_done_force_completes_running_and_waiting_runs(&database.url, dir.path()).await;
    database.remove().await;
}

/// Polls the task's agent runs over HTTP until `count` exist and none
/// runs (bounded).
fn settled_runs(address: &str, token: &str, task_id: &str, count: usize) -> Vec<Value> {
    let mut last = Value::Null;
    for _ in 0..600 {
        let (_, runs) = http(
            address,
            token,
            "GET",
            &format!("/api/tasks/{task_id}/agent-runs"),
            None,
        );
        let listed = runs.as_array().cloned().unwrap_or_default();
        if listed.len() >= count && listed.iter().all(|r| r["status"] != "running") {
            return listed;
        }
        last = runs;
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the runs of task {task_id} never settled: {last}");
}

/// The project a task belongs to, as the API shows it.
fn project_of(address: &str, token: &str, task_id: &str) -> Value {
    let (_, task) = http(
        address,
        token,
        "GET",
        &format!("/api/tasks/{task_id}"),
        None,
    );
    let project_id = task["project_id"].as_str().unwrap();
    let (status, project) = http(
        address,
        token,
        "GET",
        &format!("/api/projects/{project_id}"),
        None,
    );
    assert_eq!(status, 200, "{project}");
    project
}

#[test]
fn by_default_a_chain_writes_files_and_goes_on_to_review_with_no_person() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    let finish = json!({ "steps": [
        { "type": "tool_call", "id": "r2", "name": "complete_workflow", "fragments": ["{}"] }
    ] });
    write_script(
        &script,
        json!([
            fs_create("i1", "feature.md", "implemented"),
            { "steps": [{ "type": "text", "chunks": ["Implemented."] }] },
            fs_create("r1", "review.md", "looks good"),
            finish,
            { "steps": [{ "type": "text", "chunks": ["Reviewed."] }] },
        ]),
    );
    let repo = dir.path().join("repo");
    let token = create_user(&db, "ada");
    let mut server = serve(&db, &script, "only");
    let address = server.address.clone();
    let task_id = task(&address, &token, &repo);
    let project = project_of(&address, &token, &task_id);
    assert_eq!(project["approvals"], "unattended", "{project}");
    assert_eq!(project["approvals_source"], "server", "{project}");
    start_run(&address, &token, &task_id, "implementation");

    let runs = settled_runs(&address, &token, &task_id, 2);
    let kinds: Vec<(&Value, &Value)> = runs
        .iter()
        .map(|r| (&r["agent_type"], &r["status"]))
        .collect();
    assert_eq!(
        kinds,
        [
            (&json!("implementation"), &json!("completed")),
            (&json!("review"), &json!("completed")),
        ],
        "{runs:?}"
    );
    for run in &runs {
        let run_id = run["id"].as_str().unwrap();
        assert_eq!(run["stopped_by"], Value::Null, "{run}");
        let events = whole_stream(&address, &token, run_id);
        assert!(
            !events.iter().any(|(name, _)| name == "approval_requested"),
            "no call waited: {events:?}"
        );
        let terminal = terminal_events(&events);
        assert_eq!(terminal.len(), 1, "{events:?}");
        assert_eq!(terminal[0]["result"]["status"], "complete");
        assert!(terminal[0]["result"].get("stopped_by").is_none());
    }
    assert_eq!(
        std::fs::read_to_string(repo.join("feature.md")).unwrap(),
        "implemented"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("review.md")).unwrap(),
        "looks good"
    );
    let (_, task) = http(
        &address,
        &token,
        "GET",
        &format!("/api/tasks/{task_id}"),
        None,
    );
    assert_eq!(task["workflow_complete"], true, "{task}");
    server.child.kill().unwrap();
    server.child.wait().unwrap();
}

/// Starts an implementation run whose first call writes a file and checks
/// that it waits for a person and wrote nothing.
fn the_write_waits(address: &str, token: &str, task_id: &str, repo: &Path) {
    let run_id = start_run(address, token, task_id, "implementation");
    let waiting = until_status(address, token, &run_id, "waiting");
    assert_eq!(waiting["pending"][0]["call_id"], "w1", "{waiting}");
    assert_eq!(waiting["pending"][0]["kind"], "approval", "{waiting}");
    assert!(!repo.join("notes.md").exists());
}

#[test]
fn with_approvals_ask_the_same_write_waits() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    write_script(&script, json!([fs_create("w1", "notes.md", "hello")]));
    let repo = dir.path().join("repo");
    let token = create_user(&db, "ada");
    let mut server = serve_with(&db, &script, "only", &["--approvals", "ask"]);
    // The line giving the address is logged as the address is read.
    let says = |server: &Served| {
        server
            .log
            .lock()
            .unwrap()
            .iter()
            .any(|line| line.contains("approvals: ask"))
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !says(&server) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(says(&server), "the server says its policy");
    let task_id = task(&server.address, &token, &repo);
    let project = project_of(&server.address, &token, &task_id);
    assert_eq!(project["approvals"], "ask", "{project}");
    assert_eq!(project["approvals_source"], "server", "{project}");
    the_write_waits(&server.address, &token, &task_id, &repo);
    server.child.kill().unwrap();
    server.child.wait().unwrap();

    let refused = agentloop()
        .args(["serve", "--db", &db, "--approvals", "sometimes"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("ask") && stderr.contains("unattended"),
        "{stderr}"
    );
}

#[test]
fn a_project_set_to_ask_waits_on_an_unattended_server() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    write_script(&script, json!([fs_create("w1", "notes.md", "hello")]));
    let repo = dir.path().join("repo");
    let token = create_user(&db, "ada");
    let mut server = serve(&db, &script, "only");
    let task_id = task_with(
        &server.address,
        &token,
        &repo,
        json!({ "approvals": "ask" }),
    );
    let project = project_of(&server.address, &token, &task_id);
    assert_eq!(project["approvals"], "ask", "{project}");
    assert_eq!(project["approvals_source"], "project", "{project}");
    the_write_waits(&server.address, &token, &task_id, &repo);
    server.child.kill().unwrap();
    server.child.wait().unwrap();
}
