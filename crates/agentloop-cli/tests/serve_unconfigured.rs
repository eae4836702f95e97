//! `agentloop serve` with no model configured starts anyway: the page and
//! the API work, and a run fails saying how to configure a model. With
//! `--demo` every run plays the shipped demo: each implementation → review
//! chain runs to its end (a file written, the workflow completed), and a
//! planification agent asks a question.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::{Value, json};

mod common;

use common::served::{http, start_run, until_status};
use common::{create_user, serve};

fn served(dir: &std::path::Path, extra: &[&str]) -> (common::Killed, String, Vec<String>) {
    let db = dir.join("agentloop.db").display().to_string();
    let root = dir.display().to_string();
    let mut args = vec!["--db", db.as_str(), "--projects-root", root.as_str()];
    args.extend_from_slice(extra);
    serve(&args)
}

fn user(dir: &std::path::Path) -> String {
    create_user(&dir.join("agentloop.db").display().to_string(), "ada")
}

/// Starts an implementation run on a new task and waits for it to end.
async fn finished_run(base: &str, token: &str, dir: &std::path::Path) -> Value {
    let client = reqwest::Client::new();
    let post = |path: String, body: Value| {
        client
            .post(format!("{base}{path}"))
            .bearer_auth(token)
            .json(&body)
            .send()
    };
    let project: Value = post(
        "/api/projects".into(),
        json!({"name": "p", "repoFolder": dir.join("p")}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let task: Value = post(
        format!("/api/projects/{}/tasks", project["id"].as_str().unwrap()),
        json!({"title": "t"}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let task_id = task["id"].as_str().unwrap();
    let created = post(
        format!("/api/tasks/{task_id}/agent-runs"),
        json!({"agentType": "implementation"}),
    )
    .await
    .unwrap();
    assert_eq!(created.status(), 201);
    let run: Value = created.json().await.unwrap();
    let run_id = run["id"].as_str().unwrap();
    for _ in 0..300 {
        let run: Value = client
            .get(format!("{base}/api/agent-runs/{run_id}"))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if run["status"] != "running" {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the run did not end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_model_the_server_starts_and_runs_say_how_to_configure_one() {
    agentloop_providers::ensure_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let token = user(dir.path());
    let (_server, base, logged) = served(dir.path(), &[]);
    assert!(
        logged.iter().any(|l| l.contains("ANTHROPIC_API_KEY")),
        "the log says how to configure a model: {logged:?}"
    );
    let page = reqwest::get(format!("{base}/")).await.unwrap();
    assert_eq!(page.status(), 200);
    let run = finished_run(&base, &token, dir.path()).await;
    assert_eq!(run["status"], "failed", "{run}");
    let message = run["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("ANTHROPIC_API_KEY")
            && message.contains("--demo")
            && message.contains("--local"),
        "{run}"
    );
    // What to do, plainly: no provider-failure framing a newcomer must decode.
    assert!(
        message.starts_with("no model provider is configured on this server"),
        "{run}"
    );
    assert!(
        !message.contains("provider error") && !message.contains("invalid request"),
        "{run}"
    );
}

/// Drives a task's chain to its end: approves the demo's file write if the
/// server asks for approval, and returns the task's runs once the task's
/// workflow is complete and none of its runs is active.
fn settled_chain(address: &str, token: &str, task_id: &str) -> Vec<Value> {
    let mut last = Value::Null;
    for _ in 0..600 {
        let (_, runs) = http(
            address,
            token,
            "GET",
            &format!("/api/tasks/{task_id}/agent-runs"),
            None,
        );
        for run in runs.as_array().into_iter().flatten() {
            if run["status"] == "waiting" {
                approve_writes(address, token, run["id"].as_str().unwrap());
            }
        }
        let (_, task) = http(
            address,
            token,
            "GET",
            &format!("/api/tasks/{task_id}"),
            None,
        );
        let active = runs
            .as_array()
            .into_iter()
            .flatten()
            .any(|r| r["status"] == "running" || r["status"] == "waiting");
        if task["workflow_complete"] == true && !active {
            return runs.as_array().unwrap().clone();
        }
        last = runs;
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the chain of task {task_id} did not end: {last}");
}

/// Approves the fs calls a waiting run waits on (a server whose policy
/// asks before a write); a question is not an approval and stays.
fn approve_writes(address: &str, token: &str, run_id: &str) {
    let (_, pending) = http(
        address,
        token,
        "GET",
        &format!("/api/agent-runs/{run_id}/pending"),
        None,
    );
    let decisions: Vec<Value> = pending["pending"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["kind"] == "approval" && p["tool"] == "fs" && p["decision"].is_null())
        .map(|p| json!({ "call_id": p["call_id"], "decision": "approve" }))
        .collect();
    if !decisions.is_empty() {
        let (status, body) = http(
            address,
            token,
            "POST",
            &format!("/api/agent-runs/{run_id}/decisions"),
            Some(json!({ "decisions": decisions })),
        );
        assert!(status == 200 || status == 409, "{status}: {body}");
    }
}

/// The text of a run's last message.
fn last_text(address: &str, token: &str, run_id: &str) -> String {
    let (status, messages) = http(
        address,
        token,
        "GET",
        &format!("/api/agent-runs/{run_id}/messages"),
        None,
    );
    assert_eq!(status, 200, "{messages}");
    let last = messages.as_array().unwrap().last().unwrap();
    assert_eq!(last["message"]["role"], "assistant", "{last}");
    last["message"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect()
}

fn new_task(address: &str, token: &str, folder: &std::path::Path) -> String {
    let (status, project) = http(
        address,
        token,
        "POST",
        "/api/projects",
        Some(json!({ "name": "demo", "repoFolder": folder })),
    );
    assert_eq!(status, 201, "{project}");
    let (status, task) = http(
        address,
        token,
        "POST",
        &format!("/api/projects/{}/tasks", project["id"].as_str().unwrap()),
        Some(json!({ "title": "try the demo" })),
    );
    assert_eq!(status, 201, "{task}");
    task["id"].as_str().unwrap().to_owned()
}

#[test]
fn with_demo_every_chain_runs_to_its_end_and_a_question_is_asked() {
    let dir = tempfile::tempdir().unwrap();
    let token = user(dir.path());
    let (_server, base, logged) = served(dir.path(), &["--demo"]);
    assert!(
        logged.iter().any(|l| l.contains("demo-agents.json")),
        "{logged:?}"
    );
    let address = base.trim_start_matches("http://");

    // Each chain: the implementation agent writes a file, the review it
    // chains to reads it and completes the workflow, and the chain ends.
    // The second chain shows that later runs play the demo too.
    let mut tasks = Vec::new();
    for round in ["first", "second"] {
        let folder = dir.path().join(round);
        let task_id = new_task(address, &token, &folder);
        start_run(address, &token, &task_id, "implementation");
        let runs = settled_chain(address, &token, &task_id);
        let shape: Vec<(&str, &str)> = runs
            .iter()
            .map(|r| {
                (
                    r["agent_type"].as_str().unwrap(),
                    r["status"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            [("implementation", "completed"), ("review", "completed")],
            "{runs:?}"
        );
        let written = std::fs::read_to_string(folder.join("agentloop-demo.md")).unwrap();
        assert!(
            written.contains("implementation agent wrote this file"),
            "{written}"
        );
        let implemented = last_text(address, &token, runs[0]["id"].as_str().unwrap());
        assert!(
            implemented.contains("I wrote agentloop-demo.md"),
            "{implemented}"
        );
        let reviewed = last_text(address, &token, runs[1]["id"].as_str().unwrap());
        assert!(reviewed.contains("no further agent starts"), "{reviewed}");
        tasks.push(task_id);
    }
    // The first chain stayed ended while the second ran.
    let (_, runs) = http(
        address,
        &token,
        "GET",
        &format!("/api/tasks/{}/agent-runs", tasks[0]),
        None,
    );
    assert_eq!(runs.as_array().unwrap().len(), 2, "{runs}");

    // A planification agent asks a question; the answer lets it finish.
    let task_id = new_task(address, &token, &dir.path().join("third"));
    let run_id = start_run(address, &token, &task_id, "planification");
    until_status(address, &token, &run_id, "waiting");
    let (_, pending) = http(
        address,
        &token,
        "GET",
        &format!("/api/agent-runs/{run_id}/pending"),
        None,
    );
    let question = &pending["pending"][0];
    assert_eq!(question["kind"], "question", "{pending}");
    assert!(
        question["question"]
            .as_str()
            .unwrap()
            .starts_with("What should this task achieve?"),
        "{pending}"
    );
    let (status, body) = http(
        address,
        &token,
        "POST",
        &format!("/api/agent-runs/{run_id}/decisions"),
        Some(json!({ "decisions": [{
            "call_id": question["call_id"], "decision": "answer", "text": "Only a plan for now"
        }] })),
    );
    assert_eq!(status, 200, "{body}");
    until_status(address, &token, &run_id, "completed");
    assert!(last_text(address, &token, &run_id).starts_with("Thank you."));
}
