//! What bounds a run with no local model needed: the default output cap
//! sent to a model the table does not know (an OpenAI-compatible server's)
//! and to one it knows, and `--timeout` ending a run whose model never
//! finishes with `limit_exceeded` (`timeout`) and exit code 5.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::{Output, Stdio};

use serde_json::Value;

/// `agentloop run hi` with `args`, in a home of its own, nothing on stdin.
async fn run(args: Vec<String>) -> Output {
    let mut command = common::agentloop();
    let home = tempfile::tempdir().unwrap();
    command
        .arg("run")
        .arg("hi")
        .args(args)
        .env("HOME", home.path())
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("NO_COLOR", "1")
        .env_remove("AGENTLOOP_AGENT_LOOP_STRATEGY")
        .stdin(Stdio::null());
    tokio::task::spawn_blocking(move || {
        let output = command.output().unwrap();
        drop(home);
        output
    })
    .await
    .unwrap()
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|a| (*a).to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_model_is_capped_at_1024_tokens_and_max_tokens_overrides_it() {
    let server = common::openai::start(Some(&["llama-local"]), "ok").await;
    let url = server.base_url.clone();
    let unknown = run(args(&["--base-url", &url])).await;
    assert!(unknown.status.success());
    let known = run(args(&["--base-url", &url, "--model", "gpt-4.1"])).await;
    assert!(known.status.success());
    let given = run(args(&["--base-url", &url, "--max-tokens", "77"])).await;
    assert!(given.status.success());
    let caps: Vec<Value> = server
        .completions()
        .await
        .iter()
        .map(|request| request["max_tokens"].clone())
        .collect();
    assert_eq!(caps, [1024, 4096, 77]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_past_its_timeout_ends_limit_exceeded_with_exit_code_5() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("hang.json");
    std::fs::write(
        &script,
        r#"[{"steps": [{"type": "text", "chunks": ["Thinking..."]}, {"type": "hang"}]}]"#,
    )
    .unwrap();
    let provider = format!("scripted:{}", script.display());
    let output = run(args(&[
        "--provider",
        &provider,
        "--json",
        "--timeout",
        "300ms",
    ]))
    .await;
    assert_eq!(output.status.code(), Some(5));
    let last: Value = String::from_utf8_lossy(&output.stdout)
        .lines()
        .last()
        .map(|line| serde_json::from_str(line).unwrap())
        .unwrap();
    assert_eq!(last["type"], "finished");
    assert_eq!(last["result"]["status"], "limit_exceeded");
    assert_eq!(last["result"]["limit"], "timeout");
    // What streamed before the deadline is kept.
    let messages = last["result"]["messages"].as_array().unwrap();
    assert_eq!(
        messages.last().unwrap()["content"][0]["text"],
        "Thinking..."
    );

    // The terminal view names the limit.
    let shown = run(args(&["--provider", &provider, "--timeout", "300ms"])).await;
    assert_eq!(shown.status.code(), Some(5));
    let stderr = String::from_utf8_lossy(&shown.stderr);
    assert!(stderr.contains("limit reached: timeout"), "{stderr}");
}
