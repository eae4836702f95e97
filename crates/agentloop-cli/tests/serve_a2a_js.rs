//! `agentloop serve`'s A2A route driven by the reference JavaScript client
//! (`@a2a-js/sdk`'s `ClientFactory` over JSON-RPC, protocol 1.0; installed
//! by `scripts/install-a2a-js-client.sh`; the calls are in
//! `tests/fixtures/a2a_js_client.cjs`): the card, a message answered at
//! once, a streamed task whose write waits for approval and is approved on
//! the same task, the task read back and listed, and another user's client
//! refused the task. The file the approved call wrote is checked on disk.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::create_user;
use common::served::*;
use serde_json::{Value, json};

/// The installed client's `node_modules`, or `None` (said loudly) when it
/// is not installed; under CI that is a failure.
fn client_modules() -> Option<PathBuf> {
    common::node::modules("a2a-js-client", "@a2a-js/sdk", "install-a2a-js-client.sh")
}

#[test]
fn the_javascript_sdk_sends_streams_approves_reads_and_lists_tasks() {
    let Some(modules) = client_modules() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite").display().to_string();
    let script = dir.path().join("script.json");
    let create = json!({ "command": "create", "path": "/notes.md", "file_text": "noted" });
    write_script(
        &script,
        json!([
            text("Hello from agentloop."),
            { "steps": [{ "type": "tool_call", "id": "w1", "name": "fs",
                          "fragments": [create.to_string()] }] },
            text("Written.")
        ]),
    );
    let token = create_user(&db, "ada");
    let other = create_user(&db, "bob");
    let server = serve(&db, &script, "only");
    let repo = dir.path().join("repo");
    let tenant = project(
        &server.address,
        &token,
        &repo,
        json!({ "approvals": "ask" }),
    );

    let output = Command::new("node")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/a2a_js_client.cjs"))
        .arg(format!("http://{}", server.address))
        .arg(&token)
        .arg(&tenant)
        .arg(&other)
        .env("NODE_PATH", &modules)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let result: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| {
            panic!(
                "the client printed no result ({e}); stdout:\n{stdout}\nstderr:\n{}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
    assert_eq!(result["error"], Value::Null, "{result}");
    let steps = &result["steps"];

    assert_eq!(steps["card"]["versions"], json!(["1.0", "0.3"]), "{steps}");
    assert_eq!(
        (&steps["answered"]["state"], &steps["answered"]["answer"]),
        (
            &json!("TASK_STATE_COMPLETED"),
            &json!(["Hello from agentloop."])
        ),
        "{steps}"
    );
    // The write waits: the stream ends with the task asking for input.
    assert_eq!(
        steps["streamed"],
        json!(["task", "statusUpdate:TASK_STATE_INPUT_REQUIRED"]),
        "{steps}"
    );
    // Approved on the same task: the call runs, the answer comes as an
    // artifact, and the task completes.
    let approved: Vec<&str> = steps["approved"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert_eq!(approved.first(), Some(&"task"), "{steps}");
    assert_eq!(
        &approved[approved.len() - 2..],
        ["artifact:Written.", "statusUpdate:TASK_STATE_COMPLETED"],
        "{steps}"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("notes.md")).unwrap(),
        "noted"
    );
    let waited = steps["approved"]["id"].as_str().unwrap();
    assert_eq!(
        steps["got"],
        json!({ "id": waited, "state": "TASK_STATE_COMPLETED" })
    );
    // Both tasks, newest first.
    assert_eq!(
        steps["listed"],
        json!([
            { "id": waited, "state": "TASK_STATE_COMPLETED" },
            { "id": steps["answered"]["id"], "state": "TASK_STATE_COMPLETED" }
        ]),
        "{steps}"
    );
    assert_eq!(
        steps["other"], "JsonRpcTaskNotFoundError: Task not found",
        "{steps}"
    );
}
