//! `agentloop serve`'s AG-UI route driven by the reference AG-UI client
//! (`@ag-ui/client`'s `HttpAgent`, which verifies the event order itself;
//! installed by `scripts/install-agui-client.sh`): a text answer, a tool
//! call that waits for approval and runs once resumed, a model error, a
//! front-end tool the client runs, the shared state; and the route's
//! refusals over plain HTTP.
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
    common::node::modules("agui-client", "@ag-ui/client", "install-agui-client.sh")
}

/// One AG-UI run of the task through `HttpAgent`: its events, and the
/// client's error if it refused the stream or the run failed.
fn agui_run(
    modules: &Path,
    address: &str,
    token: &str,
    task_id: &str,
    parameters: Value,
) -> (Vec<Value>, Option<String>) {
    let output = Command::new("node")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agui_run.cjs"))
        .arg(format!("http://{address}/api/tasks/{task_id}/ag-ui"))
        .arg(token)
        .arg(format!("thread-{task_id}"))
        .arg(parameters.to_string())
        .env("NODE_PATH", modules)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    let result: Value = serde_json::from_str(line).unwrap_or_else(|e| {
        panic!(
            "the client printed no result ({e}); stdout:\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let events = result["events"].as_array().cloned().unwrap_or_default();
    let error = result["error"].as_str().map(str::to_owned);
    (events, error)
}

fn types(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|event| event["type"].as_str().unwrap_or("?"))
        .collect()
}

fn last(events: &[Value]) -> &Value {
    events.last().expect("at least one event")
}

#[test]
fn an_agui_client_runs_a_task_waits_for_approval_and_resumes() {
    let Some(modules) = client_modules() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let create =
        json!({ "command": "create", "path": "ag-ui.md", "file_text": "hello" }).to_string();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([
            { "steps": [{ "type": "text", "chunks": ["Planned ", "it."] }] },
            { "steps": [{ "type": "tool_call", "id": "call-1", "name": "fs", "fragments": [create] }] },
            { "steps": [{ "type": "text", "chunks": ["Written."] }] },
            { "steps": [{ "type": "error", "error": { "kind": "invalid_request", "message": "no such model" } }] }
        ]),
    );
    let db = dir.path().join("db.sqlite").display().to_string();
    let token = create_user(&db, "ada");
    let server = serve(&db, &script, "only");
    let address = server.address.clone();
    let planning = json!({ "forwardedProps": { "agentType": "planification" } });

    // A text answer, streamed, then a successful end.
    let text_task = task(&address, &token, &dir.path().join("one"));
    let (events, error) = agui_run(&modules, &address, &token, &text_task, planning.clone());
    assert_eq!(error, None, "{events:?}");
    assert_eq!(types(&events).first(), Some(&"RUN_STARTED"));
    assert_eq!(events[1]["type"], "STATE_SNAPSHOT", "{events:?}");
    assert_eq!(events[2]["name"], "agentloop.agent_run", "{events:?}");
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Planned it.");
    assert_eq!(last(&events)["type"], "RUN_FINISHED");
    assert_eq!(last(&events)["outcome"]["type"], "success");

    // A write waits for approval: the run ends with an interrupt and the
    // file is not written.
    let repo = dir.path().join("two");
    let asking = task_with(&address, &token, &repo, json!({ "approvals": "ask" }));
    let (events, error) = agui_run(&modules, &address, &token, &asking, planning.clone());
    assert_eq!(error, None, "{events:?}");
    assert!(types(&events).contains(&"TOOL_CALL_ARGS"), "{events:?}");
    let outcome = &last(&events)["outcome"];
    assert_eq!(outcome["type"], "interrupt", "{events:?}");
    assert_eq!(outcome["interrupts"][0]["id"], "call-1");
    assert_eq!(outcome["interrupts"][0]["reason"], "tool_approval");
    assert!(!repo.join("ag-ui.md").exists());

    // A second client resumes it by approving: the tool runs, its result
    // and the answer stream, and the run succeeds.
    let resume = json!({ "resume": [{
        "interruptId": "call-1", "status": "resolved", "payload": { "approved": true }
    }] });
    let (events, error) = agui_run(&modules, &address, &token, &asking, resume.clone());
    assert_eq!(error, None, "{events:?}");
    let result = events
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_RESULT")
        .unwrap_or_else(|| panic!("a tool result: {events:?}"));
    assert_eq!(result["toolCallId"], "call-1");
    assert_eq!(last(&events)["outcome"]["type"], "success", "{events:?}");
    assert_eq!(
        std::fs::read_to_string(repo.join("ag-ui.md")).unwrap(),
        "hello"
    );

    // Answering it again: nothing waits any more.
    let (status, body) = http(
        &address,
        &token,
        "POST",
        &format!("/api/tasks/{asking}/ag-ui"),
        Some(json!({ "threadId": "t", "runId": "r", "resume": resume["resume"] })),
    );
    assert_eq!(status, 409, "{body}");

    // A model error ends the run with RUN_ERROR naming its kind.
    let failing = task(&address, &token, &dir.path().join("three"));
    let (events, _) = agui_run(&modules, &address, &token, &failing, planning);
    assert_eq!(last(&events)["type"], "RUN_ERROR", "{events:?}");
    assert_eq!(last(&events)["code"], "provider");
}

#[test]
fn a_frontend_tool_is_run_by_the_client_and_its_answer_resumes_the_run() {
    let Some(modules) = client_modules() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    let arguments = json!({ "city": "Oslo" }).to_string();
    write_script(
        &script,
        json!([
            { "steps": [{ "type": "tool_call", "id": "call-1", "name": "show_chart", "fragments": [arguments] }] },
            { "steps": [{ "type": "text", "chunks": ["The chart is on your screen."] }] },
            { "steps": [{ "type": "tool_call", "id": "call-2", "name": "show_chart", "fragments": [arguments] }] }
        ]),
    );
    let db = dir.path().join("db.sqlite").display().to_string();
    let token = create_user(&db, "ada");
    let server = serve(&db, &script, "only");
    let address = server.address.clone();
    let task_id = task(&address, &token, &dir.path().join("repo"));
    let chart = json!({
        "name": "show_chart",
        "description": "Shows a weather chart of a city to the user.",
        "parameters": { "type": "object", "properties": { "city": { "type": "string" } } }
    });

    // The model calls the client's tool: the run waits, and the AG-UI run
    // succeeds naming the call the client is to run.
    let first = json!({
        "tools": [chart],
        "state": { "theme": "dark" },
        "forwardedProps": { "agentType": "planification" }
    });
    let (events, error) = agui_run(&modules, &address, &token, &task_id, first);
    assert_eq!(error, None, "{events:?}");
    let snapshot = events
        .iter()
        .find(|e| e["type"] == "STATE_SNAPSHOT")
        .unwrap_or_else(|| panic!("a state snapshot: {events:?}"));
    assert_eq!(
        snapshot["snapshot"]["theme"], "dark",
        "the app's state is kept"
    );
    assert_eq!(snapshot["snapshot"]["agentloop"]["status"], "running");
    let start = events
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_START")
        .unwrap_or_else(|| panic!("the call: {events:?}"));
    assert_eq!(start["toolCallName"], "show_chart");
    let outcome = &last(&events)["outcome"];
    assert_eq!(outcome["type"], "success", "{events:?}");
    assert_eq!(outcome["pendingToolCallIds"], json!(["call-1"]));
    let statuses: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "STATE_DELTA")
        .flat_map(|e| e["delta"].as_array().unwrap())
        .filter(|op| op["path"] == "/agentloop/status")
        .map(|op| &op["value"])
        .collect();
    assert_eq!(statuses, vec![&json!("suspended")]);
    let run = &http(
        &address,
        &token,
        "GET",
        &format!("/api/tasks/{task_id}/agent-runs"),
        None,
    )
    .1[0];
    assert_eq!(run["status"], "waiting", "{run}");

    // The client ran it and sends its conversation with the tool's
    // result: the call gets that result and the run goes on to its end.
    let second = json!({
        "messages": [
            { "id": "a1", "role": "assistant", "toolCalls": [{
                "id": "call-1", "type": "function",
                "function": { "name": "show_chart", "arguments": arguments }
            }] },
            { "id": "t1", "role": "tool", "toolCallId": "call-1", "content": "chart shown" }
        ],
        "tools": [chart]
    });
    let (events, error) = agui_run(&modules, &address, &token, &task_id, second);
    assert_eq!(error, None, "{events:?}");
    let result = events
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_RESULT")
        .unwrap_or_else(|| panic!("the tool's result: {events:?}"));
    assert_eq!(result["toolCallId"], "call-1");
    assert_eq!(result["content"], "chart shown");
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "The chart is on your screen.");
    assert_eq!(last(&events)["outcome"], json!({ "type": "success" }));

    // A front-end tool may not take the name of one of the agent's tools.
    let (status, body) = http(
        &address,
        &token,
        "POST",
        &format!("/api/tasks/{task_id}/ag-ui"),
        Some(
            json!({ "threadId": "t", "runId": "r2", "tools": [{ "name": "fs", "description": "mine" }] }),
        ),
    );
    assert_eq!(status, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains("\"fs\""), "{body}");

    // A run waiting on the client's tool is cancelled like any waiting
    // run: it ends, and the call is answered in its conversation.
    let third = json!({ "tools": [chart], "forwardedProps": { "agentType": "planification" } });
    let (events, error) = agui_run(&modules, &address, &token, &task_id, third);
    assert_eq!(error, None, "{events:?}");
    assert_eq!(
        last(&events)["outcome"]["pendingToolCallIds"],
        json!(["call-2"])
    );
    let run_id = events
        .iter()
        .find(|e| e["name"] == "agentloop.agent_run")
        .map(|e| e["value"]["agentRunId"].as_str().unwrap().to_owned())
        .unwrap();
    let (status, body) = http(
        &address,
        &token,
        "POST",
        &format!("/api/agent-runs/{run_id}/cancel"),
        None,
    );
    assert_eq!(status, 200, "{body}");
    let (_, run) = http(
        &address,
        &token,
        "GET",
        &format!("/api/agent-runs/{run_id}"),
        None,
    );
    assert_eq!(run["status"], "cancelled", "{run}");
    let (_, messages) = http(
        &address,
        &token,
        "GET",
        &format!("/api/agent-runs/{run_id}/messages"),
        None,
    );
    let answered = messages.to_string();
    assert!(
        answered.contains("\"tool_use_id\":\"call-2\""),
        "the cancelled call has its result: {messages}"
    );
}

#[test]
fn the_agui_route_refuses_bad_input_and_other_users_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([{ "steps": [{ "type": "text", "chunks": ["unused"] }] }]),
    );
    let db = dir.path().join("db.sqlite").display().to_string();
    let ada = create_user(&db, "ada");
    let bob = create_user(&db, "bob");
    let server = serve(&db, &script, "only");
    let address = server.address.clone();
    let task_id = task(&address, &ada, &dir.path().join("one"));
    let path = format!("/api/tasks/{task_id}/ag-ui");
    let input = json!({ "threadId": "t", "runId": "r" });

    let (status, body) = http(&address, &ada, "POST", &path, Some(json!({ "runId": "r" })));
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("RunAgentInput"),
        "{body}"
    );

    let bad_agent =
        json!({ "threadId": "t", "runId": "r", "forwardedProps": { "agentType": "boss" } });
    let (status, body) = http(&address, &ada, "POST", &path, Some(bad_agent));
    assert_eq!(status, 400, "{body}");

    let bad_resume = json!({ "threadId": "t", "runId": "r", "resume": [
        { "interruptId": "c", "status": "resolved", "payload": { "approved": "yes" } }
    ] });
    let (status, body) = http(&address, &ada, "POST", &path, Some(bad_resume));
    assert_eq!(status, 400, "{body}");

    let (status, body) = http(
        &address,
        &ada,
        "POST",
        &path,
        Some(json!({
            "threadId": "t", "runId": "r",
            "resume": [{ "interruptId": "c", "status": "cancelled" }]
        })),
    );
    assert_eq!(status, 409, "nothing waits: {body}");

    let (status, body) = http(&address, &bob, "POST", &path, Some(input.clone()));
    assert_eq!(status, 404, "another user's task: {body}");
    let (status, body) = http(&address, "al_nottoken", "POST", &path, Some(input));
    assert_eq!(status, 401, "{body}");
    let runs = http(
        &address,
        &ada,
        "GET",
        &format!("/api/tasks/{task_id}/agent-runs"),
        None,
    )
    .1;
    assert_eq!(runs, json!([]), "no refused request started a run");
}
