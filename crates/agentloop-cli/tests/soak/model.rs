//! The model the soaked server calls: an OpenAI-compatible chat
//! completions endpoint whose answer depends on the model a project asks
//! for, so each kind of run the users start behaves as they expect.
//! - `soak-plain`: a text answer in a few chunks;
//! - `soak-approve`: an fs `create` call (a write: it waits for a person
//!   under `ask`), then, once the call is answered, a text answer;
//! - `soak-slow`: a text answer sent after a delay, so a cancel lands while
//!   the run waits on the model.

use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// The model of a project's runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    Plain,
    Approve,
    Slow,
}

impl Behaviour {
    pub fn model(self) -> &'static str {
        match self {
            Self::Plain => "soak-plain",
            Self::Approve => "soak-approve",
            Self::Slow => "soak-slow",
        }
    }
}

/// How long a `soak-slow` answer is held.
pub const SLOW_ANSWER: Duration = Duration::from_millis(1_500);

struct Answers;

impl Respond for Answers {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let model = body["model"].as_str().unwrap_or_default();
        let answered_a_call = body["messages"]
            .as_array()
            .and_then(|messages| messages.last())
            .is_some_and(|last| last["role"] == "tool");
        let stream = match model {
            "soak-approve" if !answered_a_call => tool_call(),
            _ => text(&["Looked ", "at the ", "task; ", "all done."]),
        };
        let response = ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(stream);
        if model == "soak-slow" {
            response.set_delay(SLOW_ANSWER)
        } else {
            response
        }
    }
}

fn chunk(delta: Value, finish: Value) -> String {
    let chunk = json!({
        "id": "soak",
        "object": "chat.completion.chunk",
        "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }],
    });
    format!("data: {chunk}\n\n")
}

fn text(parts: &[&str]) -> String {
    let mut stream = chunk(json!({ "role": "assistant", "content": "" }), Value::Null);
    for part in parts {
        stream.push_str(&chunk(json!({ "content": part }), Value::Null));
    }
    stream.push_str(&chunk(json!({}), Value::from("stop")));
    stream.push_str("data: [DONE]\n\n");
    stream
}

fn tool_call() -> String {
    let arguments = json!({ "command": "create", "path": "soak.txt", "file_text": "soaked\n" });
    let call = json!({ "role": "assistant", "tool_calls": [{
        "index": 0, "id": "call_soak", "type": "function",
        "function": { "name": "fs", "arguments": arguments.to_string() }
    }] });
    let mut stream = chunk(call, Value::Null);
    stream.push_str(&chunk(json!({}), Value::from("tool_calls")));
    stream.push_str("data: [DONE]\n\n");
    stream
}

/// Starts the model; its base URL (ending in `/v1`) is the second value.
pub async fn start() -> (MockServer, String) {
    // Requests are not recorded: a long soak would keep every one.
    let server = MockServer::builder()
        .disable_request_recording()
        .start()
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(Answers)
        .mount(&server)
        .await;
    let base = format!("{}/v1", server.uri());
    (server, base)
}
