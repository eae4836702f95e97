//! The scripted OpenAI-compatible tool loop shared by the floor benchmarks:
//! the `echo` tool, the mock's streamed responses, and the request body a
//! bare client sends for each step (byte for byte what the loop sends).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agentloop_types::{Tool, ToolContext, ToolDefinition, ToolResult, ToolStream, single_result};
use axum::body::Bytes;
use serde_json::{Value, json};

pub const MODEL: &str = "bench";
pub const MAX_TOKENS: u32 = 1024;

pub struct Echo;

impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Echoes its text."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}})
    }
    /// One schema for every run, as the floor builds its `tools` once (and
    /// as typed tools do).
    fn definition(&self) -> ToolDefinition {
        static SCHEMA: OnceLock<Arc<Value>> = OnceLock::new();
        ToolDefinition {
            name: self.name().to_owned(),
            description: self.description().to_owned(),
            input_schema: SCHEMA.get_or_init(|| Arc::new(self.input_schema())).clone(),
        }
    }
    fn execute(self: Arc<Self>, input: Value, _: ToolContext) -> ToolStream {
        let text = input["text"].as_str().unwrap_or_default().to_owned();
        single_result(async move { ToolResult::ok(text) })
    }
}

/// The `tools` array of the request body, as the loop writes it for `Echo`.
pub fn tools() -> Value {
    tools_with(&[])
}

/// A tool offered and never called, with a schema the size of a typical
/// file tool's (about 440 bytes of JSON).
pub struct Idle {
    name: String,
    workspace: usize,
}

impl Idle {
    /// Tool `lookup_{n}`: a request offers tools of distinct names.
    pub fn new(n: usize) -> Self {
        Self {
            name: format!("lookup_{n}"),
            workspace: n,
        }
    }
}

impl Tool for Idle {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        "Reads part of a file of the workspace."
    }
    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": format!("The file to read, relative to the root of workspace {}.", self.workspace)},
                "offset": {"type": "integer", "minimum": 0, "description": "First line to read, from 1."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 2000, "description": "Lines to read at most."},
                "mode": {"type": "string", "enum": ["text", "bytes", "lines"], "description": "How to read it."}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }
    fn execute(self: Arc<Self>, _: Value, _: ToolContext) -> ToolStream {
        single_result(async { ToolResult::error("never called in the benchmark") })
    }
}

/// The `tools` array for `Echo` followed by `idle`.
pub fn tools_with(idle: &[Idle]) -> Value {
    let echo = json!({"type": "function", "function": {"name": "echo",
        "description": "Echoes its text.", "parameters": Echo.input_schema()}});
    let idle = idle.iter().map(|tool| {
        json!({"type": "function", "function": {"name": tool.name(),
            "description": tool.description(), "parameters": tool.input_schema()}})
    });
    Value::Array(std::iter::once(echo).chain(idle).collect())
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let body = json!({
        "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    format!("data: {body}\n\n")
}

/// Response `step` of a run of `steps` model calls: a streamed call of the
/// tool, except the last, which answers in text.
pub fn response(step: usize, steps: usize) -> Bytes {
    let mut sse = chunk(json!({"role": "assistant", "content": ""}), None);
    if step + 1 == steps {
        sse += &chunk(json!({"content": "Finished."}), None);
        sse += &chunk(json!({}), Some("stop"));
    } else {
        sse += &chunk(
            json!({"tool_calls": [{"index": 0, "id": format!("call_{step}"), "type": "function",
                "function": {"name": "echo", "arguments": ""}}]}),
            None,
        );
        let arguments = json!({"text": format!("step {step}")}).to_string();
        sse += &chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}),
            None,
        );
        sse += &chunk(json!({}), Some("tool_calls"));
    }
    let usage = json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0,
        "model": MODEL, "choices": [],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}});
    sse += &format!("data: {usage}\n\ndata: [DONE]\n\n");
    Bytes::from(sse)
}

/// The request body the floor sends before step `step`: the same fields,
/// in the same order, as the loop's, grown by one call and one result per
/// step.
pub struct FloorBody {
    head: String,
    messages: String,
    tail: String,
}

impl FloorBody {
    pub fn new(tools: &Value) -> Self {
        Self {
            head: format!("{{\"model\":\"{MODEL}\",\"messages\":["),
            messages: r#"{"role":"user","content":"go"}"#.to_owned(),
            tail: format!(
                "],\"max_completion_tokens\":{MAX_TOKENS},\"tools\":{tools},\"stream\":true,\"stream_options\":{{\"include_usage\":true}}}}"
            ),
        }
    }

    pub fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.head.len() + self.messages.len() + self.tail.len());
        out.extend_from_slice(self.head.as_bytes());
        out.extend_from_slice(self.messages.as_bytes());
        out.extend_from_slice(self.tail.as_bytes());
        out
    }

    pub fn push_step(&mut self, step: usize) {
        use std::fmt::Write as _;
        let _ = write!(
            self.messages,
            r#",{{"role":"assistant","content":null,"tool_calls":[{{"id":"call_{step}","type":"function","function":{{"name":"echo","arguments":"{{\"text\":\"step {step}\"}}"}}}}]}},{{"role":"tool","tool_call_id":"call_{step}","content":"step {step}"}}"#
        );
    }
}

/// One floor run: `steps` requests sent with a bare reqwest client, each
/// response read whole, nothing else done.
pub async fn floor_run(
    client: &reqwest::Client,
    url: &str,
    tools: &Value,
    steps: usize,
) -> Result<(), reqwest::Error> {
    let mut body = FloorBody::new(tools);
    for step in 0..steps {
        let response = client
            .post(url)
            .bearer_auth("bench-key")
            .header("content-type", "application/json")
            .body(body.bytes())
            .send()
            .await?
            .error_for_status()?;
        response.bytes().await?;
        body.push_step(step);
    }
    Ok(())
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
