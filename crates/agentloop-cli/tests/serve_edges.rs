//! Edges of `agentloop serve` met over HTTP: health is never rate limited
//! (with or without the token of a user past its burst; `/metrics` on its
//! own listener neither) and requests are not logged at INFO; a folder
//! outside the projects folder is refused naming that folder and
//! `--projects-root`, a missing one as required; titles and names are
//! capped, the limit named in the error and the OpenAPI document; a task
//! marked done starts no run (409 saying why); `scripted:FILE` plays its
//! script from the start in every run; the text of an A2A or AG-UI request
//! is in the run's first message; and `serve --demo` shows what rejecting
//! the implementation's write does.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use common::create_user;
use common::served::*;
use serde_json::{Value, json};

/// A server playing `turns` to every run from its start
/// (`--provider scripted:FILE`), with `extra` flags; its projects folder
/// is `dir/projects`.
fn per_run(dir: &Path, db: &str, turns: Value, extra: &[&str]) -> Served {
    let script = dir.join("script.json");
    write_script(&script, turns);
    let root = dir.join("projects");
    std::fs::create_dir_all(&root).unwrap();
    let provider = format!("scripted:{}", script.display());
    serve_provider(db, &["--provider", &provider], &root, "edges", extra)
}

/// `GET path` with no token, or with `token`; the status and JSON body.
fn get(address: &str, path: &str, token: Option<&str>) -> (u16, Value) {
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    let mut stream = TcpStream::connect(address).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\n{auth}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let status = raw[9..12].parse().unwrap();
    let body = raw.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

/// Sends `send` until it answers 429 (bounded).
fn until_refused(mut send: impl FnMut() -> u16) {
    for _ in 0..1000 {
        if send() == 429 {
            return;
        }
    }
    panic!("1000 requests in a row and none refused");
}

/// The messages of an agent run's conversation.
fn messages(address: &str, token: &str, run_id: &str) -> Vec<Value> {
    let path = format!("/api/agent-runs/{run_id}/messages");
    let (status, listed) = http(address, token, "GET", &path, None);
    assert_eq!(status, 200, "{listed}");
    listed.as_array().unwrap().clone()
}

/// The text a role said across `messages`, blocks joined by new lines.
fn said(messages: &[Value], role: &str) -> String {
    blocks(messages, role, "text")
        .iter()
        .map(|b| b["text"].as_str().unwrap_or_default().to_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The content blocks of type `kind` of `role`'s messages.
fn blocks(messages: &[Value], role: &str, kind: &str) -> Vec<Value> {
    messages
        .iter()
        .filter(|m| m["message"]["role"] == role)
        .flat_map(|m| {
            m["message"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|b| b["type"] == kind)
        .collect()
}

/// The task's agent runs, oldest first.
fn runs_of(address: &str, token: &str, task_id: &str) -> Vec<Value> {
    let path = format!("/api/tasks/{task_id}/agent-runs");
    let (status, runs) = http(address, token, "GET", &path, None);
    assert_eq!(status, 200, "{runs}");
    runs.as_array().unwrap().clone()
}

/// Polls the task's runs (bounded) until `check` holds of them.
fn until_runs(
    address: &str,
    token: &str,
    task_id: &str,
    what: &str,
    check: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let runs = runs_of(address, token, task_id);
        if check(&runs) {
            return runs;
        }
        assert!(Instant::now() < deadline, "never {what}: {runs:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn health_is_never_rate_limited_and_requests_stay_out_of_the_info_log() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let ada = create_user(&db, "ada");
    let bob = create_user(&db, "bob");
    let served = per_run(
        dir.path(),
        &db,
        json!([text("Planned.")]),
        &[
            "--rate-limit",
            "1",
            "--rate-burst",
            "3",
            "--metrics-bind",
            "127.0.0.1:0",
        ],
    );
    let address = served.address.clone();
    // Each health check comes right after a refusal of the same client:
    // Ada, by her token, and her address, unauthenticated.
    for _ in 0..50 {
        for (token, path) in [(Some(ada.as_str()), "/api/me"), (None, "/api/openapi.json")] {
            until_refused(|| get(&address, path, token).0);
            let (status, health) = get(&address, "/api/health", token);
            assert_eq!(status, 200, "{health}");
            assert_eq!(health, json!({ "ok": true, "status": "ok" }));
        }
    }
    let metrics = served
        .log
        .lock()
        .unwrap()
        .iter()
        .find_map(|l| l.split("metrics on http://").nth(1).map(str::to_owned))
        .expect("the metrics address is printed");
    let metrics = metrics.trim_end_matches("/metrics");
    for _ in 0..50 {
        let mut stream = TcpStream::connect(metrics).unwrap();
        write!(
            stream,
            "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut scrape = String::new();
        stream.read_to_string(&mut scrape).unwrap();
        assert!(scrape.starts_with("HTTP/1.1 200"), "{scrape}");
    }

    // Over a hundred requests, none logged at INFO; a run's status is.
    // (Bob's burst holds the three requests that start his run; his
    // polls may meet 429s, which `until_status` waits out.)
    let task_id = task(&address, &bob, &dir.path().join("projects/repo"));
    let run_id = start_run(&address, &bob, &task_id, "planification");
    until_status(&address, &bob, &run_id, "completed");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !served
        .log
        .lock()
        .unwrap()
        .iter()
        .any(|l| l.contains("agent run status") && l.contains("completed"))
    {
        assert!(Instant::now() < deadline, "the run's end was not logged");
        std::thread::sleep(Duration::from_millis(20));
    }
    let log = served.log.lock().unwrap().join("\n");
    assert!(log.contains("serving on http://"), "{log}");
    assert!(
        !log.contains("status_code="),
        "requests logged at INFO:\n{log}"
    );
}

#[test]
fn folders_titles_and_done_tasks_are_refused_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let ada = create_user(&db, "ada");
    let served = per_run(dir.path(), &db, json!([text("Planned.")]), &[]);
    let address = served.address.clone();
    let root = dir.path().join("projects").canonicalize().unwrap();

    // A folder outside the projects folder: named, with the option.
    let elsewhere = dir.path().join("elsewhere");
    let (status, refused) = http(
        &address,
        &ada,
        "POST",
        "/api/projects",
        Some(json!({ "name": "p", "repoFolder": elsewhere })),
    );
    assert_eq!(status, 400, "{refused}");
    let error = refused["error"].as_str().unwrap();
    assert!(error.contains(&root.display().to_string()), "{error}");
    assert!(error.contains("--projects-root"), "{error}");
    assert!(!elsewhere.exists());
    // No folder at all: required, not "must be a string".
    let (status, refused) = http(
        &address,
        &ada,
        "POST",
        "/api/projects",
        Some(json!({ "name": "p" })),
    );
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .starts_with("repoFolder is required"),
        "{refused}"
    );

    // Titles and names: at most 500 characters, said in the error and
    // in the OpenAPI document.
    let (status, refused) = http(
        &address,
        &ada,
        "POST",
        "/api/projects",
        Some(json!({ "name": "n".repeat(501), "repoFolder": "long" })),
    );
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["field"], "name");
    assert_eq!(refused["max_length"], 500);
    let project_id = project(&address, &ada, &root.join("repo"), json!({}));
    let tasks = format!("/api/projects/{project_id}/tasks");
    let megabyte = "t".repeat(1_000_000);
    let (status, refused) = http(
        &address,
        &ada,
        "POST",
        &tasks,
        Some(json!({ "title": megabyte })),
    );
    assert_eq!(status, 400, "{refused}");
    assert_eq!(
        refused,
        json!({
            "error": "title is 1000000 characters long; at most 500 are allowed",
            "field": "title",
            "max_length": 500
        })
    );
    let (_, listed) = http(&address, &ada, "GET", &tasks, None);
    assert_eq!(listed, json!([]), "a refused task was created");
    let (status, created) = http(
        &address,
        &ada,
        "POST",
        &tasks,
        Some(json!({ "title": "é".repeat(500) })),
    );
    assert_eq!(status, 201, "{created}");
    let (_, document) = http(&address, &ada, "GET", "/api/openapi.json", None);
    let body = &document["paths"]["/api/projects/{projectId}/tasks"]["post"]["requestBody"]["content"]
        ["application/json"]["schema"];
    assert_eq!(body["properties"]["title"]["maxLength"], 500, "{body}");

    // A task marked done starts no run until it is reopened.
    let task_id = created["id"].as_str().unwrap();
    let done = format!("/api/tasks/{task_id}/workflow-complete");
    let (status, _) = http(
        &address,
        &ada,
        "PUT",
        &done,
        Some(json!({ "complete": true })),
    );
    assert_eq!(status, 200);
    let start = format!("/api/tasks/{task_id}/agent-runs");
    let (status, refused) = http(
        &address,
        &ada,
        "POST",
        &start,
        Some(json!({ "agentType": "implementation" })),
    );
    assert_eq!(status, 409, "{refused}");
    assert!(
        refused["error"].as_str().unwrap().contains("marked done"),
        "{refused}"
    );
    assert_eq!(refused["runningAgent"], Value::Null);
    assert!(runs_of(&address, &ada, task_id).is_empty());
    let (status, _) = http(
        &address,
        &ada,
        "PUT",
        &done,
        Some(json!({ "complete": false })),
    );
    assert_eq!(status, 200);
    let run_id = start_run(&address, &ada, task_id, "planification");
    until_status(&address, &ada, &run_id, "completed");
}

#[test]
fn every_run_plays_the_script_from_its_start_and_gets_the_request_text() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let ada = create_user(&db, "ada");
    let served = per_run(
        dir.path(),
        &db,
        json!([fs_create("c1", "/plan.md", "# Plan\n"), text("Planned it.")]),
        &[],
    );
    let address = served.address.clone();
    let root = dir.path().join("projects");

    // Two tasks, one run each: each run plays both turns.
    for name in ["one", "two"] {
        let task_id = task(&address, &ada, &root.join(name));
        let run_id = start_run(&address, &ada, &task_id, "planification");
        until_status(&address, &ada, &run_id, "completed");
        let conversation = messages(&address, &ada, &run_id);
        assert_eq!(said(&conversation, "assistant"), "Planned it.");
        assert!(root.join(name).join("plan.md").is_file());
    }

    // AG-UI: the last user message is the request, in the first message.
    let task_id = task(&address, &ada, &root.join("agui"));
    let (status, _) = http(
        &address,
        &ada,
        "POST",
        &format!("/api/tasks/{task_id}/ag-ui"),
        Some(json!({
            "threadId": "t1", "runId": "r1",
            "messages": [{ "id": "m1", "role": "user", "content": "Plan a README for the tool" }],
            "forwardedProps": { "agentType": "planification" }
        })),
    );
    assert_eq!(status, 200);
    let runs = until_runs(&address, &ada, &task_id, "completed", |runs| {
        runs.len() == 1 && runs[0]["status"] == "completed"
    });
    let conversation = messages(&address, &ada, runs[0]["id"].as_str().unwrap());
    let first = &conversation[0]["message"];
    assert_eq!(first["role"], "user");
    let prompt = first["content"][0]["text"].as_str().unwrap();
    assert!(
        prompt.ends_with("The request that started this run:\n\nPlan a README for the tool"),
        "{prompt}"
    );

    // A2A: the message's text, likewise.
    let project_id = project(&address, &ada, &root.join("a2a"), json!({}));
    let (status, answer) = http(
        &address,
        &ada,
        "POST",
        "/a2a",
        Some(
            json!({ "jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
            "tenant": project_id,
            "message": {
                "messageId": "m1", "role": "ROLE_USER",
                "parts": [{ "text": "Plan the changelog\nwith dates" }],
                "metadata": { "agentType": "planification" }
            }
        } }),
        ),
    );
    assert_eq!(status, 200, "{answer}");
    let run_id = answer["result"]["task"]["id"].as_str().unwrap();
    until_status(&address, &ada, run_id, "completed");
    let conversation = messages(&address, &ada, run_id);
    let prompt = conversation[0]["message"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(
        prompt.ends_with("The request that started this run:\n\nPlan the changelog\nwith dates"),
        "{prompt}"
    );
}

#[test]
fn the_demo_shows_what_rejecting_the_write_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let ada = create_user(&db, "ada");
    let root = dir.path().join("projects");
    std::fs::create_dir_all(&root).unwrap();
    let served = serve_provider(&db, &["--demo"], &root, "demo", &[]);
    let address = served.address.clone();
    let repo = root.join("repo");
    let task_id = task_with(&address, &ada, &repo, json!({ "approvals": "ask" }));

    let implementation = start_run(&address, &ada, &task_id, "implementation");
    until_status(&address, &ada, &implementation, "waiting");
    let (_, pending) = http(
        &address,
        &ada,
        "GET",
        &format!("/api/agent-runs/{implementation}/pending"),
        None,
    );
    let call = &pending["pending"][0];
    assert_eq!(call["tool"], "fs", "{pending}");
    assert_eq!(call["arguments"]["command"], "create", "{pending}");
    let (status, decided) = http(
        &address,
        &ada,
        "POST",
        &format!("/api/agent-runs/{implementation}/decisions"),
        Some(json!({ "decisions": [{
            "call_id": call["call_id"], "decision": "reject", "reason": "not in this folder"
        }] })),
    );
    assert_eq!(status, 200, "{decided}");

    // The implementation says the write was rejected; the review finds no
    // file and does not complete the task; the chain asks again.
    let runs = until_runs(
        &address,
        &ada,
        &task_id,
        "a second implementation waits",
        |r| r.len() == 3 && r[2]["status"] == "waiting",
    );
    assert_eq!(runs[0]["status"], "completed", "{runs:?}");
    assert_eq!(runs[1]["agent_type"], "review", "{runs:?}");
    assert_eq!(runs[1]["status"], "completed", "{runs:?}");
    assert_eq!(runs[2]["agent_type"], "implementation", "{runs:?}");
    let implemented = messages(&address, &ada, &implementation);
    let results = blocks(&implemented, "user", "tool_result");
    let rejected = results.last().unwrap();
    assert_eq!(rejected["is_error"], true, "{rejected}");
    assert!(
        rejected["content"]
            .as_str()
            .unwrap()
            .contains("not in this folder"),
        "{rejected}"
    );
    let answer = said(&implemented, "assistant");
    assert!(answer.contains("You rejected the write"), "{answer}");
    assert!(!answer.contains("I wrote agentloop-demo.md"), "{answer}");
    assert!(!repo.join("agentloop-demo.md").exists());

    let reviewed = messages(&address, &ada, runs[1]["id"].as_str().unwrap());
    let missing = blocks(&reviewed, "user", "tool_result");
    let missing = missing.last().unwrap();
    assert_eq!(missing["is_error"], true, "{missing}");
    let text = missing["content"].as_str().unwrap();
    assert!(text.starts_with("Error: The path"), "{text}");
    assert!(!text.starts_with("Error: Error:"), "{text}");
    let review = said(&reviewed, "assistant");
    assert!(
        review.contains("I do not complete the workflow"),
        "{review}"
    );
    let calls: Vec<Value> = blocks(&reviewed, "assistant", "tool_use");
    assert!(
        calls.iter().all(|c| c["name"] != "complete_workflow"),
        "{calls:?}"
    );
    let (_, task) = http(
        &address,
        &ada,
        "GET",
        &format!("/api/tasks/{task_id}"),
        None,
    );
    assert_eq!(task["workflow_complete"], false, "{task}");

    // Mark Done stops the chain where it waits.
    let (status, _) = http(
        &address,
        &ada,
        "PUT",
        &format!("/api/tasks/{task_id}/workflow-complete"),
        Some(json!({ "complete": true })),
    );
    assert_eq!(status, 200);
    let third = runs[2]["id"].as_str().unwrap();
    let run = until_status(&address, &ada, third, "completed");
    assert_eq!(run["stopped_by"], "workflow_complete", "{run}");
}

/// A server killed mid-run and started again on the same machine takes the
/// run over at once: its predecessor is gone, so its lease (ten minutes
/// here) is not waited out.
#[test]
fn a_restarted_server_takes_over_its_predecessors_runs_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    // One turn of about six seconds: the kill below lands inside it.
    let mut steps = Vec::new();
    for word in ["alpha ", "beta ", "gamma ", "delta"] {
        steps.push(json!({ "type": "text", "chunks": [word] }));
        steps.push(json!({ "type": "delay", "ms": 1500 }));
    }
    write_script(&script, json!([{ "steps": steps }]));
    let token = create_user(&db, "ada");
    let provider = format!("scripted:{}", script.display());
    let root = dir.path().display().to_string();
    let args = [
        "--db",
        &db,
        "--provider",
        &provider,
        "--projects-root",
        &root,
        "--lease-ms",
        "600000",
    ];
    let (first, base, _) = common::serve(&args);
    let address = base.trim_start_matches("http://").to_owned();
    let task_id = task_with(&address, &token, &dir.path().join("repo"), json!({}));
    let run_id = start_run(&address, &token, &task_id, "planification");
    until_status(&address, &token, &run_id, "running");
    drop(first); // SIGKILL: nothing of the run is closed.

    let (_second, base, _) = common::serve(&args);
    let address = base.trim_start_matches("http://").to_owned();
    let run = until_status(&address, &token, &run_id, "completed");
    let messages = messages(&address, &token, &run_id);
    assert!(said(&messages, "assistant").contains("delta"), "{run}");
}
