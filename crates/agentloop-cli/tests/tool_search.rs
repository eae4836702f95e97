//! Tool search and output budgets from the command line: `agentloop run`
//! against an OpenAI-compatible server that answers a scripted sequence
//! of completions, with the requests it received read back.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::{Output, Stdio};
use std::sync::Mutex;

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// Answers the `n`th completion with the `n`th body (the last one after).
struct Sequence(Mutex<Vec<String>>);

impl Respond for Sequence {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let mut bodies = self.0.lock().unwrap();
        let body = if bodies.len() > 1 {
            bodies.remove(0)
        } else {
            bodies[0].clone()
        };
        ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(body)
    }
}

fn chunk(delta: Value, finish: Value) -> String {
    let chunk = json!({
        "id": "c1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    format!("data: {chunk}\n\n")
}

/// A streamed completion calling `name` with `arguments`.
fn call(id: &str, name: &str, arguments: Value) -> String {
    let call = json!({"tool_calls": [{
        "index": 0,
        "id": id,
        "type": "function",
        "function": {"name": name, "arguments": arguments.to_string()}
    }]});
    [
        chunk(call, Value::Null),
        chunk(json!({}), Value::from("tool_calls")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat()
}

/// A streamed completion answering `text`.
fn text(text: &str) -> String {
    [
        chunk(json!({"role": "assistant", "content": text}), Value::Null),
        chunk(json!({}), Value::from("stop")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat()
}

async fn server(bodies: Vec<String>) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(Sequence(Mutex::new(bodies)))
        .mount(&server)
        .await;
    server
}

async fn completions(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .filter(|r| r.url.path() == "/v1/chat/completions")
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect()
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// `agentloop run` with `args`, its tools working in `root`.
async fn run(server: &MockServer, root: &std::path::Path, args: &[&str]) -> Output {
    let home = tempfile::tempdir().unwrap();
    let mut command = common::agentloop();
    command
        .args(["run", "Read the notes."])
        .args(["--base-url", &format!("{}/v1", server.uri())])
        .args(["--model", "local-model"])
        .args(["--tools", "fs,javascript,return", "--json"])
        .arg("--root")
        .arg(root)
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

fn script() -> Vec<String> {
    vec![
        call("call_1", "tool_search", json!({"query": "fs", "limit": 1})),
        call(
            "call_2",
            "fs",
            json!({"command": "view", "path": "/notes.txt"}),
        ),
        text("The notes are read."),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_request_carries_the_search_tool_and_a_later_one_the_found_tool() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("notes.txt"), "buy milk\n").unwrap();
    let server = server(script()).await;
    let output = run(&server, root.path(), &["--tool-search-threshold", "2"]).await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let requests = completions(&server).await;
    assert_eq!(requests.len(), 3);
    assert_eq!(tool_names(&requests[0]), ["tool_search"]);
    let index = requests[0]["tools"][0]["function"]["description"]
        .as_str()
        .unwrap();
    for name in ["fs", "javascript", "return"] {
        assert!(
            index.contains(&format!("\n- {name}: ")),
            "{name} in {index}"
        );
    }
    assert_eq!(tool_names(&requests[1]), ["tool_search", "fs"]);
    assert_eq!(tool_names(&requests[2]), ["tool_search", "fs"]);
    // The found tool ran: its answer went back to the model.
    let sent = requests[2].to_string();
    assert!(sent.contains("buy milk"), "{sent}");
    let events = common::events(&output);
    assert!(events.iter().any(|e| e["type"] == "context_edited"
        && e["edit"]["kind"] == "tools_loaded"
        && e["edit"]["tools"] == json!(["fs"])));
    assert_eq!(
        events.last().unwrap()["result"]["status"],
        "complete",
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_definition_is_sent_below_the_threshold() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("notes.txt"), "buy milk\n").unwrap();
    let server = server(vec![text("Nothing to do.")]).await;
    let output = run(&server, root.path(), &["--tool-search-threshold", "3"]).await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let requests = completions(&server).await;
    assert_eq!(tool_names(&requests[0]), ["fs", "javascript", "return"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_over_its_budget_is_sent_short_and_kept_whole() {
    let root = tempfile::tempdir().unwrap();
    let notes: String = (0..200).map(|i| format!("note {i}\n")).collect();
    std::fs::write(root.path().join("notes.txt"), &notes).unwrap();
    let server = server(vec![
        call(
            "call_1",
            "fs",
            json!({"command": "view", "path": "/notes.txt"}),
        ),
        call(
            "call_2",
            "read_tool_result",
            json!({"call_id": "call_1", "offset": 100, "limit": 40}),
        ),
        text("Read."),
    ])
    .await;
    let output = run(&server, root.path(), &["--tool-output-budget", "25"]).await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let requests = completions(&server).await;
    assert_eq!(
        tool_names(&requests[0]),
        ["fs", "javascript", "return", "read_tool_result"]
    );
    let tool_message = |request: &Value, id: &str| -> String {
        request["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
            .map(|m| m["content"].as_str().unwrap().to_owned())
            .unwrap()
    };
    // Sent: the first 100 characters and how to read on.
    let sent = tool_message(&requests[1], "call_1");
    assert!(sent.contains("[Shortened: the first 100 of"), "{sent}");
    assert!(sent.contains("note 0"));
    assert!(!sent.contains("note 199"));
    // Read on: the next 40 characters, from the whole result the run kept.
    let read = tool_message(&requests[2], "call_2");
    assert!(read.contains("[Characters 100 to 140 of"), "{read}");
    let events = common::events(&output);
    let result = &events.last().unwrap()["result"];
    let kept = result["messages"].to_string();
    assert!(kept.contains("note 199"), "the log keeps the result whole");
}
