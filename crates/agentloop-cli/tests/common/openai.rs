//! An OpenAI-compatible server for black-box runs: a wiremock that lists
//! the given models at `GET /v1/models` and answers every chat completion
//! with one streamed text, and the requests it received.

use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A served OpenAI-compatible API; its base URL ends in `/v1`.
pub struct OpenAiServer {
    pub server: MockServer,
    pub base_url: String,
}

/// Starts a server listing `models` (`None`: `/v1/models` answers 404)
/// and answering every completion with `answer`.
pub async fn start(models: Option<&[&str]>, answer: &str) -> OpenAiServer {
    let server = MockServer::start().await;
    if let Some(models) = models {
        let data: Vec<Value> = models
            .iter()
            .map(|id| serde_json::json!({"id": id, "object": "model"}))
            .collect();
        Mock::given(method("GET"))
            .and(path("/v1/models"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(serde_json::json!({"object": "list", "data": data})),
            )
            .mount(&server)
            .await;
    }
    let chunk = |delta: Value, finish: Value| {
        let chunk = serde_json::json!({
            "id": "c1",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        format!("data: {chunk}\n\n")
    };
    let body = [
        chunk(
            serde_json::json!({"role": "assistant", "content": answer}),
            Value::Null,
        ),
        chunk(serde_json::json!({}), Value::from("stop")),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat();
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(body),
        )
        .mount(&server)
        .await;
    let base_url = format!("{}/v1", server.uri());
    OpenAiServer { server, base_url }
}

/// The text of a chat completion's system messages, joined by lines.
pub fn system_text(request: &Value) -> String {
    request["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .filter(|m| m["role"] == "system")
                .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

impl OpenAiServer {
    /// The JSON bodies of the chat completions received, oldest first.
    pub async fn completions(&self) -> Vec<Value> {
        self.server
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .filter(|r| r.url.path() == "/v1/chat/completions")
            .map(|r| serde_json::from_slice(&r.body).unwrap())
            .collect()
    }

    /// The text of the last user message of the `n`th completion.
    pub async fn user_text(&self, n: usize) -> String {
        let request = &self.completions().await[n];
        let user = request["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .unwrap()
            .clone();
        match &user["content"] {
            Value::String(text) => text.clone(),
            parts => parts
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join(""),
        }
    }
}

/// One streamed answer of a chat completion: text, or one call of a tool.
pub enum Turn {
    /// The model says this.
    Text(&'static str),
    /// The model calls `name` with these arguments (`id` the call's id).
    Call {
        id: &'static str,
        name: &'static str,
        arguments: Value,
    },
}

/// A streamed chat completion body saying `turn`.
fn completion(turn: &Turn) -> String {
    let chunk = |delta: Value, finish: Value| {
        let chunk = serde_json::json!({
            "id": "c1",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        format!("data: {chunk}\n\n")
    };
    let (delta, finish) = match turn {
        Turn::Text(text) => (
            serde_json::json!({"role": "assistant", "content": text}),
            "stop",
        ),
        Turn::Call {
            id,
            name,
            arguments,
        } => (
            serde_json::json!({"role": "assistant", "tool_calls": [{
                "index": 0, "id": id, "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()}
            }]}),
            "tool_calls",
        ),
    };
    [
        chunk(delta, Value::Null),
        chunk(serde_json::json!({}), Value::from(finish)),
        "data: [DONE]\n\n".to_owned(),
    ]
    .concat()
}

/// Answers the completions in the order they come: the `n`th with the
/// `n`th turn, every one past the last with the last.
struct InOrder {
    bodies: Vec<String>,
    next: std::sync::atomic::AtomicUsize,
}

impl wiremock::Respond for InOrder {
    fn respond(&self, _request: &wiremock::Request) -> ResponseTemplate {
        let n = self
            .next
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            .min(self.bodies.len().saturating_sub(1));
        ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(self.bodies.get(n).cloned().unwrap_or_default())
    }
}

/// Starts a server answering its completions with `turns`, in order.
pub async fn start_turns(turns: &[Turn]) -> OpenAiServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(InOrder {
            bodies: turns.iter().map(completion).collect(),
            next: Default::default(),
        })
        .mount(&server)
        .await;
    let base_url = format!("{}/v1", server.uri());
    OpenAiServer { server, base_url }
}
