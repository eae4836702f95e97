//! `agentloop serve --engine restate` as processes, over HTTP, against a
//! real `restate-server` (installed by `scripts/install-restate.sh`; under
//! `CI` a missing one fails): a chain (implementation → review) completes;
//! a worker SIGKILLed mid-run is restarted and the run completes with its
//! tool's effect once; a cancel ends a run within a second.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "../../agentloop-restate/tests/support/restate_server.rs"]
mod restate_server;

use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use common::create_user;
use common::served::*;
use restate_server::RestateServer;
use serde_json::{Value, json};

fn fs_create(id: &str, path: &str, text: &str) -> Value {
    let input = json!({ "command": "create", "path": path, "file_text": text }).to_string();
    json!({ "steps": [{ "type": "tool_call", "id": id, "name": "fs", "fragments": [input] }] })
}

fn text(text: &str) -> Value {
    json!({ "steps": [{ "type": "text", "chunks": [text] }] })
}

fn finish_workflow(id: &str) -> Value {
    json!({ "steps": [
        { "type": "tool_call", "id": id, "name": "complete_workflow", "fragments": ["{}"] }
    ] })
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A worker: `agentloop serve` on `--engine restate`, its Restate service
/// endpoint on `endpoint` (a port kept across restarts, as Restate calls
/// the registered URL).
fn worker(db: &str, script: &Path, restate: &RestateServer, endpoint: u16) -> Served {
    let bind = format!("127.0.0.1:{endpoint}");
    serve_with(
        db,
        script,
        "worker-1",
        &[
            "--engine",
            "restate",
            "--restate-ingress",
            &restate.ingress,
            "--restate-admin",
            &restate.admin,
            "--restate-bind",
            &bind,
        ],
    )
}

/// Polls the task's agent runs until `count` exist and none runs.
fn settled_runs(address: &str, token: &str, task_id: &str, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
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
        assert!(
            Instant::now() < deadline,
            "the runs of task {task_id} never settled: {runs}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Follows the run's SSE stream until an event carries `text`; the
/// stream may then break (its server is killed).
fn until_streamed(address: &str, token: &str, run_id: &str, text: &str) {
    use std::io::{BufRead, BufReader, Write};
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(
        stream,
        "GET /api/agent-runs/{run_id}/events HTTP/1.1\r\nHost: {address}\r\n\
         Authorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    loop {
        line.clear();
        let read = reader.read_line(&mut line).unwrap();
        assert!(read > 0, "the stream ended before {text:?} was streamed");
        if line.starts_with("data:") && line.contains(text) {
            return;
        }
    }
}

fn whole_stream(address: &str, token: &str, run_id: &str) -> Vec<(String, Value)> {
    read_sse_acting(address, token, run_id, "\u{0}never", || {})
}

fn root_finished(events: &[(String, Value)]) -> Vec<&Value> {
    events
        .iter()
        .filter(|(name, data)| name == "finished" && data.get("path").is_none())
        .map(|(_, data)| data)
        .collect()
}

/// How many tool results answer `call_id` in the run's event log.
fn tool_results(events: &[(String, Value)], call_id: &str) -> usize {
    events
        .iter()
        .filter(|(name, data)| {
            name == "message_created"
                && data.to_string().contains("\"tool_result\"")
                && data
                    .to_string()
                    .contains(&format!("\"tool_use_id\":\"{call_id}\""))
        })
        .count()
}

/// The `step` entries of the journal of run `run_id`'s workflow.
fn journaled_steps(restate: &RestateServer, run_id: &str) -> usize {
    assert!(
        run_id.chars().all(|c| c.is_ascii_alphanumeric()),
        "{run_id}"
    );
    let rows = restate_server::query(
        &restate.admin,
        &format!(
            "SELECT j.name FROM sys_journal j JOIN sys_invocation i ON j.id = i.id \
             WHERE i.target_service_name = 'AgentRun' AND i.target_service_key = '{run_id}' \
             AND j.entry_type = 'Command: Run'"
        ),
    );
    rows.matches("\"step\"").count()
}

fn chain_by_kind(runs: &[Value]) -> Vec<(String, String)> {
    let mut kinds: Vec<(String, String)> = runs
        .iter()
        .map(|r| {
            (
                r["agent_type"].as_str().unwrap_or_default().to_owned(),
                r["status"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    kinds.sort();
    kinds
}

#[test]
fn a_chain_completes_on_restate() {
    let Some(restate) = RestateServer::start("serve-chain") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([
            fs_create("i1", "feature.md", "implemented"),
            text("Implemented."),
            finish_workflow("r1"),
            text("Reviewed."),
        ]),
    );
    let repo = dir.path().join("repo");
    let token = create_user(&db, "ada");
    let server = worker(&db, &script, &restate, free_port());
    let address = server.address.clone();
    let task_id = task(&address, &token, &repo);
    start_run(&address, &token, &task_id, "implementation");

    let runs = settled_runs(&address, &token, &task_id, 2);
    assert_eq!(
        chain_by_kind(&runs),
        [
            ("implementation".to_owned(), "completed".to_owned()),
            ("review".to_owned(), "completed".to_owned()),
        ],
        "{runs:?}"
    );
    for run in &runs {
        let events = whole_stream(&address, &token, run["id"].as_str().unwrap());
        let finished = root_finished(&events);
        assert_eq!(finished.len(), 1, "{events:?}");
        assert_eq!(finished[0]["result"]["status"], "complete", "{events:?}");
    }
    assert_eq!(
        std::fs::read_to_string(repo.join("feature.md")).unwrap(),
        "implemented"
    );
    let (_, task) = http(
        &address,
        &token,
        "GET",
        &format!("/api/tasks/{task_id}"),
        None,
    );
    assert_eq!(task["workflow_complete"], true, "{task}");
    // Each run is its workflow in Restate, each model turn and tool step
    // a journaled step: turn (a call), tools, turn (the answer).
    for run in &runs {
        assert_eq!(
            journaled_steps(&restate, run["id"].as_str().unwrap()),
            3,
            "{run}"
        );
    }
}

#[test]
fn a_worker_killed_mid_run_is_restarted_and_the_run_completes_with_its_tool_run_once() {
    let Some(restate) = RestateServer::start("serve-kill") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let repo = dir.path().join("repo");
    let token = create_user(&db, "ada");
    let endpoint = free_port();
    // The first worker writes the file, then dies while the next turn
    // streams.
    let first = dir.path().join("first.json");
    write_script(
        &first,
        json!([
            fs_create("i1", "effect.md", "once"),
            { "steps": [
                { "type": "text", "chunks": ["Half "] },
                { "type": "delay", "ms": 60000 },
                { "type": "text", "chunks": ["never sent."] }
            ] },
        ]),
    );
    let mut server = worker(&db, &first, &restate, endpoint);
    let address = server.address.clone();
    let task_id = task(&address, &token, &repo);
    let run_id = start_run(&address, &token, &task_id, "planification");
    // SIGKILLed once the next turn has streamed "Half " and waits.
    until_streamed(&address, &token, &run_id, "Half ");
    server.child.kill().unwrap();
    server.child.wait().unwrap();

    // The restarted worker plays the rest of the conversation.
    let second = dir.path().join("second.json");
    write_script(&second, json!([text("Planned.")]));
    let server = worker(&db, &second, &restate, endpoint);
    let address = server.address.clone();
    let run = until_status(&address, &token, &run_id, "completed");
    assert_eq!(run["status"], "completed", "{run}");
    let events = whole_stream(&address, &token, &run_id);
    assert_eq!(root_finished(&events).len(), 1, "{events:?}");
    assert_eq!(tool_results(&events, "i1"), 1, "{events:?}");
    // The turn the kill cut short stays in the log as it streamed, never
    // committed (no `streaming_end`, no message), and is superseded by the
    // retried turn: a second `streaming_start` of the same iteration.
    let starts: Vec<&Value> = events
        .iter()
        .filter(|(name, _)| name == "streaming_start")
        .map(|(_, data)| &data["iteration"])
        .collect();
    assert_eq!(starts, [&json!(1), &json!(2), &json!(2)], "{events:?}");
    let ends = events
        .iter()
        .filter(|(name, _)| name == "streaming_end")
        .count();
    assert_eq!(ends, 2, "{events:?}");
    assert!(
        !events
            .iter()
            .any(|(name, data)| name == "message_created" && data.to_string().contains("Half")),
        "the cut turn was committed: {events:?}"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("effect.md")).unwrap(),
        "once"
    );
}

#[test]
fn a_cancel_ends_a_restate_run_within_a_second() {
    let Some(restate) = RestateServer::start("serve-cancel") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([{ "steps": [
            { "type": "text", "chunks": ["Thinking "] },
            { "type": "delay", "ms": 60000 },
            { "type": "text", "chunks": ["too late."] }
        ] }]),
    );
    let token = create_user(&db, "ada");
    let server = worker(&db, &script, &restate, free_port());
    let address = server.address.clone();
    let task_id = task(&address, &token, &dir.path().join("repo"));
    let run_id = start_run(&address, &token, &task_id, "planification");
    let mut cancelled_at = None;
    let events = read_sse_acting(&address, &token, &run_id, "streaming_chunk", || {
        cancelled_at = Some(Instant::now());
        let (status, body) = http(
            &address,
            &token,
            "POST",
            &format!("/api/agent-runs/{run_id}/cancel"),
            Some(json!({})),
        );
        assert_eq!(status, 200, "{body}");
    });
    let run = until_status(&address, &token, &run_id, "cancelled");
    let took = cancelled_at.unwrap().elapsed();
    assert!(took < Duration::from_secs(1), "the cancel took {took:?}");
    assert_eq!(run["status"], "cancelled", "{run}");
    let finished = root_finished(&events);
    assert_eq!(finished.len(), 1, "{events:?}");
    assert_eq!(finished[0]["result"]["status"], "cancelled", "{events:?}");
}

#[test]
fn a_run_goes_on_when_restate_server_restarts_mid_turn() {
    let Some(mut restate) = RestateServer::start("serve-restart") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([
            { "steps": [
                { "type": "text", "chunks": ["Planning "] },
                { "type": "delay", "ms": 3000 },
                { "type": "text", "chunks": ["done."] }
            ] },
        ]),
    );
    let token = create_user(&db, "ada");
    let server = worker(&db, &script, &restate, free_port());
    let address = server.address.clone();
    let task_id = task(&address, &token, &dir.path().join("repo"));
    let run_id = start_run(&address, &token, &task_id, "planification");
    let events = read_sse_acting(&address, &token, &run_id, "first_chunk", || {
        restate.restart();
        // Restarted while the turn still streams.
        let (_, run) = http(
            &address,
            &token,
            "GET",
            &format!("/api/agent-runs/{run_id}"),
            None,
        );
        assert_eq!(run["status"], "running", "{run}");
    });
    let run = until_status(&address, &token, &run_id, "completed");
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(root_finished(&events).len(), 1, "{events:?}");
    // The turn that streamed while Restate was down is not asked again.
    let starts = events
        .iter()
        .filter(|(name, _)| name == "streaming_start")
        .count();
    assert_eq!(starts, 1, "{events:?}");
}
