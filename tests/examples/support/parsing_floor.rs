//! The parsing floor: the least any loop must do for the scripted tool loop
//! of `scripted.rs`, written by hand. Each step serialises the typed request
//! (the messages so far), reads the SSE stream chunk by chunk, parses every
//! `data:` payload with `serde_json` into typed deltas, assembles the turn
//! (text, tool calls with their arguments joined), runs `echo` on the
//! parsed arguments and keeps the assistant message and the tool result.
//! Like the loop, it serialises each message once, when it is kept, and the
//! request's other fields once a run: a request is those bytes joined.
//! No retries, no events, no cancellation, no storage: what is left is the
//! work no loop can skip.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::scripted::{MAX_TOKENS, MODEL};

pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// A message of the conversation, as the chat completions API takes it.
#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum Message {
    User {
        content: String,
    },
    Assistant {
        content: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

#[derive(Serialize, Default)]
struct ToolCall {
    id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function,
}

#[derive(Serialize, Default)]
struct Function {
    name: String,
    arguments: String,
}

/// The request body's fields around its messages, in the loop's order.
#[derive(Serialize)]
struct Fields<'a> {
    max_completion_tokens: u32,
    tools: &'a Value,
    stream: bool,
    stream_options: StreamOptions,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// One `data:` payload of the stream.
#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Delta,
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Delta {
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolCallDelta>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    index: usize,
    id: Option<String>,
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct Usage {
    prompt_tokens: u64,
    completion_tokens: u64,
}

/// `echo`'s input.
#[derive(Deserialize)]
struct EchoInput {
    text: String,
}

/// A turn assembled from its deltas.
#[derive(Default)]
struct Turn {
    text: String,
    calls: Vec<ToolCall>,
    finish: Option<String>,
    tokens: u64,
}

impl Turn {
    fn apply(&mut self, chunk: Chunk) {
        if let Some(usage) = chunk.usage {
            self.tokens += usage.prompt_tokens + usage.completion_tokens;
        }
        for choice in chunk.choices {
            if let Some(text) = choice.delta.content {
                self.text.push_str(&text);
            }
            for delta in choice.delta.tool_calls {
                if self.calls.len() <= delta.index {
                    self.calls.resize_with(delta.index + 1, ToolCall::default);
                }
                let call = &mut self.calls[delta.index];
                call.kind = "function";
                if let Some(id) = delta.id {
                    call.id = id;
                }
                if let Some(function) = delta.function {
                    if let Some(name) = function.name {
                        call.function.name.push_str(&name);
                    }
                    if let Some(arguments) = function.arguments {
                        call.function.arguments.push_str(&arguments);
                    }
                }
            }
            if choice.finish_reason.is_some() {
                self.finish = choice.finish_reason;
            }
        }
    }
}

/// The conversation of one parsing-floor run: its messages, and each one
/// serialised as it was kept.
pub struct Conversation {
    messages: Vec<Message>,
    head: Vec<u8>,
    encoded: Vec<u8>,
    tail: Vec<u8>,
}

impl Conversation {
    fn new(tools: &Value) -> Result<Self, serde_json::Error> {
        let mut head = b"{\"model\":".to_vec();
        serde_json::to_writer(&mut head, MODEL)?;
        head.extend_from_slice(b",\"messages\":[");
        let mut tail = b"],".to_vec();
        let fields = serde_json::to_vec(&Fields {
            max_completion_tokens: MAX_TOKENS,
            tools,
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
        })?;
        tail.extend_from_slice(&fields[1..]);
        let mut conversation = Self {
            messages: Vec::new(),
            head,
            encoded: Vec::new(),
            tail,
        };
        conversation.push(Message::User {
            content: "go".to_owned(),
        })?;
        Ok(conversation)
    }

    fn push(&mut self, message: Message) -> Result<(), serde_json::Error> {
        if !self.messages.is_empty() {
            self.encoded.push(b',');
        }
        serde_json::to_writer(&mut self.encoded, &message)?;
        self.messages.push(message);
        Ok(())
    }

    /// The next request's body.
    fn body(&self) -> Vec<u8> {
        let mut body = Vec::with_capacity(self.head.len() + self.encoded.len() + self.tail.len());
        body.extend_from_slice(&self.head);
        body.extend_from_slice(&self.encoded);
        body.extend_from_slice(&self.tail);
        body
    }

    /// Keeps the assistant's turn and runs its tool calls; `true` when the
    /// model asked for tools (the run goes on).
    fn keep(&mut self, turn: Turn) -> Result<bool, Error> {
        if turn.finish.as_deref() != Some("tool_calls") {
            self.push(Message::Assistant {
                content: Some(turn.text),
                tool_calls: Vec::new(),
            })?;
            return Ok(false);
        }
        let results = turn
            .calls
            .iter()
            .map(|call| {
                if call.function.name != "echo" {
                    return Err(format!("unknown tool {:?}", call.function.name).into());
                }
                let input: EchoInput = serde_json::from_str(&call.function.arguments)?;
                Ok(Message::Tool {
                    tool_call_id: call.id.clone(),
                    content: input.text,
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        self.push(Message::Assistant {
            content: (!turn.text.is_empty()).then_some(turn.text),
            tool_calls: turn.calls,
        })?;
        for result in results {
            self.push(result)?;
        }
        Ok(true)
    }

    /// Messages kept so far, the user's first one included.
    pub fn len(&self) -> usize {
        self.messages.len()
    }
}

/// Reads one streamed response and assembles its turn.
async fn read_turn(mut response: reqwest::Response) -> Result<Turn, Error> {
    let mut turn = Turn::default();
    let mut pending: Vec<u8> = Vec::new();
    while let Some(bytes) = response.chunk().await? {
        pending.extend_from_slice(&bytes);
        let mut start = 0;
        while let Some(end) = pending[start..].windows(2).position(|w| w == b"\n\n") {
            let event = &pending[start..start + end];
            start += end + 2;
            for line in event.split(|&b| b == b'\n') {
                let Some(data) = line.strip_prefix(b"data:") else {
                    continue;
                };
                let data = data.strip_prefix(b" ").unwrap_or(data);
                if data == b"[DONE]" {
                    return Ok(turn);
                }
                turn.apply(serde_json::from_slice(data)?);
            }
        }
        pending.drain(..start);
    }
    Ok(turn)
}

/// One parsing-floor run of `steps` model calls; returns its conversation.
pub async fn run(
    client: &reqwest::Client,
    url: &str,
    tools: &Value,
    steps: usize,
) -> Result<Conversation, Error> {
    let mut conversation = Conversation::new(tools)?;
    for step in 0..steps {
        let body = conversation.body();
        let response = client
            .post(url)
            .bearer_auth("bench-key")
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await?
            .error_for_status()?;
        let turn = read_turn(response).await?;
        let more = conversation.keep(turn)?;
        if more == (step + 1 == steps) {
            return Err(format!("step {step}: the run ended early or went on too long").into());
        }
    }
    Ok(conversation)
}
