//! `agentloop serve`'s A2A endpoint driven by the reference Python SDK
//! (`a2a-sdk`, pinned in `.ci/python-test-tools.txt`; its client reads
//! the agent card at the well-known path and speaks JSON-RPC): a blocking
//! send, a stream, reading a task, an approval as `input-required` that a
//! reply resolves (text and a data part), a cancel that stops the run
//! before its tool writes, and the refusals: another user's task, no
//! token, a foreign project, a wrong protocol version, an unknown method.
//! The same through the SDK's A2A 0.3 compat transport (and raw 0.3
//! JSON-RPC, to see 0.3's shapes on the wire).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::create_user;
use common::served::*;
use serde_json::{Value, json};

/// The virtual environment's Python with `a2a-sdk`, or `None` (said
/// loudly) when it is not installed; under CI that is a failure.
fn python() -> Option<PathBuf> {
    common::python::python_with("a2a.client, a2a.server", "a2a-sdk")
}

/// One run of the SDK client script; its last printed line, parsed.
fn client(python: &Path, address: &str, token: &str, args: &[&str]) -> Value {
    let output = Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/serve_a2a/client.py"))
        .arg(format!("http://{address}"))
        .arg(token)
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| {
        panic!(
            "the client printed no result ({e}); stdout:\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

fn items(out: &Value) -> Vec<Value> {
    out["items"]
        .as_array()
        .unwrap_or_else(|| panic!("items: {out}"))
        .clone()
}

/// The state the last item leaves the task in.
fn last_state(items: &[Value]) -> String {
    let last = items.last().expect("at least one item");
    last["task"]["status"]["state"]
        .as_str()
        .or(last["statusUpdate"]["status"]["state"].as_str())
        .unwrap_or_else(|| panic!("no state in {last}"))
        .to_owned()
}

fn task_id(items: &[Value]) -> String {
    items[0]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("the first item is the task: {items:?}"))
        .to_owned()
}

fn answer(artifacts: &Value) -> String {
    artifacts
        .as_array()
        .unwrap_or_else(|| panic!("artifacts: {artifacts}"))
        .iter()
        .find(|a| a["artifactId"] == "answer")
        .and_then(|a| a["parts"][0]["text"].as_str())
        .unwrap_or_else(|| panic!("an answer artifact in {artifacts}"))
        .to_owned()
}

#[test]
fn the_a2a_sdk_sends_streams_reads_and_answers_input_required() {
    let Some(python) = python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let create =
        |path: &str| json!({ "command": "create", "path": path, "file_text": "hello" }).to_string();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([
            { "steps": [{ "type": "text", "chunks": ["Planned ", "it."] }] },
            { "steps": [{ "type": "text", "chunks": ["Streamed."] }] },
            { "steps": [{ "type": "tool_call", "id": "call-1", "name": "fs", "fragments": [create("a2a.md")] }] },
            { "steps": [{ "type": "text", "chunks": ["Written."] }] },
            { "steps": [{ "type": "tool_call", "id": "call-2", "name": "fs", "fragments": [create("no.md")] }] },
            { "steps": [{ "type": "text", "chunks": ["Skipped."] }] }
        ]),
    );
    let db = dir.path().join("db.sqlite").display().to_string();
    let token = create_user(&db, "ada");
    let server = serve(&db, &script, "only");
    let address = server.address.clone();
    let plain = project(&address, &token, &dir.path().join("one"), json!({}));

    // The card is public, at the well-known path.
    let (status, card) = http(&address, "", "GET", "/.well-known/agent-card.json", None);
    assert_eq!(status, 200, "{card}");
    assert_eq!(card["supportedInterfaces"][0]["protocolBinding"], "JSONRPC");
    assert_eq!(card["supportedInterfaces"][0]["protocolVersion"], "1.0");
    assert_eq!(card["capabilities"]["streaming"], true);

    // A blocking send answers the completed task with its answer.
    let sent = client(
        &python,
        &address,
        &token,
        &["send", &plain, "planification", "Plan the work"],
    );
    let sent = items(&sent);
    assert_eq!(last_state(&sent), "TASK_STATE_COMPLETED", "{sent:?}");
    assert_eq!(answer(&sent[0]["task"]["artifacts"]), "Planned it.");
    let first = task_id(&sent);
    let context = sent[0]["task"]["contextId"].as_str().unwrap().to_owned();
    // The context is the agentloop task the message created.
    let (status, created) = http(
        &address,
        &token,
        "GET",
        &format!("/api/tasks/{context}"),
        None,
    );
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["title"], "Plan the work");

    // A stream: the task, the model's words as a working update, the
    // answer artifact, then completed.
    let streamed = items(&client(
        &python,
        &address,
        &token,
        &["stream", &plain, "planification", "Stream the work"],
    ));
    assert_eq!(streamed[0]["task"]["status"]["state"], "TASK_STATE_WORKING");
    assert!(
        streamed
            .iter()
            .any(|i| i["statusUpdate"]["status"]["message"]["parts"][0]["text"] == "Streamed."),
        "{streamed:?}"
    );
    let artifact = streamed
        .iter()
        .find(|i| i["artifactUpdate"].is_object())
        .unwrap_or_else(|| panic!("an artifact update: {streamed:?}"));
    assert_eq!(
        artifact["artifactUpdate"]["artifact"]["parts"][0]["text"],
        "Streamed."
    );
    assert_eq!(last_state(&streamed), "TASK_STATE_COMPLETED");

    // GetTask reads the first task back.
    let got = client(&python, &address, &token, &["get", &first]);
    assert_eq!(
        got["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{got}"
    );
    assert_eq!(answer(&got["task"]["artifacts"]), "Planned it.");

    // A write that needs approval: the task needs input, the file is not
    // written, and the status message names the call.
    let repo = dir.path().join("two");
    let asking = project(&address, &token, &repo, json!({ "approvals": "ask" }));
    let waiting = items(&client(
        &python,
        &address,
        &token,
        &["stream", &asking, "planification", "Write a2a.md"],
    ));
    assert_eq!(
        last_state(&waiting),
        "TASK_STATE_INPUT_REQUIRED",
        "{waiting:?}"
    );
    let waiting_id = task_id(&waiting);
    let last = waiting.last().unwrap();
    let pending = &last["statusUpdate"]["status"]["message"]["parts"][1]["data"]["pending"];
    assert_eq!(pending[0]["call_id"], "call-1", "{last}");
    assert_eq!(pending[0]["kind"], "approval");
    assert!(!repo.join("a2a.md").exists());
    let got = client(&python, &address, &token, &["get", &waiting_id]);
    assert_eq!(
        got["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{got}"
    );

    // A text reply approves it: the tool runs and the task completes.
    let resumed = items(&client(
        &python,
        &address,
        &token,
        &["reply", &waiting_id, "approve"],
    ));
    assert_eq!(last_state(&resumed), "TASK_STATE_COMPLETED", "{resumed:?}");
    assert_eq!(task_id(&resumed), waiting_id);
    assert_eq!(
        std::fs::read_to_string(repo.join("a2a.md")).unwrap(),
        "hello"
    );

    // A completed task takes no more messages.
    let again = client(
        &python,
        &address,
        &token,
        &["reply", &waiting_id, "approve"],
    );
    assert!(
        again["error"]
            .as_str()
            .unwrap_or_default()
            .starts_with("UnsupportedOperationError"),
        "{again}"
    );

    // A data part with decisions (the HTTP API's shape) rejects the next.
    let waiting = items(&client(
        &python,
        &address,
        &token,
        &["stream", &asking, "planification", "Write no.md"],
    ));
    assert_eq!(
        last_state(&waiting),
        "TASK_STATE_INPUT_REQUIRED",
        "{waiting:?}"
    );
    let decisions = json!({ "decisions": [
        { "call_id": "call-2", "decision": "reject", "reason": "not now" }
    ] });
    let rejected = items(&client(
        &python,
        &address,
        &token,
        &["reply-data", &task_id(&waiting), &decisions.to_string()],
    ));
    assert_eq!(
        last_state(&rejected),
        "TASK_STATE_COMPLETED",
        "{rejected:?}"
    );
    assert!(!repo.join("no.md").exists());
}

/// The `list` command's page.
fn listed(python: &Path, address: &str, token: &str, params: Value) -> Value {
    let out = client(python, address, token, &["list", &params.to_string()]);
    assert!(out.get("error").is_none(), "{out}");
    out["list"].clone()
}

fn ids(page: &Value) -> Vec<String> {
    page["tasks"]
        .as_array()
        .map(|tasks| {
            tasks
                .iter()
                .map(|t| t["id"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn the_a2a_sdk_lists_the_callers_tasks_a_page_at_a_time() {
    let Some(python) = python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([
            { "steps": [{ "type": "text", "chunks": ["One."] }] },
            { "steps": [{ "type": "text", "chunks": ["Two."] }] },
            { "steps": [{ "type": "text", "chunks": ["Three."] }] }
        ]),
    );
    let db = dir.path().join("db.sqlite").display().to_string();
    let ada = create_user(&db, "ada");
    let bob = create_user(&db, "bob");
    let server = serve(&db, &script, "only");
    let address = server.address.clone();
    let first = project(&address, &ada, &dir.path().join("one"), json!({}));
    let second = project(&address, &ada, &dir.path().join("two"), json!({}));
    let mut sent = Vec::new();
    for (tenant, text) in [(&first, "One"), (&first, "Two"), (&second, "Three")] {
        let items = items(&client(
            &python,
            &address,
            &ada,
            &["send", tenant, "planification", text],
        ));
        assert_eq!(last_state(&items), "TASK_STATE_COMPLETED", "{items:?}");
        let context = items[0]["task"]["contextId"].as_str().unwrap().to_owned();
        sent.push((task_id(&items), context));
    }

    // All of the caller's tasks, newest first, without artifacts unless
    // asked for.
    let all = listed(&python, &address, &ada, json!({}));
    assert_eq!(
        ids(&all),
        [sent[2].0.clone(), sent[1].0.clone(), sent[0].0.clone()],
        "{all}"
    );
    assert_eq!(all["totalSize"], 3, "{all}");
    assert!(all["tasks"][0].get("artifacts").is_none(), "{all}");
    let with = listed(&python, &address, &ada, json!({ "includeArtifacts": true }));
    assert_eq!(answer(&with["tasks"][0]["artifacts"]), "Three.");

    // A page at a time.
    let page = listed(
        &python,
        &address,
        &ada,
        json!({ "tenant": first, "pageSize": 1 }),
    );
    assert_eq!(ids(&page), [sent[1].0.clone()], "{page}");
    assert_eq!(page["totalSize"], 2);
    let token = page["nextPageToken"].as_str().unwrap();
    let next = listed(
        &python,
        &address,
        &ada,
        json!({ "tenant": first, "pageSize": 1, "pageToken": token }),
    );
    assert_eq!(ids(&next), [sent[0].0.clone()], "{next}");
    assert!(next.get("nextPageToken").is_none_or(|t| t == ""), "{next}");

    // One context; one state.
    let context = listed(&python, &address, &ada, json!({ "contextId": sent[2].1 }));
    assert_eq!(ids(&context), [sent[2].0.clone()], "{context}");
    let working = listed(
        &python,
        &address,
        &ada,
        json!({ "status": "TASK_STATE_WORKING" }),
    );
    assert!(ids(&working).is_empty(), "{working}");

    // Another user sees none of it, and cannot name ada's project.
    assert!(ids(&listed(&python, &address, &bob, json!({}))).is_empty());
    let refused = client(
        &python,
        &address,
        &bob,
        &["list", &json!({ "tenant": first }).to_string()],
    );
    assert!(refused.get("error").is_some(), "{refused}");
}

#[test]
fn cancelling_an_a2a_task_stops_its_run_before_the_tool_writes() {
    let Some(python) = python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let create =
        json!({ "command": "create", "path": "never.md", "file_text": "late" }).to_string();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([{ "steps": [
            { "type": "text", "chunks": ["Thinking"] },
            { "type": "delay", "ms": 3000 },
            { "type": "tool_call", "id": "call-1", "name": "fs", "fragments": [create] }
        ] }]),
    );
    let db = dir.path().join("db.sqlite").display().to_string();
    let token = create_user(&db, "ada");
    let server = serve(&db, &script, "only");
    let address = server.address.clone();
    let repo = dir.path().join("one");
    let unattended = project(
        &address,
        &token,
        &repo,
        json!({ "approvals": "unattended" }),
    );

    // A second client cancels the task as soon as the stream names it; the
    // stream ends cancelled.
    let out = client(
        &python,
        &address,
        &token,
        &[
            "stream-cancel",
            &unattended,
            "planification",
            "Write never.md",
        ],
    );
    let streamed = items(&out);
    assert_eq!(
        out["cancelled"]["status"]["state"], "TASK_STATE_CANCELED",
        "{out}"
    );
    assert_eq!(last_state(&streamed), "TASK_STATE_CANCELED", "{out}");

    // The run is cancelled, its model turn ended before the tool call,
    // and the file was never written.
    let run_id = task_id(&streamed);
    let run = until_status(&address, &token, &run_id, "cancelled");
    assert_eq!(run["stopped_by"], "cancel", "{run}");
    let (_, messages) = http(
        &address,
        &token,
        "GET",
        &format!("/api/agent-runs/{run_id}/messages"),
        None,
    );
    // The request's text is in the first message; no later one calls the
    // tool.
    let after_prompt: Vec<&Value> = messages.as_array().unwrap().iter().skip(1).collect();
    assert!(
        !serde_json::to_string(&after_prompt)
            .unwrap()
            .contains("never.md"),
        "{messages}"
    );
    assert!(
        messages[0]["message"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .ends_with("Write never.md"),
        "{messages}"
    );
    assert!(!repo.join("never.md").exists());
    let got = client(&python, &address, &token, &["get", &run_id]);
    assert_eq!(
        got["task"]["status"]["state"], "TASK_STATE_CANCELED",
        "{got}"
    );

    // An ended task cannot be cancelled again.
    let again = client(&python, &address, &token, &["cancel", &run_id]);
    assert!(
        again["error"]
            .as_str()
            .unwrap_or_default()
            .starts_with("TaskNotCancelableError"),
        "{again}"
    );
}

#[test]
fn the_a2a_endpoint_refuses_other_users_no_token_and_bad_requests() {
    let Some(python) = python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([{ "steps": [{ "type": "text", "chunks": ["Mine."] }] }]),
    );
    let db = dir.path().join("db.sqlite").display().to_string();
    let ada = create_user(&db, "ada");
    let bob = create_user(&db, "bob");
    let server = serve(&db, &script, "only");
    let address = server.address.clone();
    let adas = project(&address, &ada, &dir.path().join("one"), json!({}));
    let sent = items(&client(
        &python,
        &address,
        &ada,
        &["send", &adas, "planification", "Mine"],
    ));
    let adas_task = task_id(&sent);

    // Bob cannot read, cancel or answer Ada's task, nor start one in her
    // project: the task is "not found" as an unknown one is.
    for args in [
        vec!["get", adas_task.as_str()],
        vec!["cancel", adas_task.as_str()],
        vec!["reply", adas_task.as_str(), "approve"],
        vec!["get", "no-such-task"],
    ] {
        let out = client(&python, &address, &bob, &args);
        assert!(
            out["error"]
                .as_str()
                .unwrap_or_default()
                .starts_with("TaskNotFoundError"),
            "{args:?}: {out}"
        );
    }
    let out = client(
        &python,
        &address,
        &bob,
        &["send", &adas, "planification", "Hers"],
    );
    assert!(
        out["error"]
            .as_str()
            .unwrap_or_default()
            .starts_with("InvalidParamsError"),
        "{out}"
    );
    let got = client(&python, &address, &ada, &["get", &adas_task]);
    assert_eq!(
        got["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{got}"
    );

    // Without a token the endpoint answers 401 (the card stays public).
    let out = client(&python, &address, "", &["get", &adas_task]);
    assert!(
        out["error"].as_str().unwrap_or_default().contains("401"),
        "{out}"
    );
    let (status, _) = http(&address, "wrong", "POST", "/a2a", Some(json!({})));
    assert_eq!(status, 401);

    // JSON-RPC errors: an unknown method, bad params, a batch, a wrong
    // protocol version.
    let rpc = |body: Value| http(&address, &ada, "POST", "/a2a", Some(body)).1;
    let answer = rpc(json!({ "jsonrpc": "2.0", "id": 1, "method": "Nope" }));
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    assert_eq!(answer["id"], 1);
    let answer =
        rpc(json!({ "jsonrpc": "2.0", "id": "x", "method": "GetTask", "params": { "id": 5 } }));
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let answer = rpc(json!([{ "jsonrpc": "2.0", "id": 1, "method": "GetTask" }]));
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let answer = rpc(
        json!({ "jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {
        "message": { "messageId": "m", "role": "ROLE_USER", "parts": [{ "text": "hi" }] }
    } }),
    );
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tenant"),
        "{answer}"
    );
}

#[test]
fn an_agentloop_run_delegates_to_an_agentloop_server_over_a2a() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    // The server's implementation run answers; the review the chain starts
    // after it answers too.
    write_script(
        &script,
        json!([
            { "steps": [{ "type": "text", "chunks": ["Peer ", "answer."] }] },
            { "steps": [{ "type": "text", "chunks": ["Reviewed."] }] }
        ]),
    );
    let db = dir.path().join("db.sqlite").display().to_string();
    let token = create_user(&db, "ada");
    let server = serve(&db, &script, "only");
    let address = server.address.clone();
    let project_id = project(&address, &token, &dir.path().join("one"), json!({}));

    // The delegating agent names the server in its configuration file.
    let config = dir.path().join("config");
    std::fs::create_dir_all(config.join("agentloop")).unwrap();
    std::fs::write(
        config.join("agentloop/config.toml"),
        format!(
            "[a2a_agents.peer]\nurl = \"http://{address}\"\ntoken_env = \"PEER_TOKEN\"\ntenant = \"{project_id}\"\n"
        ),
    )
    .unwrap();
    let client_script = dir.path().join("client.json");
    let call = json!({ "message": "Do the thing" }).to_string();
    write_script(
        &client_script,
        json!([
            { "steps": [{ "type": "tool_call", "id": "call-peer", "name": "a2a_peer", "fragments": [call] }] },
            { "steps": [{ "type": "text", "chunks": ["done"] }] }
        ]),
    );
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentloop"))
        .args([
            "run",
            "delegate",
            "--approve",
            "all",
            "--json",
            "--provider",
        ])
        .arg(format!("scripted:{}", client_script.display()))
        .env("XDG_CONFIG_HOME", &config)
        .env("PEER_TOKEN", &token)
        .env_remove("AGENTLOOP_AGENT_LOOP_STRATEGY")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let result = stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "message_created")
        .flat_map(|e| {
            e["message"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == "call-peer")
        .unwrap_or_else(|| panic!("no result for the delegated call: {stdout}"));
    assert_eq!(result["content"], "Peer answer.", "{result}");

    // The server made a task of the message in that project.
    let (_, tasks) = http(
        &address,
        &token,
        "GET",
        &format!("/api/projects/{project_id}/tasks"),
        None,
    );
    assert_eq!(tasks[0]["title"], "Do the thing", "{tasks}");
}

/// The SDK client speaking A2A 0.3 (`--v0.3`: the card's 0.3 interface,
/// the SDK's compat JSON-RPC transport); the methods it sent.
fn client_v03(python: &Path, address: &str, token: &str, args: &[&str]) -> (Value, Vec<String>) {
    let output = Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/serve_a2a/client.py"))
        .arg("--v0.3")
        .arg(format!("http://{address}"))
        .arg(token)
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    let out: Value = serde_json::from_str(line).unwrap_or_else(|e| {
        panic!(
            "the client printed no result ({e}); stdout:\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let methods = out["methods"]
        .as_array()
        .unwrap_or_else(|| panic!("methods: {out}"))
        .iter()
        .map(|m| m.as_str().unwrap().to_owned())
        .collect();
    (out, methods)
}

/// A raw A2A 0.3 JSON-RPC request (no SDK): the answer as it came.
fn raw(python: &Path, address: &str, token: &str, body: &Value) -> Value {
    client(python, address, token, &["raw", &body.to_string()])
}

#[test]
fn an_a2a_0_3_client_sends_streams_reads_answers_and_cancels() {
    let Some(python) = python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let create = |path: &str, text: &str| {
        json!({ "command": "create", "path": path, "file_text": text }).to_string()
    };
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([
            { "steps": [{ "type": "text", "chunks": ["Planned ", "it."] }] },
            { "steps": [{ "type": "text", "chunks": ["Streamed."] }] },
            { "steps": [{ "type": "tool_call", "id": "call-1", "name": "fs", "fragments": [create("a2a.md", "hello")] }] },
            { "steps": [{ "type": "text", "chunks": ["Written."] }] },
            { "steps": [
                { "type": "text", "chunks": ["Thinking"] },
                { "type": "delay", "ms": 3000 },
                { "type": "tool_call", "id": "call-2", "name": "fs", "fragments": [create("never.md", "late")] }
            ] }
        ]),
    );
    let db = dir.path().join("db.sqlite").display().to_string();
    let ada = create_user(&db, "ada");
    let bob = create_user(&db, "bob");
    let server = serve(&db, &script, "only");
    let address = server.address.clone();
    let plain = project(&address, &ada, &dir.path().join("one"), json!({}));

    // The card names a 0.3 interface on the same endpoint, in 1.0's
    // shape only: the SDK's 0.3 transport is picked from it.
    let (status, card) = http(&address, "", "GET", "/.well-known/agent-card.json", None);
    assert_eq!(status, 200, "{card}");
    assert_eq!(card["supportedInterfaces"][1]["protocolVersion"], "0.3");
    assert_eq!(
        card["supportedInterfaces"][1]["url"],
        format!("http://{address}/a2a")
    );
    for field in ["url", "preferredTransport", "protocolVersion", "security"] {
        assert!(card.get(field).is_none(), "0.3's {field} in {card}");
    }

    // message/send answers the completed task with its answer.
    let (sent, methods) = client_v03(
        &python,
        &address,
        &ada,
        &["send", &plain, "planification", "Plan the work"],
    );
    assert_eq!(methods, ["message/send"], "{sent}");
    let sent = items(&sent);
    assert_eq!(last_state(&sent), "TASK_STATE_COMPLETED", "{sent:?}");
    assert_eq!(answer(&sent[0]["task"]["artifacts"]), "Planned it.");
    let first = task_id(&sent);

    // message/stream: the task, the model's words, the answer, completed.
    let (streamed, methods) = client_v03(
        &python,
        &address,
        &ada,
        &["stream", &plain, "planification", "Stream the work"],
    );
    assert_eq!(methods, ["message/stream"], "{streamed}");
    let streamed = items(&streamed);
    assert_eq!(streamed[0]["task"]["status"]["state"], "TASK_STATE_WORKING");
    assert!(
        streamed
            .iter()
            .any(|i| i["statusUpdate"]["status"]["message"]["parts"][0]["text"] == "Streamed."),
        "{streamed:?}"
    );
    assert!(
        streamed
            .iter()
            .any(|i| i["artifactUpdate"]["artifact"]["parts"][0]["text"] == "Streamed."),
        "{streamed:?}"
    );
    assert_eq!(last_state(&streamed), "TASK_STATE_COMPLETED");

    // tasks/get reads the first task back; on the wire it is 0.3's shape.
    let (got, methods) = client_v03(&python, &address, &ada, &["get", &first]);
    assert_eq!(methods, ["tasks/get"]);
    assert_eq!(answer(&got["task"]["artifacts"]), "Planned it.", "{got}");
    let wire = raw(
        &python,
        &address,
        &ada,
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": { "id": first } }),
    );
    let task = &wire["answer"]["result"];
    assert_eq!(task["kind"], "task", "{wire}");
    assert_eq!(task["status"]["state"], "completed", "{wire}");
    assert_eq!(
        task["artifacts"][0]["parts"][0],
        json!({ "kind": "text", "text": "Planned it." })
    );

    // A write that needs approval, streamed raw: the last item is a final
    // status update, input-required, listing the call in a data part.
    let repo = dir.path().join("two");
    let asking = project(&address, &ada, &repo, json!({ "approvals": "ask" }));
    let wire = raw(
        &python,
        &address,
        &ada,
        &json!({ "jsonrpc": "2.0", "id": "s", "method": "message/stream", "params": {
            "message": {
                "kind": "message", "messageId": "m-1", "role": "user",
                "parts": [{ "kind": "text", "text": "Write a2a.md" }],
                "metadata": { "tenant": asking, "agentType": "planification" }
            }
        } }),
    );
    let wire_items = items(&wire);
    assert_eq!(wire_items[0]["result"]["kind"], "task", "{wire}");
    assert_eq!(wire_items[0]["result"]["status"]["state"], "working");
    let last = &wire_items.last().unwrap()["result"];
    assert_eq!(last["kind"], "status-update", "{wire}");
    assert_eq!(last["final"], true, "{wire}");
    assert_eq!(last["status"]["state"], "input-required", "{wire}");
    let parts = &last["status"]["message"]["parts"];
    assert_eq!(parts[1]["kind"], "data", "{wire}");
    assert_eq!(parts[1]["data"]["pending"][0]["call_id"], "call-1");
    assert_eq!(last["status"]["message"]["role"], "agent");
    assert!(!repo.join("a2a.md").exists());
    let waiting_id = last["taskId"].as_str().unwrap().to_owned();

    // tasks/resubscribe to a waiting task: the task, and the stream ends.
    let wire = raw(
        &python,
        &address,
        &ada,
        &json!({ "jsonrpc": "2.0", "id": "r", "method": "tasks/resubscribe", "params": { "id": waiting_id } }),
    );
    let wire_items = items(&wire);
    assert_eq!(wire_items.len(), 1, "{wire}");
    assert_eq!(wire_items[0]["result"]["kind"], "task", "{wire}");
    assert_eq!(wire_items[0]["result"]["status"]["state"], "input-required");

    // Another user's task is "not found", through the SDK as raw.
    for args in [
        vec!["get", waiting_id.as_str()],
        vec!["cancel", waiting_id.as_str()],
        vec!["reply", waiting_id.as_str(), "approve"],
    ] {
        let (out, _) = client_v03(&python, &address, &bob, &args);
        assert!(
            out["error"]
                .as_str()
                .unwrap_or_default()
                .starts_with("TaskNotFoundError"),
            "{args:?}: {out}"
        );
    }
    let wire = raw(
        &python,
        &address,
        &bob,
        &json!({ "jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": { "id": waiting_id } }),
    );
    assert_eq!(wire["answer"]["error"]["code"], -32001, "{wire}");
    assert!(!repo.join("a2a.md").exists());

    // Ada's reply resumes it: the tool runs and the task completes.
    let (resumed, methods) =
        client_v03(&python, &address, &ada, &["reply", &waiting_id, "approve"]);
    assert_eq!(methods, ["message/stream"]);
    let resumed = items(&resumed);
    assert_eq!(last_state(&resumed), "TASK_STATE_COMPLETED", "{resumed:?}");
    assert_eq!(task_id(&resumed), waiting_id);
    assert_eq!(
        std::fs::read_to_string(repo.join("a2a.md")).unwrap(),
        "hello"
    );

    // tasks/cancel from a second client while the stream runs: the run
    // stops before its tool writes.
    let unattended_repo = dir.path().join("three");
    let unattended = project(
        &address,
        &ada,
        &unattended_repo,
        json!({ "approvals": "unattended" }),
    );
    let (out, methods) = client_v03(
        &python,
        &address,
        &ada,
        &[
            "stream-cancel",
            &unattended,
            "planification",
            "Write never.md",
        ],
    );
    assert_eq!(methods, ["message/stream", "tasks/cancel"], "{out}");
    assert_eq!(
        out["cancelled"]["status"]["state"], "TASK_STATE_CANCELED",
        "{out}"
    );
    let streamed = items(&out);
    assert_eq!(last_state(&streamed), "TASK_STATE_CANCELED", "{out}");
    let run_id = task_id(&streamed);
    until_status(&address, &ada, &run_id, "cancelled");
    assert!(!unattended_repo.join("never.md").exists());
}
