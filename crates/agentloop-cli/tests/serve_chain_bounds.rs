//! A runaway chain of `agentloop serve`: the model never calls
//! `complete_workflow`, so implementation and review would chain without
//! end. The chain stops at its bound of agent runs (the project's, or the
//! server's), or at its token budget, and says so on the task, on the run
//! it stopped after, to the page's notices and in the `chain.completed`
//! webhook; a person's next start begins a new chain. On SQLite and on
//! PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::create_user;
use common::served::*;
use serde_json::{Value, json};

/// Tokens each scripted model turn reports (input plus output).
const TOKENS_PER_RUN: u64 = 150;

/// A receiver on loopback answering every request 204; the JSON bodies it
/// hears go to the returned channel.
fn receiver() -> (String, mpsc::Receiver<Value>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let _ = stream.write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
            let _ = tx.send(serde_json::from_slice(&body).unwrap_or(Value::Null));
        }
    });
    (url, rx)
}

/// The task as the API shows it once its chain is no longer `open` and
/// none of its runs is active (polled, bounded).
fn stopped_task(address: &str, token: &str, task_id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (status, task) = http(
            address,
            token,
            "GET",
            &format!("/api/tasks/{task_id}"),
            None,
        );
        assert_eq!(status, 200, "{task}");
        if task["chain_status"] != "open" {
            return task;
        }
        assert!(
            Instant::now() < deadline,
            "the chain of task {task_id} never stopped: {task}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn runs_of(address: &str, token: &str, task_id: &str) -> Vec<Value> {
    let (status, runs) = http(
        address,
        token,
        "GET",
        &format!("/api/tasks/{task_id}/agent-runs"),
        None,
    );
    assert_eq!(status, 200, "{runs}");
    runs.as_array().unwrap().clone()
}

fn new_task(address: &str, token: &str, project_id: &str) -> String {
    let (status, task) = http(
        address,
        token,
        "POST",
        &format!("/api/projects/{project_id}/tasks"),
        Some(json!({ "title": "never done" })),
    );
    assert_eq!(status, 201, "{task}");
    task["id"].as_str().unwrap().to_owned()
}

/// The next `chain.completed` delivery the receiver hears.
fn next_chain_completed(heard: &mpsc::Receiver<Value>) -> Value {
    loop {
        let body = heard.recv_timeout(Duration::from_secs(120)).unwrap();
        if body["event"] == "chain.completed" {
            return body;
        }
    }
}

/// The scenario on the database `db`, with a server whose own bound of
/// runs per chain is `server_max` (`None`: its default, 20).
fn a_runaway_chain_stops_at_its_bound(db: &str, dir: &Path, server_max: Option<u32>) {
    let script = dir.join("script.json");
    // Far more turns than every bound below together: each run answers
    // with one of them and never calls `complete_workflow`.
    let turns: Vec<Value> = (0..80)
        .map(|n| {
            json!({
                "steps": [{ "type": "text", "chunks": [format!("round {n}: more to do")] }],
                "usage": { "input_tokens": 100, "output_tokens": 50 }
            })
        })
        .collect();
    write_script(&script, Value::Array(turns));
    let token = create_user(db, "ada");
    let max = server_max.map(|n| n.to_string());
    let mut extra = vec!["--webhooks-allow-private"];
    if let Some(max) = &max {
        extra.extend(["--chain-max-runs", max.as_str()]);
    }
    let server = serve_with(db, &script, "chains", &extra);
    let address = server.address.as_str();

    // A bound the project sets: 3 runs per chain.
    let (status, refused) = http(
        address,
        &token,
        "POST",
        "/api/projects",
        Some(json!({ "name": "bad", "repoFolder": dir.join("bad"),
                     "chain_limits": { "max_runs": 0 } })),
    );
    assert_eq!(status, 400, "{refused}");
    let bounded = project(
        address,
        &token,
        &dir.join("bounded"),
        json!({ "chain_limits": { "max_runs": 3 } }),
    );
    let (_, shown) = http(
        address,
        &token,
        "GET",
        &format!("/api/projects/{bounded}"),
        None,
    );
    assert_eq!(shown["chain_limits"]["max_runs"], 3, "{shown}");
    let (url, heard) = receiver();
    let (status, hooks) = http(
        address,
        &token,
        "PUT",
        &format!("/api/projects/{bounded}/webhooks"),
        Some(json!({ "urls": [url], "events": ["chain.completed"] })),
    );
    assert_eq!(status, 200, "{hooks}");
    let task_id = new_task(address, &token, &bounded);
    start_run(address, &token, &task_id, "implementation");

    let hook = next_chain_completed(&heard);
    let task = stopped_task(address, &token, &task_id);
    let runs = runs_of(address, &token, &task_id);
    let kinds: Vec<(&str, &str)> = runs
        .iter()
        .map(|r| {
            (
                r["agent_type"].as_str().unwrap(),
                r["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("implementation", "completed"),
            ("review", "completed"),
            ("implementation", "completed"),
        ],
        "the chain stops at its third run"
    );
    let last = runs[2]["id"].as_str().unwrap();
    assert_eq!(task["chain_status"], "stopped", "{task}");
    assert_eq!(task["workflow_complete"], false, "{task}");
    let end = &task["chain_end"];
    assert_eq!(end["reason"], "max_runs", "{task}");
    assert_eq!(end["runs"], 3, "{task}");
    assert_eq!(end["agent_run_id"], last, "{task}");
    assert_eq!(end["tokens"], 3 * TOKENS_PER_RUN, "{task}");
    assert!(
        end["message"].as_str().unwrap().contains("3 agent runs"),
        "{task}"
    );
    // The run it stopped after says so; the ones before do not.
    assert_eq!(runs[2]["chain_end"]["reason"], "max_runs", "{}", runs[2]);
    assert!(runs[1].get("chain_end").is_none(), "{}", runs[1]);
    let (_, one) = http(
        address,
        &token,
        "GET",
        &format!("/api/agent-runs/{last}"),
        None,
    );
    assert_eq!(one["chain_end"], *end, "{one}");
    // The webhook says the same.
    assert_eq!(hook["task_id"], task_id.as_str(), "{hook}");
    assert_eq!(hook["status"], "stopped", "{hook}");
    assert_eq!(hook["reason"], "max_runs", "{hook}");
    assert_eq!(hook["agent_run_id"], last, "{hook}");
    assert_eq!(hook["runs"], 3, "{hook}");

    // A person starts it again: a new chain, bounded again.
    start_run(address, &token, &task_id, "implementation");
    let again = next_chain_completed(&heard);
    assert_eq!(again["reason"], "max_runs", "{again}");
    let runs = runs_of(address, &token, &task_id);
    assert_eq!(runs.len(), 6, "{runs:?}");
    assert_eq!(again["agent_run_id"], runs[5]["id"], "{again}");
    let task = stopped_task(address, &token, &task_id);
    assert_eq!(task["chain_end"]["runs"], 3, "{task}");
    assert_eq!(task["chain_end"]["agent_run_id"], runs[5]["id"], "{task}");

    // A token budget: 400 tokens, 150 a run, so the third run crosses it.
    let budgeted = project(
        address,
        &token,
        &dir.join("budgeted"),
        json!({ "chain_limits": { "max_tokens": 400 } }),
    );
    let task_id = new_task(address, &token, &budgeted);
    start_run(address, &token, &task_id, "review");
    let task = stopped_task(address, &token, &task_id);
    assert_eq!(task["chain_end"]["reason"], "max_tokens", "{task}");
    assert_eq!(task["chain_end"]["runs"], 3, "{task}");
    assert_eq!(task["chain_end"]["tokens"], 450, "{task}");
    assert_eq!(runs_of(address, &token, &task_id).len(), 3);

    // No bound of its own: the server's.
    let expected = u64::from(server_max.unwrap_or(20));
    let plain = project(address, &token, &dir.join("plain"), json!({}));
    let (_, shown) = http(
        address,
        &token,
        "GET",
        &format!("/api/projects/{plain}"),
        None,
    );
    assert_eq!(shown["chain_limits"]["max_runs"], expected, "{shown}");
    let task_id = new_task(address, &token, &plain);
    start_run(address, &token, &task_id, "implementation");
    let task = stopped_task(address, &token, &task_id);
    assert_eq!(task["chain_end"]["reason"], "max_runs", "{task}");
    assert_eq!(task["chain_end"]["runs"], expected, "{task}");
    let runs = runs_of(address, &token, &task_id);
    assert_eq!(runs.len() as u64, expected);
    assert!(runs.iter().all(|r| r["status"] == "completed"), "{runs:?}");
}

#[test]
fn a_runaway_chain_stops_at_its_bound_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    a_runaway_chain_stops_at_its_bound(&db, dir.path(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runaway_chain_stops_at_its_bound_on_postgres() {
    let Ok(admin_url) = std::env::var("AGENTLOOP_TEST_POSTGRES_URL") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI needs AGENTLOOP_TEST_POSTGRES_URL"
        );
        println!("skipping: AGENTLOOP_TEST_POSTGRES_URL is not set");
        return;
    };
    let name = format!("agentloop_cli_chain_bounds_{}", std::process::id());
    let database = ScratchDatabase::create(&admin_url, &name).await;
    let dir = tempfile::tempdir().unwrap();
    let url = database.url.clone();
    let path = dir.path().to_owned();
    tokio::task::spawn_blocking(move || a_runaway_chain_stops_at_its_bound(&url, &path, Some(4)))
        .await
        .unwrap();
    database.remove().await;
}
