//! One configured MCP server: its session (restarted when it dies), its
//! current tool list, and tool calls with progress, cancellation and a
//! timeout. Its tools, as the model sees them, are built on top of it in
//! the `tool` module.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use agentloop_types::{CancellationToken, ToolResult};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
    ClientNotification, JsonObject, ProgressNotificationParam, RequestId, ServerResult,
};
use rmcp::service::{PeerRequestOptions, RequestHandle, ServiceError};
use rmcp::{Peer, RoleClient};
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use crate::McpError;
use crate::asks::{Asking, Elicitor};
use crate::config::ServerConfig;
use crate::connection::Connection;
use crate::result::to_tool_result;

/// How long a shutdown waits for cancellation notices still being sent.
const NOTICE_GRACE: Duration = Duration::from_secs(2);

/// Longest tool name providers accept.
const MAX_TOOL_NAME: usize = 64;

/// Limits for one server, and who answers its forms.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// How long one `tools/call` may take before the server counts as hung:
    /// the call gets an error result and the server is restarted.
    pub call_timeout: Duration,
    /// How long starting a server and listing its tools may take.
    pub connect_timeout: Duration,
    /// Who answers the forms the server asks the person to fill in (see
    /// [`crate::Elicitor`]); `None`: the client does not offer
    /// elicitation.
    pub elicitor: Option<Arc<dyn Elicitor>>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            call_timeout: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(60),
            elicitor: None,
        }
    }
}

/// One tool a server offers, as it is offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedTool {
    /// The name the model sees: `<server>__<tool>`.
    pub name: String,
    /// The tool's name on the server.
    pub mcp_name: String,
    /// Its description.
    pub description: String,
    /// Its input schema, as the server gave it.
    pub input_schema: Value,
    /// The server declares that the tool changes nothing
    /// (`annotations.readOnlyHint`).
    pub read_only: bool,
}

/// A configured MCP server. Cheap to clone; the session ends (and a child
/// process is killed) when the last clone and the last of its tools are
/// dropped.
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    config: ServerConfig,
    options: ServerOptions,
    /// The live session, if any; replaced when it dies or hangs.
    session: tokio::sync::Mutex<Option<Arc<Connection>>>,
    tools: watch::Sender<Vec<ListedTool>>,
    /// Whether the live session's server declared resources.
    offers_resources: AtomicBool,
    /// Whether it declared prompts.
    offers_prompts: AtomicBool,
    tools_changed: mpsc::UnboundedSender<()>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Ok(mut session) = self.session.try_lock()
            && let Some(connection) = session.take()
        {
            connection.close();
        }
    }
}

impl McpServer {
    /// Starts the server (or opens the HTTP session) and lists its tools.
    /// Must run inside a Tokio runtime, which then carries the session.
    pub async fn start(
        name: impl Into<String>,
        config: ServerConfig,
        options: ServerOptions,
    ) -> Result<Self, McpError> {
        let (tools_changed, changes) = mpsc::unbounded_channel();
        let server = Self {
            inner: Arc::new(Inner {
                name: name.into(),
                config,
                options,
                session: tokio::sync::Mutex::new(None),
                tools: watch::Sender::new(Vec::new()),
                offers_resources: AtomicBool::new(false),
                offers_prompts: AtomicBool::new(false),
                tools_changed,
                stderr: Arc::default(),
            }),
        };
        tokio::spawn(follow_list_changes(Arc::downgrade(&server.inner), changes));
        server.session().await?;
        Ok(server)
    }

    /// The server's name (the prefix of its tool names).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The tools the server offers now.
    pub fn listed_tools(&self) -> Vec<ListedTool> {
        self.inner.tools.borrow().clone()
    }

    /// Whether the server offers resources (it declared them when its
    /// session opened).
    pub fn offers_resources(&self) -> bool {
        self.inner.offers_resources.load(Ordering::Acquire)
    }

    /// Whether the server offers prompts (it declared them when its
    /// session opened).
    pub fn offers_prompts(&self) -> bool {
        self.inner.offers_prompts.load(Ordering::Acquire)
    }

    /// Watches the tool list; it changes when the server announces
    /// `tools/list_changed` and after a restart.
    pub fn subscribe(&self) -> watch::Receiver<Vec<ListedTool>> {
        self.inner.tools.subscribe()
    }

    /// The last lines the server process wrote to stderr.
    pub fn stderr_tail(&self) -> Vec<String> {
        let tail = self
            .inner
            .stderr
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        tail.iter().cloned().collect()
    }

    /// Ends the session and waits for it to close: a child process gets its
    /// stdin closed, then SIGTERM, then SIGKILL if it lingers. A later call
    /// starts a new session.
    pub async fn shutdown(&self) {
        let taken = self.inner.session.lock().await.take();
        if let Some(connection) = taken {
            // Cancellations of abandoned calls go out before the session ends.
            let notices = std::mem::take(
                &mut *connection
                    .cancel_notices
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner),
            );
            let _ = tokio::time::timeout(NOTICE_GRACE, futures::future::join_all(notices)).await;
            match Arc::try_unwrap(connection) {
                Ok(mut connection) => {
                    let _ = connection.service.close().await;
                }
                // A call still holds the session; it ends when that call does.
                Err(shared) => shared.close(),
            }
        }
    }

    /// The live session, starting one (and re-listing tools) when there is
    /// none or the last one died.
    async fn session(&self) -> Result<Arc<Connection>, McpError> {
        let mut slot = self.inner.session.lock().await;
        if let Some(connection) = slot.as_ref()
            && !connection.is_closed()
        {
            return Ok(connection.clone());
        }
        if let Some(dead) = slot.take() {
            dead.close();
        }
        self.inner
            .stderr
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        let timeout = self.inner.options.connect_timeout;
        let opened = tokio::time::timeout(timeout, async {
            let asking = self.inner.options.elicitor.clone().map(|elicitor| Asking {
                server: self.inner.name.clone(),
                elicitor,
            });
            let connection = Connection::open(
                &self.inner.config,
                self.inner.tools_changed.clone(),
                self.inner.stderr.clone(),
                asking,
            )
            .await?;
            let tools = list_tools(&self.inner.name, connection.service.peer()).await?;
            Ok::<_, McpError>((connection, tools))
        })
        .await;
        let (connection, tools) = match opened {
            Ok(Ok(opened)) => opened,
            Ok(Err(e)) => return Err(self.with_stderr(e)),
            Err(_) => {
                return Err(self.with_stderr(McpError::Timeout {
                    what: "starting the server".to_owned(),
                    after: timeout,
                }));
            }
        };
        let declared = connection.service.peer().peer_info();
        let capabilities = declared.as_ref().map(|info| &info.capabilities);
        self.inner.offers_resources.store(
            capabilities.is_some_and(|c| c.resources.is_some()),
            Ordering::Release,
        );
        self.inner.offers_prompts.store(
            capabilities.is_some_and(|c| c.prompts.is_some()),
            Ordering::Release,
        );
        let connection = Arc::new(connection);
        self.inner.tools.send_replace(tools);
        *slot = Some(connection.clone());
        Ok(connection)
    }

    /// Drops `connection` if it is still the live session, so the next call
    /// starts a new one.
    async fn discard(&self, connection: &Arc<Connection>) {
        let mut slot = self.inner.session.lock().await;
        if slot
            .as_ref()
            .is_some_and(|live| Arc::ptr_eq(live, connection))
        {
            slot.take();
        }
        connection.close();
    }

    fn with_stderr(&self, error: McpError) -> McpError {
        McpError::Server {
            server: self.inner.name.clone(),
            message: error.to_string(),
            stderr: self.stderr_tail().join("\n"),
        }
    }

    fn failure(&self, what: &str) -> ToolResult {
        let stderr = self.stderr_tail();
        let mut message = format!("MCP server `{}` {what}", self.inner.name);
        if !stderr.is_empty() {
            message.push_str("\nIts last stderr lines:\n");
            message.push_str(&stderr.join("\n"));
        }
        ToolResult::error(message)
    }

    /// Calls `tool` on the server. Progress goes to `progress`; cancelling
    /// `cancel` sends `notifications/cancelled` and ends the call.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: Option<JsonObject>,
        cancel: CancellationToken,
        progress: mpsc::UnboundedSender<ProgressNotificationParam>,
    ) -> ToolResult {
        const CANCELLED: &str = "Cancelled: the call was cancelled before the MCP tool finished.";
        if cancel.is_cancelled() {
            return ToolResult::error(CANCELLED);
        }
        let connection = match self.session().await {
            Ok(connection) => connection,
            Err(e) => return ToolResult::error(format!("{e}")),
        };
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let peer = connection.service.peer().clone();
        let sent = peer
            .send_cancellable_request(
                CallToolRequest::new(params).into(),
                PeerRequestOptions::no_options(),
            )
            .await;
        let handle: RequestHandle<RoleClient> = match sent {
            Ok(handle) => handle,
            Err(e) => {
                self.discard(&connection).await;
                return self.failure(&format!(
                    "could not be reached ({e}); it will be restarted for the next call."
                ));
            }
        };
        let RequestHandle {
            rx,
            id,
            progress_token,
            ..
        } = handle;
        let _route = connection.route_progress(progress_token, progress);
        let mut pending = PendingCall {
            peer,
            id: Some(id),
            cancel: cancel.clone(),
            notices: connection.cancel_notices.clone(),
        };
        let timeout = self.inner.options.call_timeout;
        tokio::select! {
            response = rx => {
                pending.id = None;
                match response {
                    Ok(Ok(ServerResult::CallToolResult(result))) => to_tool_result(&result),
                    Ok(Ok(_)) => ToolResult::error(format!(
                        "MCP server `{}` answered tools/call with something other than a tool result",
                        self.inner.name
                    )),
                    Ok(Err(ServiceError::McpError(error))) => ToolResult::error(format!(
                        "MCP server `{}` refused the call: {}",
                        self.inner.name, error.message
                    )),
                    Ok(Err(e)) => {
                        self.discard(&connection).await;
                        self.failure(&format!("failed during the call ({e}); it will be restarted for the next call."))
                    }
                    Err(_) => {
                        self.discard(&connection).await;
                        self.failure("stopped during the call (the process exited or the connection closed); it will be restarted for the next call.")
                    }
                }
            }
            () = tokio::time::sleep(timeout) => {
                pending.cancel("timed out").await;
                self.discard(&connection).await;
                self.failure(&format!(
                    "did not answer within {} s and was stopped; it will be restarted for the next call.",
                    timeout.as_secs_f64()
                ))
            }
            () = cancel.cancelled() => {
                pending.cancel("cancelled by the client").await;
                ToolResult::error(CANCELLED)
            }
        }
    }

    /// Runs `request` on the live session within the call timeout, or
    /// until `cancel`: what the server refused says why; a session that
    /// failed is dropped, so the next request starts a new one.
    pub(crate) async fn request<T, F, Fut>(
        &self,
        what: &str,
        cancel: &CancellationToken,
        request: F,
    ) -> Result<T, String>
    where
        F: FnOnce(Peer<RoleClient>) -> Fut,
        Fut: Future<Output = Result<T, ServiceError>>,
    {
        let connection = self.session().await.map_err(|e| e.to_string())?;
        let name = &self.inner.name;
        let timeout = self.inner.options.call_timeout;
        tokio::select! {
            answered = request(connection.service.peer().clone()) => match answered {
                Ok(answer) => Ok(answer),
                Err(ServiceError::McpError(error)) => {
                    Err(format!("MCP server `{name}` refused {what}: {}", error.message))
                }
                Err(e) => {
                    self.discard(&connection).await;
                    Err(format!("MCP server `{name}` failed during {what} ({e}); it will be restarted for the next call."))
                }
            },
            () = tokio::time::sleep(timeout) => {
                self.discard(&connection).await;
                Err(format!(
                    "MCP server `{name}` did not answer {what} within {} s and was stopped; it will be restarted for the next call.",
                    timeout.as_secs_f64()
                ))
            }
            () = cancel.cancelled() => Err(format!("Cancelled: {what} was cancelled.")),
        }
    }
}

/// A request the server may still be working on. Dropping it unanswered
/// (the caller abandoned the call, or the run was cancelled and stopped
/// polling it) tells the server to stop.
struct PendingCall {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
    cancel: CancellationToken,
    /// Where the notice sent on drop is tracked, so a shutdown can let it
    /// reach the server first.
    notices: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl PendingCall {
    async fn cancel(&mut self, reason: &str) {
        if let Some(id) = self.id.take() {
            let _ = self.peer.send_notification(cancelled(id, reason)).await;
        }
    }
}

impl Drop for PendingCall {
    fn drop(&mut self) {
        if let Some(id) = self.id.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let reason = if self.cancel.is_cancelled() {
                "cancelled by the client"
            } else {
                "the call was abandoned"
            };
            let peer = self.peer.clone();
            let notice = runtime.spawn(async move {
                let _ = peer.send_notification(cancelled(id, reason)).await;
            });
            let mut notices = self.notices.lock().unwrap_or_else(PoisonError::into_inner);
            notices.retain(|n| !n.is_finished());
            notices.push(notice);
        }
    }
}

fn cancelled(id: RequestId, reason: &str) -> ClientNotification {
    CancelledNotification::new(CancelledNotificationParam::new(
        Some(id),
        Some(reason.to_owned()),
    ))
    .into()
}

/// Re-lists the tools whenever the server says they changed, for as long as
/// the server is alive.
async fn follow_list_changes(server: Weak<Inner>, mut changes: mpsc::UnboundedReceiver<()>) {
    while changes.recv().await.is_some() {
        // Announcements that arrived meanwhile are covered by this listing.
        while changes.try_recv().is_ok() {}
        let Some(inner) = server.upgrade() else {
            return;
        };
        let live = inner.session.lock().await.clone();
        if let Some(connection) = live
            && let Ok(tools) = list_tools(&inner.name, connection.service.peer()).await
        {
            inner.tools.send_replace(tools);
        }
    }
}

async fn list_tools(server: &str, peer: &Peer<RoleClient>) -> Result<Vec<ListedTool>, McpError> {
    let tools = peer
        .list_all_tools()
        .await
        .map_err(|e| McpError::Handshake {
            message: format!("tools/list failed: {e}"),
        })?;
    Ok(tools
        .into_iter()
        .map(|tool| ListedTool {
            name: namespaced(server, &tool.name),
            mcp_name: tool.name.to_string(),
            description: tool
                .description
                .as_deref()
                .or(tool.title.as_deref())
                .unwrap_or_default()
                .to_owned(),
            input_schema: Value::Object((*tool.input_schema).clone()),
            read_only: tool
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false),
        })
        .collect())
}

/// `<server>__<tool>`, with characters providers reject replaced by `_` and
/// cut to the providers' length limit.
pub fn namespaced(server: &str, tool: &str) -> String {
    format!("{server}__{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_TOOL_NAME)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_namespaced_and_safe() {
        assert_eq!(namespaced("everything", "get-sum"), "everything__get-sum");
        assert_eq!(namespaced("fs", "read.file v2"), "fs__read_file_v2");
        assert_eq!(namespaced("s", &"x".repeat(100)).len(), MAX_TOOL_NAME);
    }
}
