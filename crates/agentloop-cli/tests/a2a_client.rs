//! `agentloop run --a2a NAME=URL`: a remote A2A agent as a tool, against a
//! sample agent built on the reference Python SDK's server classes
//! (`tests/a2a_client/sample_server.py`, `a2a-sdk` from
//! `.ci/python-test-tools.txt`). The answer comes back as the tool's
//! result, the agent's progress as the call's progress, an input-required
//! task as a result naming it, and an interrupted run cancels the remote
//! task (the sample's `cancel` leaves a marker).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::events;
use serde_json::{Value, json};

/// The virtual environment's Python with `a2a-sdk`, or `None` (said
/// loudly) when it is not installed; under CI that is a failure.
fn python() -> Option<PathBuf> {
    common::python::python_with("a2a.server, uvicorn", "a2a-sdk")
}

/// The sample agent, killed when dropped.
struct Sample {
    child: Child,
    url: String,
}

impl Drop for Sample {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sample(python: &Path, markers: &Path) -> Sample {
    let mut child = Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/a2a_client/sample_server.py"))
        .arg(markers)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .trim()
        .strip_prefix("listening ")
        .unwrap_or_else(|| panic!("the sample did not start: {line:?}"));
    Sample {
        url: format!("http://127.0.0.1:{port}"),
        child,
    }
}

fn script(dir: &Path, turns: Value) -> String {
    let path = dir.join("script.json");
    std::fs::write(&path, turns.to_string()).unwrap();
    format!("scripted:{}", path.display())
}

fn call(id: &str, message: &str) -> Value {
    json!({ "steps": [{ "type": "tool_call", "id": id, "name": "a2a_sample",
        "fragments": [json!({ "message": message }).to_string()] }] })
}

fn run_args<'a>(provider: &'a str, agent: &'a str) -> Vec<&'a str> {
    vec![
        "run",
        "delegate",
        "--approve",
        "all",
        "--provider",
        provider,
        "--a2a",
        agent,
        "--json",
    ]
}

/// The tool result block the model got for `id`.
fn result_of(events: &[Value], id: &str) -> Value {
    events
        .iter()
        .filter(|e| e["type"] == "message_created")
        .flat_map(|e| {
            e["message"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .find(|block| block["type"] == "tool_result" && block["tool_use_id"] == id)
        .unwrap_or_else(|| panic!("no tool result for {id}: {events:?}"))
}

#[test]
fn a_run_delegates_to_an_a2a_sdk_agent_with_progress_and_input_required() {
    let Some(python) = python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sample = sample(&python, dir.path());
    let provider = script(
        dir.path(),
        json!([
            call("call-echo", "hello there"),
            call("call-ask", "ask me"),
            { "steps": [{ "type": "text", "chunks": ["done"] }] }
        ]),
    );
    let agent = format!("sample={}", sample.url);
    let output = Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .args(run_args(&provider, &agent))
        .env_remove("AGENTLOOP_AGENT_LOOP_STRATEGY")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let events = events(&output);

    // The answer artifact is the call's result.
    let echo = result_of(&events, "call-echo");
    assert_ne!(echo["is_error"], true, "{echo}");
    assert!(
        echo["content"]
            .as_str()
            .unwrap()
            .contains("echo: hello there"),
        "{echo}"
    );
    // The agent's working update was the call's progress.
    let progress: Vec<String> = events
        .iter()
        .filter(|e| e["type"] == "tool_block_update" && e["tool_use_id"] == "call-echo")
        .map(|e| e.to_string())
        .collect();
    assert!(
        progress
            .iter()
            .any(|p| p.contains("thinking about hello there")),
        "{progress:?}"
    );

    // An input-required task comes back as a result that says so and
    // names the task to reply to.
    let ask = result_of(&events, "call-ask");
    let text = ask["content"].as_str().unwrap();
    assert!(
        text.contains("needs input") && text.contains("what colour?"),
        "{ask}"
    );
    assert!(text.contains("task_id"), "{ask}");
}

#[test]
fn interrupting_a_run_cancels_the_remote_task() {
    let Some(python) = python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sample = sample(&python, dir.path());
    let provider = script(dir.path(), json!([call("call-slow", "slow work")]));
    let agent = format!("sample={}", sample.url);
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .args(run_args(&provider, &agent))
        .env_remove("AGENTLOOP_AGENT_LOOP_STRATEGY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the remote agent reports a step.
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let working = line.contains("tool_block_update") && line.contains("step 1");
        seen.push(line);
        if working {
            break;
        }
    }
    assert!(
        seen.last().is_some_and(|l| l.contains("step 1")),
        "{seen:?}"
    );
    // SIGINT, as Ctrl-C would.
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    seen.extend(lines.map(Result::unwrap));
    let status = child.wait().unwrap();
    let finished = seen.last().unwrap();
    assert!(
        finished.contains("\"cancelled\""),
        "{finished} ({status:?})"
    );

    // The sample agent's cancel ran for its task.
    let deadline = Instant::now() + Duration::from_secs(10);
    let marker = loop {
        let found = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(Result::ok)
            .find(|e| e.file_name().to_string_lossy().starts_with("cancelled-"));
        if let Some(found) = found {
            break found.path();
        }
        assert!(
            Instant::now() < deadline,
            "the remote task was never cancelled"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(std::fs::read_to_string(marker).unwrap(), "cancelled");
}
