//! `agentloop serve`'s audit log records what the protocol endpoints do,
//! as it records REST changes: an A2A `SendMessage` that starts a task, one
//! that steers the working task, and `CancelTask`; over `/mcp` (the
//! reference Python client), `create_task` and `start_agent_run`. Each
//! entry names the user, the project, the run or task acted on, the
//! client's address and the protocol and method, and holds neither the
//! message nor the token. On SQLite and PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::create_user;
use common::served::*;
use serde_json::{Value, json};

/// What a steering message says (it must not reach the audit log).
const STEER: &str = "Mind the staging database.";

fn python() -> Option<PathBuf> {
    common::python::python_with("mcp", "the Python MCP SDK")
}

/// The entries of the project's audit log, oldest first.
fn audit(address: &str, token: &str, project: &str) -> Vec<Value> {
    let (status, log) = http(
        address,
        token,
        "GET",
        &format!("/api/audit?project_id={project}"),
        None,
    );
    assert_eq!(status, 200, "{log}");
    log["entries"].as_array().unwrap().clone()
}

/// The entries recorded `via` a protocol, as (action, method, target).
fn via(entries: &[Value], protocol: &str) -> Vec<(String, String, String)> {
    entries
        .iter()
        .filter(|e| e["detail"]["via"] == protocol)
        .map(|e| {
            (
                e["action"].as_str().unwrap().to_owned(),
                e["detail"]["method"].as_str().unwrap().to_owned(),
                e["target"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn protocol_calls_are_audited(db: &str, dir: &Path, mcp: Option<&Path>) {
    let script = dir.join("script.json");
    write_script(
        &script,
        json!([
            // The A2A task's run works for a minute (it is cancelled).
            { "steps": [
                { "type": "text", "chunks": ["Looking"] },
                { "type": "delay", "ms": 60000 }
            ] },
            // The run started over MCP.
            text("Planned.")
        ]),
    );
    let token = create_user(db, "ada");
    let server = serve(db, &script, "audit");
    let address = server.address.clone();
    let project = project(&address, &token, &dir.join("repo"), json!({}));
    let a2a = |id: u64, method: &str, params: Value| {
        let (status, answer) = http(
            &address,
            &token,
            "POST",
            "/a2a",
            Some(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })),
        );
        assert_eq!(status, 200, "{answer}");
        assert!(answer["error"].is_null(), "{answer}");
        answer
    };

    // A2A: a new task, a message to it while it works, a cancel.
    let started = a2a(
        1,
        "SendMessage",
        json!({ "tenant": project, "configuration": { "returnImmediately": true },
                "message": { "messageId": "a1", "role": "ROLE_USER",
                             "parts": [{ "text": "Look around." }] } }),
    );
    let run = started["result"]["task"]["id"].as_str().unwrap().to_owned();
    let task = started["result"]["task"]["contextId"]
        .as_str()
        .unwrap()
        .to_owned();
    until_status(&address, &token, &run, "running");
    a2a(
        2,
        "SendMessage",
        json!({ "configuration": { "returnImmediately": true },
                "message": { "messageId": "a2", "role": "ROLE_USER", "taskId": run,
                             "parts": [{ "text": STEER }] } }),
    );
    a2a(3, "CancelTask", json!({ "id": run }));
    until_status(&address, &token, &run, "cancelled");

    let entries = audit(&address, &token, &project);
    assert_eq!(
        via(&entries, "a2a"),
        vec![
            ("task.create".to_owned(), "SendMessage".to_owned(), task),
            (
                "run.start".to_owned(),
                "SendMessage".to_owned(),
                run.clone()
            ),
            (
                "run.message".to_owned(),
                "SendMessage".to_owned(),
                run.clone()
            ),
            ("run.cancel".to_owned(), "CancelTask".to_owned(), run),
        ],
        "{entries:#?}"
    );
    for entry in entries.iter().filter(|e| e["detail"]["via"] == "a2a") {
        assert_eq!(entry["project_id"], project.as_str(), "{entry}");
        assert!(entry["user_id"].is_string(), "{entry}");
        assert_eq!(entry["address"], "127.0.0.1", "{entry}");
    }
    let written = Value::Array(entries).to_string();
    assert!(!written.contains(STEER), "no message text: {written}");
    assert!(!written.contains(&token), "no token: {written}");

    // MCP: a task created and a run started by the reference client.
    let Some(python) = mcp else { return };
    let output = Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_serve/client.py"))
        .args(["http", &format!("http://{address}/mcp"), "projects"])
        .env("MCP_BEARER", &token)
        .env("MCP_PROJECT", &project)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the client failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap();
    let task = seen["task"]["structured"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let entries = audit(&address, &token, &project);
    let mcp = via(&entries, "mcp");
    assert_eq!(mcp.len(), 2, "{entries:#?}");
    assert_eq!(
        mcp[0],
        ("task.create".to_owned(), "create_task".to_owned(), task),
        "{entries:#?}"
    );
    assert_eq!(mcp[1].0, "run.start");
    assert_eq!(mcp[1].1, "start_agent_run");
    let (status, run) = http(
        &address,
        &token,
        "GET",
        &format!("/api/agent-runs/{}", mcp[1].2),
        None,
    );
    assert_eq!(status, 200, "the entry names the run started: {run}");
    // Reading (list_projects, get_agent_run) is not recorded.
    assert!(
        !Value::Array(entries).to_string().contains("get_agent_run"),
        "reads are not audited"
    );
}

#[test]
fn a2a_and_mcp_calls_that_act_are_in_the_audit_log_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let python = python();
    protocol_calls_are_audited(&db, dir.path(), python.as_deref());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_calls_that_act_are_in_the_audit_log_on_postgres() {
    let Ok(admin_url) = std::env::var("AGENTLOOP_TEST_POSTGRES_URL") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs AGENTLOOP_TEST_POSTGRES_URL"
        );
        println!("skipping: AGENTLOOP_TEST_POSTGRES_URL is not set");
        return;
    };
    let name = format!("agentloop_cli_protocol_audit_{}", std::process::id());
    let database = ScratchDatabase::create(&admin_url, &name).await;
    let dir = tempfile::tempdir().unwrap();
    let url = database.url.clone();
    let path = dir.path().to_owned();
    tokio::task::spawn_blocking(move || protocol_calls_are_audited(&url, &path, None))
        .await
        .unwrap();
    database.remove().await;
}
