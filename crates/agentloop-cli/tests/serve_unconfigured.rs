//! `agentloop serve` with no model configured starts anyway: the page and
//! the API work, and a run fails saying how to configure a model. With
//! `--demo` every run plays the shipped demo conversation.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use serde_json::{Value, json};

mod common;

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
        message.contains("ANTHROPIC_API_KEY") && message.contains("--demo"),
        "{run}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_demo_every_run_plays_the_demo_conversation() {
    agentloop_providers::ensure_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let token = user(dir.path());
    let (_server, base, logged) = served(dir.path(), &["--demo"]);
    assert!(logged.iter().any(|l| l.contains("demo")), "{logged:?}");
    let run = finished_run(&base, &token, dir.path()).await;
    assert_ne!(run["status"], "failed", "{run}");
}
