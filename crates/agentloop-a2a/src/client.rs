//! A remote A2A agent as a tool (feature `client`): the model sends it a
//! message, the agent's progress shows as the call's progress, and the
//! call's result is the task's artifacts as text. Cancelling the run (or
//! dropping the call) cancels the remote task (`CancelTask`).
//!
//! The agent is found through its card (`<url>/.well-known/agent-card.json`,
//! or the card's own URL when `url` ends in `.json`); its first JSON-RPC
//! interface of protocol 1.x is used, streaming when the card says it can.

use std::sync::Arc;

use agentloop_types::{
    BlockCategory, RenderingBlockGroup, RenderingContentBlock, Tool, ToolContext, ToolOutput,
    ToolResult, ToolStream, ToolStreamEvent,
};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::rpc::{self, AnswerError, method};
use crate::wire::{
    AGENT_CARD_PATH, AgentCard, Artifact, Message, PROTOCOL_VERSION, Part, Role,
    SendMessageRequest, SendMessageResponse, StreamResponse, TaskIdRequest, TaskState,
    VERSION_HEADER,
};

/// One remote agent: where it is and how to authenticate.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteAgent {
    /// The tool's name suffix (`a2a_<name>`).
    pub name: String,
    /// The agent's base URL (its card at the well-known path) or its
    /// card's URL.
    pub url: String,
    /// A bearer token sent with every request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The tenant requests name (an agentloop server: a project id).
    #[serde(default)]
    pub tenant: Option<String>,
    /// What the agent is for, for the model (the card's description when
    /// absent).
    #[serde(default)]
    pub description: Option<String>,
}

/// Why a remote agent could not be reached or answered wrongly.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The HTTP request failed.
    #[error("A2A request failed: {0}")]
    Http(String),
    /// The server answered an HTTP error.
    #[error("A2A server answered HTTP {status}: {body}")]
    Status {
        /// The status.
        status: u16,
        /// The body's beginning.
        body: String,
    },
    /// The card offers nothing this client speaks.
    #[error("the agent card offers no JSON-RPC interface of A2A {PROTOCOL_VERSION}")]
    NoInterface,
    /// The answer was not what the method returns.
    #[error("malformed A2A answer: {0}")]
    Malformed(String),
    /// The server answered with a JSON-RPC error.
    #[error(transparent)]
    Rpc(#[from] rpc::RpcError),
}

impl From<AnswerError> for ClientError {
    fn from(err: AnswerError) -> Self {
        match err {
            AnswerError::Rpc(e) => Self::Rpc(e),
            AnswerError::Malformed(m) => Self::Malformed(m),
        }
    }
}

/// A connection to one remote agent, its card read.
#[derive(Debug, Clone)]
pub struct A2aClient {
    http: reqwest::Client,
    agent: RemoteAgent,
    card: AgentCard,
    endpoint: String,
}

impl A2aClient {
    /// Reads the agent's card.
    pub async fn connect(agent: RemoteAgent) -> Result<Self, ClientError> {
        let http = reqwest::Client::new();
        let card_url = if agent.url.ends_with(".json") {
            agent.url.clone()
        } else {
            format!("{}{AGENT_CARD_PATH}", agent.url.trim_end_matches('/'))
        };
        let response = with_auth(http.get(&card_url), &agent)
            .send()
            .await
            .map_err(|e| ClientError::Http(e.to_string()))?;
        let card: AgentCard = serde_json::from_value(json_body(response).await?)
            .map_err(|e| ClientError::Malformed(format!("agent card: {e}")))?;
        let endpoint = card
            .supported_interfaces
            .iter()
            .find(|i| {
                let version = i.protocol_version.as_str();
                i.protocol_binding == crate::wire::JSONRPC_BINDING
                    && (version.is_empty() || version == "1" || version.starts_with("1."))
            })
            .map(|i| i.url.clone())
            .ok_or(ClientError::NoInterface)?;
        Ok(Self {
            http,
            agent,
            card,
            endpoint,
        })
    }

    /// The agent's card.
    pub fn card(&self) -> &AgentCard {
        &self.card
    }

    fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        with_auth(self.http.post(&self.endpoint), &self.agent)
            .header(VERSION_HEADER, PROTOCOL_VERSION)
            .json(body)
    }

    async fn call(
        &self,
        method: &str,
        params: &impl serde::Serialize,
    ) -> Result<Value, ClientError> {
        let body = rpc::request(&new_request_id(), method, params);
        let response = self
            .post(&body)
            .send()
            .await
            .map_err(|e| ClientError::Http(e.to_string()))?;
        Ok(rpc::parse_answer(json_body(response).await?)?)
    }

    /// Sends a message; every item of the answer goes to `items` as it
    /// comes (one task for a server that does not stream).
    pub async fn send(
        &self,
        request: &SendMessageRequest,
        items: &mpsc::UnboundedSender<StreamResponse>,
    ) -> Result<(), ClientError> {
        if self.card.capabilities.streaming != Some(true) {
            let answer: SendMessageResponse =
                serde_json::from_value(self.call(method::SEND_MESSAGE, request).await?)
                    .map_err(|e| ClientError::Malformed(format!("SendMessage result: {e}")))?;
            let item = match answer {
                SendMessageResponse::Task(task) => StreamResponse::Task(task),
                SendMessageResponse::Message(message) => StreamResponse::Message(message),
            };
            let _ = items.send(item);
            return Ok(());
        }
        let body = rpc::request(&new_request_id(), method::SEND_STREAMING_MESSAGE, request);
        let response = self
            .post(&body)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| ClientError::Http(e.to_string()))?;
        let is_stream = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_stream {
            // An error before the stream started comes as a JSON answer.
            let answer = rpc::parse_answer(json_body(response).await?)?;
            return Err(ClientError::Malformed(format!(
                "expected an event stream, got {answer}"
            )));
        }
        let mut bytes = response.bytes_stream();
        let mut frames = SseFrames::default();
        while let Some(chunk) = bytes.next().await {
            let chunk = chunk.map_err(|e| ClientError::Http(e.to_string()))?;
            for data in frames.push(&chunk) {
                let answer: Value = serde_json::from_str(&data)
                    .map_err(|e| ClientError::Malformed(format!("stream item: {e}")))?;
                let item: StreamResponse = serde_json::from_value(rpc::parse_answer(answer)?)
                    .map_err(|e| ClientError::Malformed(format!("stream item: {e}")))?;
                let _ = items.send(item);
            }
        }
        Ok(())
    }

    /// Cancels a task.
    pub async fn cancel(&self, task_id: &str) -> Result<(), ClientError> {
        let params = TaskIdRequest {
            tenant: self.agent.tenant.clone().unwrap_or_default(),
            id: task_id.to_owned(),
            history_length: None,
            metadata: None,
        };
        self.call(method::CANCEL_TASK, &params).await.map(|_| ())
    }
}

fn with_auth(builder: reqwest::RequestBuilder, agent: &RemoteAgent) -> reqwest::RequestBuilder {
    match &agent.token {
        Some(token) => builder.bearer_auth(token),
        None => builder,
    }
}

async fn json_body(response: reqwest::Response) -> Result<Value, ClientError> {
    let status = response.status();
    let text = response
        .text()
        .await
        .map_err(|e| ClientError::Http(e.to_string()))?;
    if !status.is_success() {
        return Err(ClientError::Status {
            status: status.as_u16(),
            body: text.chars().take(500).collect(),
        });
    }
    serde_json::from_str(&text).map_err(|e| ClientError::Malformed(e.to_string()))
}

fn new_request_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("agentloop-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Server-sent events cut into their `data` (a frame's `data:` lines
/// joined), frames split on a blank line.
#[derive(Debug, Default)]
struct SseFrames {
    buffer: String,
    data: Vec<String>,
}

impl SseFrames {
    fn push(&mut self, chunk: &[u8]) -> Vec<String> {
        self.buffer.push_str(&String::from_utf8_lossy(chunk));
        let mut out = Vec::new();
        while let Some(end) = self.buffer.find('\n') {
            let line: String = self.buffer.drain(..=end).collect();
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if !self.data.is_empty() {
                    out.push(self.data.join("\n"));
                    self.data.clear();
                }
            } else if let Some(value) = line.strip_prefix("data:") {
                self.data
                    .push(value.strip_prefix(' ').unwrap_or(value).to_owned());
            }
        }
        out
    }
}

/// A tool's calls still under way (each on its own task, so a cancelled
/// call can still cancel its remote task after its stream was dropped).
#[derive(Debug, Clone, Default)]
pub struct CallTracker(Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>);

impl CallTracker {
    fn track(&self, handle: tokio::task::JoinHandle<()>) {
        let mut calls = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        calls.retain(|call| !call.is_finished());
        calls.push(handle);
    }

    /// Waits, at most `within`, for the calls under way to end (a host
    /// about to exit lets cancelled calls cancel their remote tasks).
    pub async fn settle(&self, within: std::time::Duration) {
        let calls: Vec<_> = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .drain(..)
            .collect();
        let _ = tokio::time::timeout(within, futures::future::join_all(calls)).await;
    }
}

/// A remote A2A agent as a tool, `a2a_<name>`.
pub struct A2aAgentTool {
    client: A2aClient,
    name: String,
    description: String,
    calls: CallTracker,
}

impl A2aAgentTool {
    /// Reads the agent's card and makes its tool.
    pub async fn connect(agent: RemoteAgent) -> Result<Self, ClientError> {
        let name = format!("a2a_{}", agent.name);
        let client = A2aClient::connect(agent).await?;
        let description = format!(
            "Delegates to the remote agent {:?} over A2A: {} Send it a message; the result is its answer. \
             If it needs input, the result says so with its task_id: call again with that task_id and the reply.",
            client.card.name,
            client
                .agent
                .description
                .clone()
                .unwrap_or_else(|| client.card.description.clone())
        );
        Ok(Self {
            client,
            name,
            description,
            calls: CallTracker::default(),
        })
    }

    /// Its calls under way.
    pub fn calls(&self) -> CallTracker {
        self.calls.clone()
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallInput {
    message: String,
    #[serde(default)]
    task_id: Option<String>,
    #[serde(default)]
    context_id: Option<String>,
}

impl Tool for A2aAgentTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "message": { "type": "string", "description": "What to ask or tell the agent" },
                "task_id": { "type": "string", "description": "The task that asked for input, to reply to it" },
                "context_id": { "type": "string", "description": "A context of earlier tasks to continue" }
            },
            "required": ["message"],
            "additionalProperties": false
        })
    }

    fn execute(self: Arc<Self>, input: Value, context: ToolContext) -> ToolStream {
        let input: CallInput = match agentloop_types::parse_input(input) {
            Ok(input) => input,
            Err(result) => {
                return Box::pin(futures::stream::once(async { ToolOutput::Done(result) }));
            }
        };
        let (out, rx) = mpsc::unbounded_channel();
        // The call runs on its own task, so a dropped stream (the run
        // stopped polling it) still cancels the remote task.
        self.calls.track(tokio::spawn(drive(
            self.client.clone(),
            input,
            context,
            out,
        )));
        Box::pin(futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|item| (item, rx))
        }))
    }
}

/// One call: send, forward progress, cancel the remote task when the run
/// is cancelled or the call is abandoned, and end with the result.
async fn drive(
    client: A2aClient,
    input: CallInput,
    context: ToolContext,
    out: mpsc::UnboundedSender<ToolOutput>,
) {
    let message = Message {
        message_id: format!("{}-{}", context.run_id, context.tool_use_id),
        context_id: input.context_id.unwrap_or_default(),
        task_id: input.task_id.unwrap_or_default(),
        role: Role::User,
        parts: vec![Part::text(input.message)],
        metadata: None,
        extensions: Vec::new(),
        reference_task_ids: Vec::new(),
    };
    let request = SendMessageRequest {
        tenant: client.agent.tenant.clone().unwrap_or_default(),
        message,
        configuration: None,
        metadata: None,
    };
    let (items_tx, mut items) = mpsc::unbounded_channel();
    let sending = {
        let client = client.clone();
        async move { client.send(&request, &items_tx).await }
    };
    tokio::pin!(sending);
    let mut call = CallState::default();
    let mut sent: Option<Result<(), ClientError>> = None;
    loop {
        tokio::select! {
            result = &mut sending, if sent.is_none() => sent = Some(result),
            item = items.recv() => match item {
                Some(item) => {
                    call.absorb(item);
                    if out.send(ToolOutput::Event(call.progress())).is_err() {
                        break;
                    }
                }
                // The sender lives in the sending future: it has ended.
                None => break,
            },
            () = context.cancel.cancelled() => break,
            () = out.closed() => break,
        }
    }
    let stopped = context.cancel.is_cancelled() || out.is_closed();
    if stopped {
        if let Some(task_id) = call.task_id.as_deref().filter(|_| !call.ended()) {
            let _ = client.cancel(task_id).await;
        }
        let _ = out.send(ToolOutput::Done(ToolResult::error(
            "cancelled: the remote task was cancelled",
        )));
        return;
    }
    let result = match sent {
        Some(Err(error)) if call.task_id.is_none() => ToolResult::error(error.to_string()),
        Some(Err(error)) => {
            ToolResult::error(format!("{}\n(the stream broke: {error})", call.report()))
        }
        _ => call.result(),
    };
    let _ = out.send(ToolOutput::Done(result));
}

/// What a call has heard of its task so far.
#[derive(Debug, Default)]
struct CallState {
    task_id: Option<String>,
    context_id: Option<String>,
    state: Option<TaskState>,
    status_text: Option<String>,
    progress: Vec<String>,
    artifacts: Vec<Artifact>,
    direct: Option<String>,
}

impl CallState {
    fn absorb(&mut self, item: StreamResponse) {
        match item {
            StreamResponse::Task(task) => {
                self.task_id = Some(task.id);
                self.context_id = Some(task.context_id).filter(|c| !c.is_empty());
                self.set_status(task.status.state, task.status.message.as_ref());
                for artifact in task.artifacts {
                    self.add_artifact(artifact, false);
                }
            }
            StreamResponse::StatusUpdate(update) => {
                self.task_id.get_or_insert(update.task_id);
                self.set_status(update.status.state, update.status.message.as_ref());
            }
            StreamResponse::ArtifactUpdate(update) => {
                self.task_id.get_or_insert(update.task_id);
                self.add_artifact(update.artifact, update.append);
            }
            StreamResponse::Message(message) => {
                self.direct = message.text();
                self.state = Some(TaskState::Completed);
            }
        }
    }

    fn set_status(&mut self, state: TaskState, message: Option<&Message>) {
        self.state = Some(state);
        let text = message.and_then(Message::text);
        if let Some(text) = &text
            && state == TaskState::Working
        {
            self.progress.push(text.clone());
        }
        self.status_text = text;
    }

    fn add_artifact(&mut self, artifact: Artifact, append: bool) {
        match self
            .artifacts
            .iter_mut()
            .find(|a| a.artifact_id == artifact.artifact_id)
        {
            Some(known) if append => known.parts.extend(artifact.parts),
            Some(known) => *known = artifact,
            None => self.artifacts.push(artifact),
        }
    }

    fn ended(&self) -> bool {
        self.state.is_some_and(TaskState::is_terminal)
    }

    fn progress(&self) -> ToolStreamEvent {
        let state = self.state.map_or("…".to_owned(), state_name);
        let mut text = format!("[{state}]");
        for line in &self.progress {
            text.push('\n');
            text.push_str(line);
        }
        ToolStreamEvent::GroupsUpdate {
            groups: vec![RenderingBlockGroup {
                category: BlockCategory::Text,
                blocks: vec![RenderingContentBlock::Text { text }],
                is_tool_generated: true,
            }],
        }
    }

    /// The artifacts as text: text parts as they are, data parts as JSON.
    fn artifacts_text(&self) -> String {
        self.artifacts
            .iter()
            .flat_map(|a| a.parts.iter())
            .filter_map(|part| match (&part.text, &part.data) {
                (Some(text), _) => Some(text.clone()),
                (None, Some(data)) => Some(data.to_string()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn report(&self) -> String {
        let mut report = Map::new();
        if let Some(id) = &self.task_id {
            report.insert("task_id".to_owned(), json!(id));
        }
        if let Some(id) = &self.context_id {
            report.insert("context_id".to_owned(), json!(id));
        }
        if let Some(state) = self.state {
            report.insert("state".to_owned(), json!(state_name(state)));
        }
        Value::Object(report).to_string()
    }

    fn result(&self) -> ToolResult {
        if let Some(text) = &self.direct {
            return ToolResult::ok(text.clone());
        }
        let said = self.status_text.clone().unwrap_or_default();
        match self.state {
            Some(TaskState::Completed) => {
                let text = self.artifacts_text();
                ToolResult::ok(if text.is_empty() { said } else { text })
            }
            Some(TaskState::InputRequired | TaskState::AuthRequired) => ToolResult::ok(format!(
                "The agent needs input: {said}\nReply by calling again with task_id {} and your message. {}",
                self.task_id.as_deref().unwrap_or("?"),
                self.report()
            )),
            Some(state) => ToolResult::error(format!(
                "the remote task ended {}: {said} {}",
                state_name(state),
                self.report()
            )),
            None => ToolResult::error("the remote agent answered nothing"),
        }
    }
}

fn state_name(state: TaskState) -> String {
    serde_json::to_value(state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
        .trim_start_matches("TASK_STATE_")
        .to_ascii_lowercase()
        .replace('_', "-")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn frames_split_on_blank_lines_across_chunks() {
        let mut frames = SseFrames::default();
        assert!(frames.push(b"data: {\"a\":").is_empty());
        assert!(frames.push(b"1}\r\n").is_empty());
        assert_eq!(
            frames.push(b"\r\n: keep-alive\n\nevent: error\ndata: x\ndata: y\n\n"),
            vec!["{\"a\":1}".to_owned(), "x\ny".to_owned()]
        );
    }
}
