//! `agentloop serve --engine restate` as processes, over HTTP, against a
//! real `restate-server` (installed by `scripts/install-restate.sh`; under
//! `CI` a missing one fails): a chain (implementation → review) completes;
//! a worker SIGKILLed mid-run is restarted and the run completes with its
//! tool's effect once; a cancel ends a run within a second and ends its
//! workflow in Restate; an approval decided after the worker and
//! `restate-server` both restarted resumes the run, its tool's effect
//! once; Mark Done and the 409 rule behave as on the built-in engine; two
//! workers behind one balancer share runs, and killing one moves its runs
//! to the other with no committed step run twice, while a live SSE
//! follower, reconnecting, sees each committed event once; a worker SIGKILLed eight
//! times over an implementation ⇄ review chain (mid-stream and mid-tool)
//! leaves every committed step done once and the chain complete.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/balancer.rs"]
mod balancer;
#[path = "support/chain_model.rs"]
mod chain_model;
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
    worker_with(db, script, restate, endpoint, "worker-1", &[])
}

/// [`worker`] named `instance`, with more flags.
fn worker_with(
    db: &str,
    script: &Path,
    restate: &RestateServer,
    endpoint: u16,
    instance: &str,
    extra: &[&str],
) -> Served {
    let bind = format!("127.0.0.1:{endpoint}");
    let mut args = vec![
        "--engine",
        "restate",
        "--restate-ingress",
        &restate.ingress,
        "--restate-admin",
        &restate.admin,
        "--restate-bind",
        &bind,
    ];
    args.extend_from_slice(extra);
    serve_with(db, script, instance, &args)
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

/// An `fs` insert of one line at the top of `path` (an effect that shows
/// each time it happens).
fn fs_insert(id: &str, path: &str, line: &str) -> Value {
    let input = json!({ "command": "insert", "path": path, "insert_line": 0,
                        "insert_text": format!("{line}\n") })
    .to_string();
    json!({ "steps": [{ "type": "tool_call", "id": id, "name": "fs", "fragments": [input] }] })
}

/// The status of run `run_id`'s workflow invocation in Restate (`""`
/// when there is none).
fn invocation_status(restate: &RestateServer, run_id: &str) -> String {
    assert!(
        run_id.chars().all(|c| c.is_ascii_alphanumeric()),
        "{run_id}"
    );
    let rows = restate_server::query(
        &restate.admin,
        &format!(
            "SELECT status FROM sys_invocation WHERE target_service_name = 'AgentRun' \
             AND target_service_key = '{run_id}' AND target_handler_name = 'run'"
        ),
    );
    let rows: Value = serde_json::from_str(&rows).unwrap();
    rows["rows"][0]["status"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Polls until run `run_id`'s workflow invocation has `status`.
fn until_invocation(restate: &RestateServer, run_id: &str, status: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = invocation_status(restate, run_id);
        if now == status {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the workflow of {run_id} stayed {now:?}, never {status}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The named `Run` entries of the journal of run `run_id`'s workflow once
/// it holds `expected` of them (Restate's query tables can trail an
/// invocation's completion), or as they stand at a deadline.
fn journaled_runs_when(restate: &RestateServer, run_id: &str, expected: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let runs = journaled_runs(restate, run_id);
        if runs.len() >= expected || Instant::now() >= deadline {
            return runs;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The named `Run` entries of the journal of run `run_id`'s workflow.
fn journaled_runs(restate: &RestateServer, run_id: &str) -> Vec<String> {
    let rows = restate_server::query(
        &restate.admin,
        &format!(
            "SELECT j.name FROM sys_journal j JOIN sys_invocation i ON j.id = i.id \
             WHERE i.target_service_name = 'AgentRun' AND i.target_service_key = '{run_id}' \
             AND j.entry_type = 'Command: Run' ORDER BY j.index"
        ),
    );
    let rows: Value = serde_json::from_str(&rows).unwrap();
    rows["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["name"].as_str().unwrap_or_default().to_owned())
        .collect()
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
        let finished = terminal_events(&events);
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
    // Each run is its workflow in Restate, each step a journaled step:
    // the recall of the project's memories a fresh run starts with, turn
    // (a call), tools, turn (the answer).
    for run in &runs {
        assert_eq!(
            journaled_steps(&restate, run["id"].as_str().unwrap()),
            4,
            "{run}"
        );
    }
}

/// A budget holds for a run Restate hosts as for a local one: its model
/// calls reserve against the task's budget, a settled call counts, and
/// the call that would pass the limit is not made; the run ends
/// `limit_exceeded` naming the budget, its one terminal event in its log.
#[test]
fn a_restate_run_stops_at_its_tasks_budget() {
    let Some(restate) = RestateServer::start("serve-budget") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    let mut first = fs_create("b1", "spent.md", "one call");
    first["usage"] = json!({ "input_tokens": 100, "output_tokens": 50 });
    write_script(&script, json!([first, text("never asked")]));
    let token = create_user(&db, "ada");
    let server = worker_with(
        &db,
        &script,
        &restate,
        free_port(),
        "worker-1",
        &["--budget-estimate-tokens", "150"],
    );
    let address = server.address.clone();
    let repo = dir.path().join("repo");
    let task_id = task(&address, &token, &repo);
    let budgets = format!("/api/tasks/{task_id}/budgets");
    let (status, set) = http(
        &address,
        &token,
        "PUT",
        &budgets,
        Some(json!({ "budgets": [{ "metric": "tokens", "period": "total", "limit": 200 }] })),
    );
    assert_eq!(status, 200, "{set}");
    let run = start_run(&address, &token, &task_id, "implementation");
    let ended = until_status(&address, &token, &run, "failed");
    assert_eq!(ended["error"]["kind"], "limit_exceeded", "{ended}");
    let message = ended["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("task {task_id}")) && message.contains("tokens"),
        "{ended}"
    );
    // The first call ran its tool; the second was never made.
    assert_eq!(
        std::fs::read_to_string(repo.join("spent.md")).unwrap(),
        "one call"
    );
    let events = whole_stream(&address, &token, &run);
    let turns = events
        .iter()
        .filter(|(name, _)| name == "streaming_start")
        .count();
    assert_eq!(turns, 1, "one model call: {events:?}");
    assert_eq!(terminal_events(&events).len(), 1, "{events:?}");
    let (_, shown) = http(&address, &token, "GET", &budgets, None);
    assert_eq!(shown["budgets"][0]["spent"], 150.0, "{shown}");
    assert_eq!(shown["budgets"][0]["reserved"], 0.0, "{shown}");
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
    assert_eq!(terminal_events(&events).len(), 1, "{events:?}");
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
        json!([
            { "steps": [
                { "type": "text", "chunks": ["Thinking "] },
                { "type": "delay", "ms": 60000 },
                { "type": "text", "chunks": ["too late."] }
            ] },
            fs_create("c1", "after-cancel.md", "too late"),
        ]),
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
    let finished = terminal_events(&events);
    assert_eq!(finished.len(), 1, "{events:?}");
    assert_eq!(finished[0]["result"]["status"], "cancelled", "{events:?}");
    // The workflow ended in Restate: nothing retries the run, and the
    // script's next turn (a write) is never asked for.
    until_invocation(&restate, &run_id, "completed");
    let (_, messages) = http(
        &address,
        &token,
        "GET",
        &format!("/api/agent-runs/{run_id}/messages"),
        None,
    );
    assert!(!messages.to_string().contains("after-cancel"), "{messages}");
    assert!(!dir.path().join("repo/after-cancel.md").exists());
}

#[test]
fn an_approval_decided_after_the_worker_and_restate_restarted_resumes_the_run_once() {
    let Some(mut restate) = RestateServer::start("serve-approval") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let repo = dir.path().join("repo");
    let token = create_user(&db, "ada");
    let endpoint = free_port();
    let first = dir.path().join("first.json");
    write_script(&first, json!([fs_insert("w1", "log.md", "effect")]));
    let mut server = worker(&db, &first, &restate, endpoint);
    let address = server.address.clone();
    let task_id = task_with(&address, &token, &repo, json!({ "approvals": "ask" }));
    std::fs::write(repo.join("log.md"), "end\n").unwrap();
    let run_id = start_run(&address, &token, &task_id, "planification");
    let waiting = until_status(&address, &token, &run_id, "waiting");
    assert_eq!(waiting["pending"][0]["call_id"], "w1", "{waiting}");
    // Parked in Restate on the wait's promise, not ended.
    assert_ne!(invocation_status(&restate, &run_id), "completed");

    // Every process goes down and comes back.
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    restate.restart();
    let rest = dir.path().join("rest.json");
    write_script(&rest, json!([text("Logged.")]));
    let server = worker(&db, &rest, &restate, endpoint);
    let address = server.address.clone();
    let (_, pending) = http(
        &address,
        &token,
        "GET",
        &format!("/api/agent-runs/{run_id}/pending"),
        None,
    );
    assert_eq!(pending["agent_run"]["status"], "waiting", "{pending}");
    assert_eq!(
        std::fs::read_to_string(repo.join("log.md")).unwrap(),
        "end\n"
    );

    let (status, decided) = http(
        &address,
        &token,
        "POST",
        &format!("/api/agent-runs/{run_id}/decisions"),
        Some(json!({ "decisions": [{ "call_id": "w1", "decision": "approve" }] })),
    );
    assert_eq!(status, 200, "{decided}");
    assert_eq!(decided["resumed"], true, "{decided}");
    let run = until_status(&address, &token, &run_id, "completed");
    assert_eq!(run["status"], "completed", "{run}");
    until_invocation(&restate, &run_id, "completed");
    assert_eq!(
        std::fs::read_to_string(repo.join("log.md")).unwrap(),
        "effect\nend\n"
    );
    let events = whole_stream(&address, &token, &run_id);
    let statuses: Vec<&Value> = terminal_events(&events)
        .iter()
        .map(|finished| &finished["result"]["status"])
        .collect();
    assert_eq!(
        statuses,
        [&json!("suspended"), &json!("complete")],
        "{events:?}"
    );
    assert_eq!(tool_results(&events, "w1"), 1, "{events:?}");
    // The recall a fresh run starts with, the turn (the call) and the
    // wait, then the approved tool step and the answer: five journaled
    // steps, or four in about one try of four under load (how the turn and
    // the wait fall into steps varies; why is not pinned down yet). That
    // no step ran twice shows in the effect and the single tool result
    // above.
    let journaled = journaled_runs_when(&restate, &run_id, 5);
    assert!(
        (4..=5).contains(&journaled.len()) && journaled.iter().all(|name| name == "step"),
        "{journaled:?}"
    );
    // Deciding again is the 409 of a run that waits for nothing.
    let (status, again) = http(
        &address,
        &token,
        "POST",
        &format!("/api/agent-runs/{run_id}/decisions"),
        Some(json!({ "decisions": [{ "call_id": "w1", "decision": "approve" }] })),
    );
    assert_eq!(status, 409, "{again}");
}

/// Submits `input` to run `run_id` through Restate's ingress (the
/// workflow's `submit` handler): the status and the JSON answered.
fn submit_through_restate(restate: &RestateServer, run_id: &str, input: Value) -> (u16, Value) {
    let ingress = restate.ingress.trim_start_matches("http://");
    // The ingress asks for no token; the API's is not sent.
    http(
        ingress,
        "",
        "POST",
        &format!("/AgentRun/{run_id}/submit"),
        Some(input),
    )
}

#[test]
fn a_decision_submitted_through_restates_ingress_resumes_the_run_as_the_api_would() {
    let Some(restate) = RestateServer::start("serve-submit") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let repo = dir.path().join("repo");
    let token = create_user(&db, "ada");
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([fs_insert("w1", "log.md", "effect"), text("Logged.")]),
    );
    let server = worker(&db, &script, &restate, free_port());
    let address = server.address.clone();
    let task_id = task_with(&address, &token, &repo, json!({ "approvals": "ask" }));
    std::fs::write(repo.join("log.md"), "end\n").unwrap();
    let run_id = start_run(&address, &token, &task_id, "planification");
    until_status(&address, &token, &run_id, "waiting");

    // A start names a task, not a run: refused with the API's reason, and
    // the run still waits.
    let (status, refused) = submit_through_restate(
        &restate,
        &run_id,
        json!({ "type": "start", "message": "again" }),
    );
    assert_eq!(status, 400, "{refused}");
    assert_eq!(
        std::fs::read_to_string(repo.join("log.md")).unwrap(),
        "end\n"
    );

    let approve = json!({ "type": "decide", "decisions": { "w1": { "decision": "approve" } } });
    let (status, answer) = submit_through_restate(&restate, &run_id, approve.clone());
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["submitted"], "decided", "{answer}");
    assert_eq!(answer["resumed"], true, "{answer}");
    assert_eq!(answer["agent_run"]["id"], run_id.as_str(), "{answer}");
    let run = until_status(&address, &token, &run_id, "completed");
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(
        std::fs::read_to_string(repo.join("log.md")).unwrap(),
        "effect\nend\n"
    );
    let events = whole_stream(&address, &token, &run_id);
    assert_eq!(tool_results(&events, "w1"), 1, "{events:?}");

    // The same decision again: the run waits for nothing, the API's 409.
    let (status, again) = submit_through_restate(&restate, &run_id, approve);
    assert_eq!(status, 409, "{again}");
    // An unknown run is the API's 404, not another user's data.
    let (status, unknown) =
        submit_through_restate(&restate, "nosuchrun", json!({ "type": "cancel" }));
    assert_eq!(status, 404, "{unknown}");
}

#[test]
fn a_cancel_of_a_waiting_run_ends_its_workflow_in_restate_and_the_call_never_runs() {
    let Some(restate) = RestateServer::start("serve-cancel-waiting") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let repo = dir.path().join("repo");
    let token = create_user(&db, "ada");
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([fs_insert("w1", "log.md", "effect"), text("Never asked.")]),
    );
    let server = worker(&db, &script, &restate, free_port());
    let address = server.address.clone();
    let task_id = task_with(&address, &token, &repo, json!({ "approvals": "ask" }));
    std::fs::write(repo.join("log.md"), "end\n").unwrap();
    let run_id = start_run(&address, &token, &task_id, "planification");
    until_status(&address, &token, &run_id, "waiting");
    assert_ne!(invocation_status(&restate, &run_id), "completed");

    let (status, body) = http(
        &address,
        &token,
        "POST",
        &format!("/api/agent-runs/{run_id}/cancel"),
        Some(json!({})),
    );
    assert_eq!(status, 200, "{body}");
    // Restate's cancellation ends the parked workflow through its stop
    // step; nothing is retried after. (Before it: the recall a fresh run
    // starts with, and its first turn.)
    until_invocation(&restate, &run_id, "completed");
    assert_eq!(
        journaled_runs_when(&restate, &run_id, 4),
        ["step", "step", "step", "stop"]
    );
    let events = whole_stream(&address, &token, &run_id);
    let statuses: Vec<&Value> = terminal_events(&events)
        .iter()
        .map(|finished| &finished["result"]["status"])
        .collect();
    assert_eq!(
        statuses,
        [&json!("suspended"), &json!("cancelled")],
        "{events:?}"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("log.md")).unwrap(),
        "end\n"
    );
    assert!(
        !events
            .iter()
            .any(|(name, data)| name == "streaming_start" && data["iteration"] == 2),
        "the model was asked after the cancel: {events:?}"
    );
    // A second cancel is the 409 of an ended run.
    let (status, again) = http(
        &address,
        &token,
        "POST",
        &format!("/api/agent-runs/{run_id}/cancel"),
        Some(json!({})),
    );
    assert_eq!(status, 409, "{again}");
}

#[test]
fn mark_done_and_the_409_rule_behave_on_restate_as_on_the_built_in_engine() {
    let Some(restate) = RestateServer::start("serve-mark-done") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([{ "steps": [
            { "type": "text", "chunks": ["Implementing "] },
            { "type": "delay", "ms": 60000 },
            { "type": "text", "chunks": ["never sent."] }
        ] }]),
    );
    let token = create_user(&db, "ada");
    let server = worker(&db, &script, &restate, free_port());
    let address = server.address.clone();
    let task_id = task(&address, &token, &dir.path().join("repo"));
    let run_id = start_run(&address, &token, &task_id, "implementation");
    let events = read_sse_acting(&address, &token, &run_id, "streaming_chunk", || {
        // One active run per task: a second start is refused, naming it.
        let (status, refused) = http(
            &address,
            &token,
            "POST",
            &format!("/api/tasks/{task_id}/agent-runs"),
            Some(json!({ "agentType": "review" })),
        );
        assert_eq!(status, 409, "{refused}");
        assert_eq!(refused["runningAgent"]["id"], run_id.as_str(), "{refused}");
        let (status, done) = http(
            &address,
            &token,
            "PUT",
            &format!("/api/tasks/{task_id}/workflow-complete"),
            Some(json!({ "complete": true })),
        );
        assert_eq!(status, 200, "{done}");
    });
    let run = until_status(&address, &token, &run_id, "completed");
    assert_eq!(run["status"], "completed", "{run}");
    let finished = terminal_events(&events);
    assert_eq!(finished.len(), 1, "{events:?}");
    assert_eq!(finished[0]["result"]["status"], "complete", "{events:?}");
    assert_eq!(
        finished[0]["result"]["stopped_by"], "workflow_complete",
        "{events:?}"
    );
    assert_eq!(run["stopped_by"], "workflow_complete", "{run}");
    until_invocation(&restate, &run_id, "completed");
    // Marked done: the chain stops here.
    let (_, runs) = http(
        &address,
        &token,
        "GET",
        &format!("/api/tasks/{task_id}/agent-runs"),
        None,
    );
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");
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
    assert_eq!(terminal_events(&events).len(), 1, "{events:?}");
    // The turn that streamed while Restate was down is not asked again.
    let starts = events
        .iter()
        .filter(|(name, _)| name == "streaming_start")
        .count();
    assert_eq!(starts, 1, "{events:?}");
}

/// One model turn that streams for a while and names the worker that
/// played it.
fn slow_answer(worker: &str) -> Value {
    json!({ "steps": [
        { "type": "text", "chunks": ["Working "] },
        { "type": "delay", "ms": 1500 },
        { "type": "text", "chunks": [format!("from {worker}.")] }
    ] })
}

/// Starts a planification run in each of `count` new tasks of one
/// project; their ids.
fn start_runs(address: &str, token: &str, repo: &Path, count: usize) -> Vec<String> {
    let (status, project) = http(
        address,
        token,
        "POST",
        "/api/projects",
        Some(json!({ "name": "shared", "repoFolder": repo })),
    );
    assert_eq!(status, 201, "{project}");
    let tasks = format!("/api/projects/{}/tasks", project["id"].as_str().unwrap());
    (0..count)
        .map(|i| {
            let (status, task) = http(
                address,
                token,
                "POST",
                &tasks,
                Some(json!({ "title": format!("t{i}") })),
            );
            assert_eq!(status, 201, "{task}");
            start_run(
                address,
                token,
                task["id"].as_str().unwrap(),
                "planification",
            )
        })
        .collect()
}

/// The committed answer of a completed run, and how many times its turn
/// started (a turn cut by a dead worker starts again).
fn answer_and_starts(address: &str, token: &str, run_id: &str) -> (String, usize) {
    let events = whole_stream(address, token, run_id);
    assert_eq!(terminal_events(&events).len(), 1, "{events:?}");
    let answers: Vec<String> = events
        .iter()
        .filter(|(name, data)| name == "message_created" && data["message"]["role"] == "assistant")
        .map(|(_, data)| data["message"].to_string())
        .collect();
    assert_eq!(answers.len(), 1, "one committed answer: {events:?}");
    let starts = events
        .iter()
        .filter(|(name, _)| name == "streaming_start")
        .count();
    (answers[0].clone(), starts)
}

/// What a live follower of a run's SSE stream saw: each event's id (its
/// seq), name and data, and how many connections it took.
struct Followed {
    events: Vec<(u64, String, Value)>,
    connections: usize,
}

/// Follows the run's events live from the first of `addresses` up to the
/// run's terminal event; when a stream breaks before it (its server
/// died), reconnects to the next address with `Last-Event-ID`. Sends on
/// `streaming` once an event carries the answer's first words.
fn follow_across(
    addresses: &[String],
    token: &str,
    run_id: &str,
    streaming: &std::sync::mpsc::Sender<()>,
) -> Followed {
    use std::io::{BufRead, BufReader, Write};
    let mut followed = Followed {
        events: Vec::new(),
        connections: 0,
    };
    let mut signalled = false;
    for address in addresses {
        let mut stream = std::net::TcpStream::connect(address).unwrap();
        followed.connections += 1;
        let resume = followed
            .events
            .last()
            .map(|(id, ..)| format!("Last-Event-ID: {id}\r\n"))
            .unwrap_or_default();
        write!(
            stream,
            "GET /api/agent-runs/{run_id}/events HTTP/1.1\r\nHost: {address}\r\n\
             Authorization: Bearer {token}\r\n{resume}Connection: close\r\n\r\n"
        )
        .unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut reader = BufReader::new(stream);
        let (mut id, mut name, mut line) = (None, String::new(), String::new());
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let line = line.trim_end();
            if let Some(value) = line.strip_prefix("id:") {
                id = value.trim().parse::<u64>().ok();
            } else if let Some(value) = line.strip_prefix("event:") {
                name = value.trim().to_owned();
            } else if let Some(data) = line.strip_prefix("data:") {
                let data: Value = serde_json::from_str(data.trim()).unwrap();
                if !signalled && data.to_string().contains("Working") {
                    signalled = true;
                    streaming.send(()).unwrap();
                }
                let ended = name == "finished" && data.get("path").is_none();
                let id = id.take().expect("every event has an id");
                followed.events.push((id, name.clone(), data));
                if ended {
                    return followed;
                }
            }
        }
    }
    panic!(
        "the stream of {run_id} broke on every address before its end: {:?}",
        followed.events
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_behind_one_balancer_share_runs_and_a_killed_ones_runs_move_on() {
    let Some(restate) = RestateServer::start("serve-two-workers") else {
        return;
    };
    let admin_url = match std::env::var("AGENTLOOP_TEST_POSTGRES_URL") {
        Ok(url) => url,
        Err(_) if std::env::var_os("CI").is_some() => {
            panic!("AGENTLOOP_TEST_POSTGRES_URL must be set under CI")
        }
        Err(_) => {
            eprintln!("!!!! SKIPPED: AGENTLOOP_TEST_POSTGRES_URL is not set !!!!");
            return;
        }
    };
    let name = format!("agentloop_restate_{}", std::process::id());
    let database = ScratchDatabase::create(&admin_url, &name).await;
    let db = database.url.clone();
    let dir = tempfile::tempdir().unwrap();
    let (one, two) = (free_port(), free_port());
    let balancer =
        balancer::Balancer::start(&[format!("127.0.0.1:{one}"), format!("127.0.0.1:{two}")]);
    let url = format!("http://{}", balancer.address);
    let flags = [
        "--restate-protocol",
        "http1",
        "--restate-endpoint-url",
        &url,
    ];
    let script = |worker: &str| {
        let path = dir.path().join(format!("{worker}.json"));
        write_script(&path, json!(vec![slow_answer(worker); 12]));
        path
    };
    let (script_a, script_b) = (script("a"), script("b"));
    let token = create_user(&db, "ada");
    let mut a = worker_with(&db, &script_a, &restate, one, "worker-a", &flags);
    let b = worker_with(&db, &script_b, &restate, two, "worker-b", &flags);
    let address = b.address.clone();

    // Runs spread: some turns are played by each worker.
    let first = start_runs(&a.address, &token, &dir.path().join("one"), 4);
    for run_id in &first {
        until_status(&address, &token, run_id, "completed");
    }
    let answers: Vec<String> = first
        .iter()
        .map(|run_id| answer_and_starts(&address, &token, run_id).0)
        .collect();
    assert!(
        answers.iter().any(|a| a.contains("from a."))
            && answers.iter().any(|a| a.contains("from b.")),
        "{answers:?}"
    );

    // Worker a dies while every run streams: its runs go on on b. Each
    // run has a live follower on a, which reconnects to b when a dies.
    let second = start_runs(&address, &token, &dir.path().join("two"), 4);
    let (streaming, streamed) = std::sync::mpsc::channel();
    let followers: Vec<_> = second
        .iter()
        .map(|run_id| {
            let addresses = vec![a.address.clone(), address.clone()];
            let (token, run_id, streaming) = (token.clone(), run_id.clone(), streaming.clone());
            std::thread::spawn(move || follow_across(&addresses, &token, &run_id, &streaming))
        })
        .collect();
    for _ in &second {
        streamed
            .recv_timeout(Duration::from_secs(60))
            .expect("every run streams");
    }
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    for run_id in &second {
        until_status(&address, &token, run_id, "completed");
    }
    let mut moved = 0;
    for (run_id, follower) in second.iter().zip(followers) {
        // The follower saw the committed log, each event once, though its
        // stream broke with worker a.
        let followed = follower.join().unwrap();
        assert_eq!(followed.connections, 2, "{run_id}: reconnected once");
        let ids: Vec<u64> = followed.events.iter().map(|(id, ..)| *id).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{run_id}: {ids:?}");
        let live: Vec<(String, Value)> = followed
            .events
            .into_iter()
            .map(|(_, name, data)| (name, data))
            .collect();
        assert_eq!(live, whole_stream(&address, &token, run_id), "{run_id}");
        let (answer, starts) = answer_and_starts(&address, &token, run_id);
        assert!(answer.contains("from b."), "{answer}");
        // Cut on a: its turn started again on b, never committed twice.
        assert!(starts <= 2, "{run_id}: {starts} starts");
        moved += usize::from(starts == 2);
        until_invocation(&restate, run_id, "completed");
    }
    assert!(moved >= 1, "no run was executing on the killed worker");
    drop(b);
    database.remove().await;
}

/// A worker on the chain model, the shell allowed, with the test's
/// prompts (naming each agent for the model).
fn chain_worker(
    db: &str,
    root: &Path,
    model: &chain_model::ChainModel,
    restate: &RestateServer,
    endpoint: u16,
) -> Served {
    let bind = format!("127.0.0.1:{endpoint}");
    let prompts = root.join("prompts.json");
    let prompts_flag = prompts.display().to_string();
    serve_provider(
        db,
        &[
            "--provider",
            "openai-compatible",
            "--base-url",
            &model.base_url,
            "--model",
            "mock",
        ],
        root,
        "chain-worker",
        &[
            "--allow-shell",
            "--prompts",
            &prompts_flag,
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

/// Polls `check` (bounded) until it holds.
fn until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !check() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_chain_completes_with_each_committed_step_once_though_its_worker_is_killed_eight_times() {
    const ROUNDS: u32 = 4;
    let Some(restate) = RestateServer::start("serve-eight-kills") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(
        root.join("prompts.json"),
        json!({
            "planification": "KIND=planification {task_id}",
            "implementation": "KIND=implementation {task_id}",
            "review": "KIND=review {task_id}",
        })
        .to_string(),
    )
    .unwrap();
    let db = root.join("db.sqlite").display().to_string();
    let repo = root.join("repo");
    let token = create_user(&db, "ada");
    let model = chain_model::ChainModel::start(ROUNDS);
    let endpoint = free_port();
    let mut server = chain_worker(&db, root, &model, &restate, endpoint);
    let task_id = task_with(&server.address, &token, &repo, json!({ "shell": true }));
    start_run(&server.address, &token, &task_id, "implementation");

    // One kill per run: mid-tool in the even runs (while the shell call
    // sleeps between its `start` and `end`), mid-stream in the odd ones
    // (while the answer waits in its slow part).
    let mut stream_kills = Vec::new();
    for index in 0..2 * ROUNDS {
        let kind = if index % 2 == 0 {
            "implementation"
        } else {
            "review"
        };
        let round = index / 2 + 1;
        if index % 2 == 0 {
            let call = chain_model::Turn {
                kind: kind.to_owned(),
                round,
                turn: 0,
            }
            .call_id();
            until(&format!("{call} started"), || {
                std::fs::read_to_string(repo.join("effects.log"))
                    .is_ok_and(|log| log.contains(&format!("start {call}\n")))
            });
        } else {
            let last = kind == "review" && round == ROUNDS;
            let turn = chain_model::Turn {
                kind: kind.to_owned(),
                round,
                turn: if last { 2 } else { 1 },
            };
            until(&format!("{turn:?} streaming"), || {
                model.seen.lock().unwrap().streaming.as_ref() == Some(&turn)
            });
            stream_kills.push(turn);
        }
        server.child.kill().unwrap();
        server.child.wait().unwrap();
        server = chain_worker(&db, root, &model, &restate, endpoint);
    }
    let address = server.address.clone();
    let runs = settled_runs(&address, &token, &task_id, (2 * ROUNDS) as usize);
    let mut kinds: Vec<(String, String)> = runs
        .iter()
        .map(|r| {
            (
                r["agent_type"].as_str().unwrap().to_owned(),
                r["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    kinds.sort();
    let mut expected = vec![("implementation".to_owned(), "completed".to_owned()); 4];
    expected.extend(vec![("review".to_owned(), "completed".to_owned()); 4]);
    assert_eq!(kinds, expected, "{runs:?}");
    let (_, task) = http(
        &address,
        &token,
        "GET",
        &format!("/api/tasks/{task_id}"),
        None,
    );
    assert_eq!(task["workflow_complete"], true, "{task}");

    // Every tool call ran once, the interrupted ones included.
    let effects = std::fs::read_to_string(repo.join("effects.log")).unwrap();
    for round in 1..=ROUNDS {
        for kind in ["implementation", "review"] {
            let call = chain_model::Turn {
                kind: kind.to_owned(),
                round,
                turn: 0,
            }
            .call_id();
            let started = effects
                .lines()
                .filter(|line| *line == format!("start {call}"))
                .count();
            assert_eq!(started, 1, "{call} ran {started} times: {effects}");
        }
    }
    // Every turn was answered whole once; only the turns cut mid-stream
    // were asked again (once each).
    let seen = model.seen.lock().unwrap();
    let mut asked: std::collections::HashMap<&chain_model::Turn, (usize, usize)> =
        std::collections::HashMap::new();
    for (turn, whole) in &seen.requests {
        let entry = asked.entry(turn).or_default();
        entry.0 += 1;
        entry.1 += usize::from(*whole);
    }
    for (turn, (requests, whole)) in &asked {
        assert_eq!(*whole, 1, "{turn:?} answered whole {whole} times");
        let cut = usize::from(stream_kills.contains(turn));
        assert_eq!(*requests, 1 + cut, "{turn:?} asked {requests} times");
    }
    // Two turns per run, three for the last review.
    assert_eq!(asked.len(), (4 * ROUNDS + 1) as usize, "{asked:?}");
    drop(seen);

    // A follower sees each committed event once: one end, each message
    // once.
    for run in &runs {
        let run_id = run["id"].as_str().unwrap();
        let events = whole_stream(&address, &token, run_id);
        assert_eq!(terminal_events(&events).len(), 1, "{events:?}");
        let mut ids: Vec<String> = events
            .iter()
            .filter(|(name, _)| name == "message_created")
            .map(|(_, data)| data["message"]["id"].to_string())
            .collect();
        let count = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), count, "a message twice: {events:?}");
        until_invocation(&restate, run_id, "completed");
    }
}

/// A worker on `--engine restate` whose flags `extra` complete, returned
/// as soon as it says where it serves (before it is registered).
fn starting_worker(dir: &Path, restate: &RestateServer, extra: &[&str]) -> (Served, String) {
    let db = dir.join("db.sqlite").display().to_string();
    let token = create_user(&db, "ada");
    let script = dir.join("script.json");
    write_script(&script, json!([text("Done.")]));
    let provider = format!("scripted-shared:{}", script.display());
    let bind = format!("127.0.0.1:{}", free_port());
    let mut args = vec![
        "--engine",
        "restate",
        "--restate-ingress",
        &restate.ingress,
        "--restate-bind",
        &bind,
    ];
    args.extend_from_slice(extra);
    let served = serve_starting(&db, &["--provider", &provider], dir, "starting", &args);
    (served, token)
}

/// Waits (bounded) for the server to exit; whether it succeeded, and its
/// log once it holds `needle`.
fn exit_with(served: &mut Served, needle: &str) -> (bool, String) {
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(status) = served.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the server never exited");
        std::thread::sleep(Duration::from_millis(50));
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = served.log.lock().unwrap().join("\n");
        if log.contains(needle) || Instant::now() > deadline {
            return (status.success(), log);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn health_answers_while_restate_cannot_reach_the_worker_and_the_error_names_the_endpoint() {
    let Some(restate) = RestateServer::start("serve-unreachable-endpoint") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // An endpoint Restate connects to and never hears from.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    std::thread::spawn(move || {
        let held: Vec<_> = silent.incoming().collect();
        drop(held);
    });
    let (mut served, token) = starting_worker(
        dir.path(),
        &restate,
        &[
            "--restate-admin",
            &restate.admin,
            "--restate-endpoint-url",
            &url,
        ],
    );
    let (status, health) = http(&served.address, "", "GET", "/api/health", None);
    assert_eq!(status, 503, "{health}");
    assert_eq!(health["status"], "starting", "{health}");
    let waiting_for = health["waiting_for"].as_str().unwrap();
    assert!(
        waiting_for.starts_with("restate: registering the worker endpoint")
            && waiting_for.contains(&url),
        "{health}"
    );
    let (status, refused) = http(&served.address, &token, "GET", "/api/projects", None);
    assert_eq!(status, 503, "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("the server is starting"),
        "{refused}"
    );
    let needle = format!("cannot reach this worker's service endpoint at {url}");
    let (success, log) = exit_with(&mut served, &needle);
    assert!(!success, "{log}");
    assert!(log.contains(&needle), "{log}");
    assert!(log.contains("--restate-endpoint-url"), "{log}");
    assert!(!log.contains("cannot reach Restate at"), "{log}");
}

#[test]
fn a_refused_endpoint_and_an_unreachable_admin_api_are_told_apart() {
    let Some(restate) = RestateServer::start("serve-refused-endpoint") else {
        return;
    };
    let closed = format!("http://127.0.0.1:{}", free_port());
    let dir = tempfile::tempdir().unwrap();
    let (mut served, _) = starting_worker(
        dir.path(),
        &restate,
        &[
            "--restate-admin",
            &restate.admin,
            "--restate-endpoint-url",
            &closed,
        ],
    );
    let needle = format!("cannot reach this worker's service endpoint at {closed}");
    let (success, log) = exit_with(&mut served, &needle);
    assert!(!success, "{log}");
    assert!(log.contains(&needle), "{log}");
    assert!(log.contains("Connection refused"), "{log}");

    let dir = tempfile::tempdir().unwrap();
    let (mut served, _) = starting_worker(dir.path(), &restate, &["--restate-admin", &closed]);
    let needle = format!("cannot reach Restate's admin API at {closed}");
    let (success, log) = exit_with(&mut served, &needle);
    assert!(!success, "{log}");
    assert!(log.contains(&needle), "{log}");
    assert!(log.contains("--restate-admin"), "{log}");
}
