//! `agentloop serve`'s AI SDK route driven by the AI SDK's own chat client
//! (the `ai` package's `AbstractChat`, which `useChat` wraps, over its
//! `DefaultChatTransport`, which parses and validates every chunk;
//! installed by `scripts/install-ai-sdk-client.sh`): a text answer, a tool
//! call approved and one refused, a model error, a question answered as
//! the call's output, a stream re-attached to
//! after the page stopped reading; and the route's refusals over plain
//! HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::create_user;
use common::served::*;
use serde_json::{Value, json};

/// The installed client's `node_modules`, or `None` (said loudly) when it
/// is not installed; under CI that is a failure.
fn client_modules() -> Option<PathBuf> {
    common::node::modules("ai-sdk-client", "ai", "install-ai-sdk-client.sh")
}

/// What the chat client saw in one action: the chunks it parsed, the chat's
/// messages after it, its status and the errors it reported.
struct Seen {
    chunks: Vec<Value>,
    messages: Value,
    status: String,
    errors: Vec<String>,
}

impl Seen {
    fn types(&self) -> Vec<&str> {
        self.chunks
            .iter()
            .map(|chunk| chunk["type"].as_str().unwrap_or("?"))
            .collect()
    }

    fn chunk(&self, kind: &str) -> &Value {
        self.chunks
            .iter()
            .find(|chunk| chunk["type"] == kind)
            .unwrap_or_else(|| panic!("a {kind} chunk: {:?}", self.chunks))
    }

    fn text(&self) -> String {
        self.chunks
            .iter()
            .filter(|chunk| chunk["type"] == "text-delta")
            .map(|chunk| chunk["delta"].as_str().unwrap())
            .collect()
    }

    /// The chat's last message.
    fn answer(&self) -> &Value {
        self.messages.as_array().unwrap().last().unwrap()
    }

    /// The part of the last message that is the tool call `id`.
    fn tool_part(&self, id: &str) -> &Value {
        self.answer()["parts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|part| part["toolCallId"] == id)
            .unwrap_or_else(|| panic!("a tool part for {id}: {}", self.answer()))
    }
}

/// One action of the chat client on the task's route (see
/// `tests/fixtures/ai_sdk_chat.cjs`), the chat holding `messages` before.
fn chat(
    modules: &Path,
    address: &str,
    token: &str,
    task_id: &str,
    messages: &Value,
    action: Value,
) -> Seen {
    let parameters = json!({
        "messages": messages,
        "body": { "agentType": "planification" },
        "action": action,
    });
    let output = Command::new("node")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ai_sdk_chat.cjs"))
        .arg(format!("http://{address}/api/tasks/{task_id}/ai-sdk"))
        .arg(token)
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
    Seen {
        chunks: result["chunks"].as_array().cloned().unwrap_or_default(),
        messages: result["messages"].clone(),
        status: result["status"].as_str().unwrap_or_default().to_owned(),
        errors: result["errors"]
            .as_array()
            .map(|errors| {
                errors
                    .iter()
                    .map(|e| e.as_str().unwrap_or_default().to_owned())
                    .collect()
            })
            .unwrap_or_default(),
    }
}

fn no_messages() -> Value {
    json!([])
}

#[test]
fn an_ai_sdk_chat_streams_text_tool_calls_and_approval_rounds() {
    let Some(modules) = client_modules() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([
            { "steps": [
                { "type": "thinking", "chunks": ["The user wants a plan."] },
                { "type": "text", "chunks": ["Planned ", "it."] }
            ] },
            fs_create("call-1", "ai-sdk.md", "hello"),
            text("Written."),
            fs_create("call-2", "refused.md", "no"),
            text("Not written."),
            { "steps": [{ "type": "error", "error": { "kind": "invalid_request", "message": "no such model" } }] },
            { "steps": [{ "type": "tool_call", "id": "q1", "name": "ask_user", "fragments": ["{\"question\": \"Which colour?\"}"] }] },
            text("Blue it is.")
        ]),
    );
    let db = dir.path().join("db.sqlite").display().to_string();
    let token = create_user(&db, "ada");
    let server = serve(&db, &script, "only");
    let address = server.address.clone();

    // A text answer: reasoning, then text, in one step; the message is the
    // agent run's.
    let text_task = task(&address, &token, &dir.path().join("one"));
    let seen = chat(
        &modules,
        &address,
        &token,
        &text_task,
        &no_messages(),
        json!({ "send": "Plan it" }),
    );
    assert_eq!(seen.errors, Vec::<String>::new(), "{:?}", seen.chunks);
    assert_eq!(seen.status, "ready");
    assert_eq!(
        seen.types(),
        [
            "start",
            "start-step",
            "reasoning-start",
            "reasoning-delta",
            "reasoning-end",
            "text-start",
            "text-delta",
            "text-delta",
            "text-end",
            "finish-step",
            "finish"
        ],
        "{:?}",
        seen.chunks
    );
    assert_eq!(seen.text(), "Planned it.");
    assert_eq!(seen.chunk("finish")["finishReason"], "stop");
    let run_id = seen.chunk("start")["messageMetadata"]["agentRunId"]
        .as_str()
        .unwrap()
        .to_owned();
    let answer = seen.answer();
    assert_eq!(answer["role"], "assistant");
    assert_eq!(answer["id"], run_id.as_str());
    assert_eq!(answer["metadata"]["status"], "complete", "{answer}");
    let kinds: Vec<&str> = answer["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|part| part["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["step-start", "reasoning", "text"], "{answer}");
    assert_eq!(answer["parts"][2]["text"], "Planned it.");
    let (_, run) = http(
        &address,
        &token,
        "GET",
        &format!("/api/agent-runs/{run_id}"),
        None,
    );
    assert_eq!(run["agent_type"], "planification", "{run}");
    assert_eq!(run["status"], "completed", "{run}");

    // A write waits for approval: the call streams, then its approval
    // request, and the message finishes for the person to answer; the
    // file is not written.
    let repo = dir.path().join("two");
    let asking = task_with(&address, &token, &repo, json!({ "approvals": "ask" }));
    let first = chat(
        &modules,
        &address,
        &token,
        &asking,
        &no_messages(),
        json!({ "send": "Write it" }),
    );
    assert_eq!(first.errors, Vec::<String>::new(), "{:?}", first.chunks);
    for kind in [
        "tool-input-start",
        "tool-input-delta",
        "tool-input-available",
    ] {
        assert_eq!(first.chunk(kind)["toolCallId"], "call-1");
    }
    assert_eq!(
        first.chunk("tool-input-available")["input"]["path"],
        "ai-sdk.md"
    );
    assert_eq!(first.chunk("tool-approval-request")["approvalId"], "call-1");
    assert_eq!(first.chunk("finish")["finishReason"], "tool-calls");
    let part = first.tool_part("call-1");
    assert_eq!(part["type"], "dynamic-tool");
    assert_eq!(part["toolName"], "fs");
    assert_eq!(part["state"], "approval-requested", "{part}");
    assert!(!repo.join("ai-sdk.md").exists());

    // The person approves: the next request carries the response, the
    // tool runs, its output and the answer stream into the same message.
    let approved = chat(
        &modules,
        &address,
        &token,
        &asking,
        &first.messages,
        json!({ "approve": true }),
    );
    assert_eq!(
        approved.errors,
        Vec::<String>::new(),
        "{:?}",
        approved.chunks
    );
    assert_eq!(
        approved.chunk("tool-output-available")["toolCallId"],
        "call-1"
    );
    assert_eq!(approved.text(), "Written.");
    assert_eq!(approved.chunk("finish")["finishReason"], "stop");
    assert_eq!(approved.messages.as_array().unwrap().len(), 2);
    assert_eq!(approved.tool_part("call-1")["state"], "output-available");
    assert_eq!(
        std::fs::read_to_string(repo.join("ai-sdk.md")).unwrap(),
        "hello"
    );

    // The same response again: nothing waits any more.
    let mut again = first.messages.clone();
    let parts = again[1]["parts"].as_array_mut().unwrap();
    for part in parts
        .iter_mut()
        .filter(|part| part["toolCallId"] == "call-1")
    {
        part["state"] = json!("approval-responded");
        part["approval"]["approved"] = json!(true);
    }
    let (status, body) = http(
        &address,
        &token,
        "POST",
        &format!("/api/tasks/{asking}/ai-sdk"),
        Some(json!({ "id": "chat-1", "messages": again, "trigger": "submit-message" })),
    );
    assert_eq!(status, 409, "{body}");

    // The person refuses a call: it does not run, the client sees it
    // denied, and the model reads the reason.
    let repo = dir.path().join("three");
    let refusing = task_with(&address, &token, &repo, json!({ "approvals": "ask" }));
    let first = chat(
        &modules,
        &address,
        &token,
        &refusing,
        &no_messages(),
        json!({ "send": "Write another" }),
    );
    assert_eq!(first.chunk("tool-approval-request")["toolCallId"], "call-2");
    let refused = chat(
        &modules,
        &address,
        &token,
        &refusing,
        &first.messages,
        json!({ "approve": false, "reason": "not in this folder" }),
    );
    assert_eq!(refused.errors, Vec::<String>::new(), "{:?}", refused.chunks);
    assert_eq!(refused.chunk("tool-output-denied")["toolCallId"], "call-2");
    assert_eq!(refused.tool_part("call-2")["state"], "output-denied");
    assert_eq!(refused.text(), "Not written.");
    assert!(!repo.join("refused.md").exists());
    let run_id = refused.chunk("start")["messageMetadata"]["agentRunId"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, messages) = http(
        &address,
        &token,
        "GET",
        &format!("/api/agent-runs/{run_id}/messages"),
        None,
    );
    assert!(
        messages.to_string().contains("not in this folder"),
        "the model reads the reason: {messages}"
    );

    // A model error: an error chunk, then the message finishes with
    // finishReason error; the chat shows the error.
    let failing = task(&address, &token, &dir.path().join("four"));
    let seen = chat(
        &modules,
        &address,
        &token,
        &failing,
        &no_messages(),
        json!({ "send": "Fail" }),
    );
    assert!(
        seen.chunk("error")["errorText"]
            .as_str()
            .unwrap()
            .contains("no such model"),
        "{:?}",
        seen.chunks
    );
    assert_eq!(seen.status, "error");
    assert!(
        seen.errors.iter().any(|e| e.contains("no such model")),
        "{:?}",
        seen.errors
    );

    // The agent asks a question: the call waits for its output, which the
    // person gives in the next request, and the run goes on.
    let curious = task(&address, &token, &dir.path().join("five"));
    let asked = chat(
        &modules,
        &address,
        &token,
        &curious,
        &no_messages(),
        json!({ "send": "Paint it" }),
    );
    assert_eq!(asked.errors, Vec::<String>::new(), "{:?}", asked.chunks);
    assert_eq!(
        asked.chunk("tool-input-available")["input"]["question"],
        "Which colour?"
    );
    assert!(
        !asked.types().contains(&"tool-approval-request"),
        "{:?}",
        asked.chunks
    );
    assert_eq!(asked.chunk("finish")["finishReason"], "tool-calls");
    assert_eq!(asked.tool_part("q1")["state"], "input-available");
    let answered = chat(
        &modules,
        &address,
        &token,
        &curious,
        &asked.messages,
        json!({ "answer": "blue" }),
    );
    assert_eq!(
        answered.errors,
        Vec::<String>::new(),
        "{:?}",
        answered.chunks
    );
    let output = answered.chunk("tool-output-available");
    assert_eq!(output["toolCallId"], "q1");
    assert!(
        output["output"].as_str().unwrap().contains("blue"),
        "{output}"
    );
    assert_eq!(answered.text(), "Blue it is.");
    assert_eq!(answered.chunk("finish")["finishReason"], "stop");

    // The audit log names what each chat request did: five starts, and
    // three decisions (approve, refuse, answer) on runs those started;
    // the request refused with a 409 is not there.
    let (status, log) = http(&address, &token, "GET", "/api/audit", None);
    assert_eq!(status, 200, "{log}");
    let chats: Vec<&Value> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["detail"]["route"] == "/api/tasks/{task_id}/ai-sdk")
        .collect();
    let of = |action: &str| -> Vec<&str> {
        chats
            .iter()
            .filter(|e| e["action"] == action)
            .map(|e| e["target"].as_str().unwrap())
            .collect()
    };
    let (starts, decisions) = (of("run.start"), of("run.decide"));
    assert_eq!(
        (starts.len(), decisions.len(), chats.len()),
        (5, 3, 8),
        "{log:#}"
    );
    assert!(decisions.iter().all(|run| starts.contains(run)), "{log:#}");
    assert!(decisions.contains(&run_id.as_str()), "the refusal: {log:#}");
    for entry in chats {
        assert!(entry["project_id"].is_string(), "{entry}");
        assert_eq!(entry["detail"]["method"], "POST", "{entry}");
    }
}

#[test]
fn an_ai_sdk_chat_reattaches_to_a_running_stream() {
    let Some(modules) = client_modules() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    write_script(
        &script,
        json!([{ "steps": [
            { "type": "text", "chunks": ["Hello"] },
            { "type": "hang" }
        ] }]),
    );
    let db = dir.path().join("db.sqlite").display().to_string();
    let token = create_user(&db, "ada");
    let server = serve(&db, &script, "only");
    let address = server.address.clone();
    let task_id = task(&address, &token, &dir.path().join("one"));

    // The page stops reading at the first text; the run goes on.
    let stopped = chat(
        &modules,
        &address,
        &token,
        &task_id,
        &no_messages(),
        json!({ "send": "Greet", "stopAtText": true }),
    );
    assert_eq!(stopped.text(), "Hello", "{:?}", stopped.chunks);
    assert!(!stopped.types().contains(&"finish"), "{:?}", stopped.chunks);
    let run_id = stopped.chunk("start")["messageMetadata"]["agentRunId"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, run) = http(
        &address,
        &token,
        "GET",
        &format!("/api/agent-runs/{run_id}"),
        None,
    );
    assert_eq!(run["status"], "running", "{run}");

    // Re-attached, the message is replayed from its start and followed
    // live: the run is cancelled meanwhile, and the stream ends with abort.
    let resumed = chat(
        &modules,
        &address,
        &token,
        &task_id,
        &stopped.messages,
        json!({ "resume": true, "cancelAtText": true }),
    );
    assert_eq!(
        resumed.chunk("start")["messageMetadata"]["agentRunId"],
        run_id.as_str()
    );
    assert_eq!(resumed.text(), "Hello", "{:?}", resumed.chunks);
    assert_eq!(
        resumed.types().last(),
        Some(&"abort"),
        "{:?}",
        resumed.chunks
    );
    assert_eq!(resumed.messages.as_array().unwrap().len(), 2);
    assert_eq!(resumed.answer()["id"], run_id.as_str());
    let (_, run) = http(
        &address,
        &token,
        "GET",
        &format!("/api/agent-runs/{run_id}"),
        None,
    );
    assert_eq!(run["status"], "cancelled", "{run}");

    // Nothing runs now: the client finds no stream (a 204).
    let idle = chat(
        &modules,
        &address,
        &token,
        &task_id,
        &resumed.messages,
        json!({ "resume": true }),
    );
    assert!(idle.chunks.is_empty(), "{:?}", idle.chunks);
    assert_eq!(idle.errors, Vec::<String>::new());
    let (status, _) = raw(
        &address,
        &token,
        "GET",
        &format!("/api/tasks/{task_id}/ai-sdk/chat-1/stream"),
        None,
    );
    assert_eq!(status, 204);
}

/// One HTTP/1.1 request; the status and the whole response as text
/// (headers and body).
fn raw(address: &str, token: &str, method: &str, path: &str, body: Option<Value>) -> (u16, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\n\
Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    (response[9..12].parse().unwrap(), response)
}

#[test]
fn the_ai_sdk_route_speaks_the_stream_protocol_and_refuses_bad_requests() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    write_script(&script, json!([text("Hi.")]));
    let db = dir.path().join("db.sqlite").display().to_string();
    let ada = create_user(&db, "ada");
    let bob = create_user(&db, "bob");
    let server = serve(&db, &script, "only");
    let address = server.address.clone();
    let task_id = task(&address, &ada, &dir.path().join("one"));
    let path = format!("/api/tasks/{task_id}/ai-sdk");
    let user = |text: &str| json!({ "id": "m1", "role": "user", "parts": [{ "type": "text", "text": text }] });

    let refusals = [
        (json!({ "id": "c" }), 400u16, "AI SDK chat request"),
        (
            json!({ "messages": [{ "role": "user", "parts": [] }] }),
            400,
            "AI SDK chat request",
        ),
        (
            json!({ "messages": [user("go")], "agentType": "boss" }),
            400,
            "agentType",
        ),
        (
            json!({ "messages": [user("go")], "trigger": "resend" }),
            400,
            "AI SDK chat request",
        ),
        (
            json!({ "messages": [{ "id": "m1", "role": "robot", "parts": [] }] }),
            400,
            "AI SDK chat request",
        ),
        (
            json!({ "messages": [{ "id": "m1", "role": "user", "parts": ["go"] }] }),
            400,
            "AI SDK chat request",
        ),
        (
            json!({ "messages": [user("go"), {
                "id": "r", "role": "assistant", "parts": [{
                    "type": "dynamic-tool", "toolName": "fs", "toolCallId": "c",
                    "state": "approval-responded", "input": {},
                    "approval": { "id": "c", "approved": true }
                }]
            }] }),
            409,
            "waits",
        ),
    ];
    for (body, status, says) in refusals {
        let (got, answer) = http(&address, &ada, "POST", &path, Some(body.clone()));
        assert_eq!(got, status, "{body} → {answer}");
        assert!(
            answer["error"].as_str().unwrap_or_default().contains(says),
            "{body} → {answer}"
        );
    }
    let chat = json!({ "id": "c", "messages": [user("go")], "trigger": "submit-message" });
    let (status, body) = http(&address, &bob, "POST", &path, Some(chat.clone()));
    assert_eq!(status, 404, "another user's task: {body}");
    let (status, body) = http(&address, "al_nottoken", "POST", &path, Some(chat.clone()));
    assert_eq!(status, 401, "{body}");
    let (status, _) = raw(
        &address,
        &bob,
        "GET",
        &format!("/api/tasks/{task_id}/ai-sdk/c/stream"),
        None,
    );
    assert_eq!(status, 404, "another user's task");
    let (status, _) = raw(
        &address,
        &ada,
        "GET",
        &format!("/api/tasks/{task_id}/ai-sdk/not%20an%20id/stream"),
        None,
    );
    assert_eq!(status, 400, "a chat id that is no id");
    let (_, runs) = http(
        &address,
        &ada,
        "GET",
        &format!("/api/tasks/{task_id}/agent-runs"),
        None,
    );
    assert_eq!(runs, json!([]), "no refused request started a run");

    // A good one: the protocol's headers, one JSON chunk per data line,
    // and the closing [DONE].
    let (status, response) = raw(&address, &ada, "POST", &path, Some(chat));
    assert_eq!(status, 200, "{response}");
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let head = head.to_ascii_lowercase();
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    assert!(head.contains("x-vercel-ai-ui-message-stream: v1"), "{head}");
    let data: Vec<&str> = body
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .collect();
    assert_eq!(data.last(), Some(&"[DONE]"), "{body}");
    let types: Vec<String> = data[..data.len() - 1]
        .iter()
        .map(|line| {
            let chunk: Value = serde_json::from_str(line).unwrap();
            chunk["type"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(types.first().map(String::as_str), Some("start"), "{body}");
    assert_eq!(types.last().map(String::as_str), Some("finish"), "{body}");
}
