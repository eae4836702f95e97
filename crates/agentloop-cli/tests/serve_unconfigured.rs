//! `agentloop serve` with no model configured starts anyway: the page and
//! the API work, and a run fails saying how to configure a model. With
//! `--demo` every run plays the shipped demo conversation.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn agentloop() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_agentloop"));
    for key in [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "AGENTLOOP_MODEL",
    ] {
        command.env_remove(key);
    }
    command
}

/// Starts `serve` with `extra` arguments; returns it, its address and the
/// lines it logged before serving.
fn serve(dir: &std::path::Path, extra: &[&str]) -> (Killed, String, Vec<String>) {
    let db = dir.join("agentloop.db").display().to_string();
    let mut child = agentloop()
        .args([
            "serve",
            "--db",
            &db,
            "--bind",
            "127.0.0.1:0",
            "--projects-root",
        ])
        .arg(dir)
        .args(extra)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut before = Vec::new();
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { return };
            eprintln!("[server] {line}");
            if let Some(rest) = line.split("serving on http://").nth(1) {
                let address = rest.split_whitespace().next().unwrap_or("").to_owned();
                let _ = tx.send((address, std::mem::take(&mut before)));
            } else {
                before.push(line);
            }
        }
    });
    let (address, logged) = rx.recv_timeout(Duration::from_secs(60)).unwrap();
    (Killed(child), format!("http://{address}"), logged)
}

fn user(dir: &std::path::Path) -> String {
    let db = dir.join("agentloop.db").display().to_string();
    let output = agentloop()
        .args(["users", "create", "ada", "--db", &db])
        .output()
        .unwrap();
    assert!(output.status.success());
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
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
    let (_server, base, logged) = serve(dir.path(), &[]);
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
    let (_server, base, logged) = serve(dir.path(), &["--demo"]);
    assert!(logged.iter().any(|l| l.contains("demo")), "{logged:?}");
    let run = finished_run(&base, &token, dir.path()).await;
    assert_ne!(run["status"], "failed", "{run}");
}
