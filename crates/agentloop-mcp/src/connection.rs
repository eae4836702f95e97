//! One live MCP session: the transport (child process or HTTP), the SDK's
//! running client, and the notifications it routes back to calls.

use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, FormElicitationCapability, Implementation, JsonRpcMessage,
    ProgressNotificationParam, ProgressToken, ServerNotification,
};
use rmcp::service::{
    NotificationContext, RequestContext, RunningService, RxJsonRpcMessage, TxJsonRpcMessage,
};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess, Transport};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::ChildStderr;
use tokio::sync::mpsc;

use crate::McpError;
use crate::asks::{Asking, FormAnswer, FormRequest};
use crate::config::{HttpConfig, ServerConfig, StdioConfig};

/// Lines of a child's stderr kept for error messages.
const STDERR_LINES: usize = 20;
/// Progress notifications kept for calls not registered yet (a fast server
/// can report before the caller has registered its token).
const EARLY_PROGRESS: usize = 64;

/// Where progress notifications go, by progress token.
#[derive(Default)]
pub(crate) struct ProgressRoutes {
    routes: HashMap<ProgressToken, mpsc::UnboundedSender<ProgressNotificationParam>>,
    early: VecDeque<ProgressNotificationParam>,
}

impl ProgressRoutes {
    fn deliver(&mut self, params: ProgressNotificationParam) {
        match self.routes.get(&params.progress_token) {
            Some(route) => {
                let _ = route.send(params);
            }
            None => {
                if self.early.len() == EARLY_PROGRESS {
                    self.early.pop_front();
                }
                self.early.push_back(params);
            }
        }
    }
}

/// A transport that hands progress notifications to their call as they
/// are read. The SDK runs notification handlers as separate tasks, so a
/// handler could see the last progress after the call's response; reading
/// them here keeps them ahead of the response that follows them.
struct ProgressTap<T> {
    inner: T,
    progress: Arc<Mutex<ProgressRoutes>>,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for ProgressTap<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await?;
        if let JsonRpcMessage::Notification(notification) = &message
            && let ServerNotification::ProgressNotification(progress) = &notification.notification
        {
            self.progress
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .deliver(progress.params.clone());
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Removes a call's progress route when the call ends, however it ends.
pub(crate) struct ProgressRoute {
    routes: Weak<Mutex<ProgressRoutes>>,
    token: ProgressToken,
}

impl Drop for ProgressRoute {
    fn drop(&mut self) {
        if let Some(routes) = self.routes.upgrade() {
            let mut routes = routes.lock().unwrap_or_else(PoisonError::into_inner);
            routes.routes.remove(&self.token);
        }
    }
}

/// What the client does with what the server sends unprompted (progress is
/// taken from the transport by [`ProgressTap`]).
pub(crate) struct Handler {
    /// Told when the server says its tool list changed.
    tools_changed: mpsc::UnboundedSender<()>,
    /// Who answers the server's forms, when the host has someone.
    asking: Option<Asking>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.tools_changed.send(());
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let Some(asking) = &self.asking else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            // A page to open for the server: not this client's to do.
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let form = FormRequest {
            server: asking.server.clone(),
            message,
            schema: serde_json::to_value(&requested_schema).unwrap_or_default(),
        };
        Ok(match asking.elicitor.answer(form).await {
            FormAnswer::Accept(content) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(content.into())
            }
            FormAnswer::Decline => ElicitResult::new(ElicitationAction::Decline),
            FormAnswer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        })
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.asking.is_some() {
            capabilities.elicitation =
                Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        }
        ClientConfig::new(
            capabilities,
            Implementation::new("agentloop", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// A live session with one server.
pub(crate) struct Connection {
    pub(crate) service: RunningService<RoleClient, Handler>,
    progress: Arc<Mutex<ProgressRoutes>>,
    /// Cancellation notices for abandoned calls still being sent.
    pub(crate) cancel_notices: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl Connection {
    /// Starts (stdio) or opens (HTTP) a session and runs the MCP handshake.
    /// `tools_changed` hears the server's `tools/list_changed`; `stderr`
    /// collects the child's last stderr lines; `asking` answers the
    /// server's forms (none: elicitation is not offered).
    pub(crate) async fn open(
        config: &ServerConfig,
        tools_changed: mpsc::UnboundedSender<()>,
        stderr: Arc<Mutex<VecDeque<String>>>,
        asking: Option<Asking>,
    ) -> Result<Self, McpError> {
        let progress = Arc::new(Mutex::new(ProgressRoutes::default()));
        let handler = Handler {
            tools_changed,
            asking,
        };
        let service = match config {
            ServerConfig::Stdio(stdio) => {
                let transport = ProgressTap {
                    inner: spawn(stdio, stderr)?,
                    progress: progress.clone(),
                };
                handler
                    .serve(transport)
                    .await
                    .map_err(|e| McpError::Handshake {
                        message: e.to_string(),
                    })?
            }
            ServerConfig::Http(http) => {
                let transport = ProgressTap {
                    inner: http_transport(http)?,
                    progress: progress.clone(),
                };
                handler
                    .serve(transport)
                    .await
                    .map_err(|e| McpError::Handshake {
                        message: e.to_string(),
                    })?
            }
        };
        Ok(Self {
            service,
            progress,
            cancel_notices: Arc::default(),
        })
    }

    /// Routes progress for `token` to `sender` until the returned guard drops,
    /// delivering any that arrived before this call.
    pub(crate) fn route_progress(
        &self,
        token: ProgressToken,
        sender: mpsc::UnboundedSender<ProgressNotificationParam>,
    ) -> ProgressRoute {
        let mut routes = self.progress.lock().unwrap_or_else(PoisonError::into_inner);
        let early = std::mem::take(&mut routes.early);
        for params in early {
            if params.progress_token == token {
                let _ = sender.send(params);
            } else {
                routes.early.push_back(params);
            }
        }
        routes.routes.insert(token.clone(), sender);
        ProgressRoute {
            routes: Arc::downgrade(&self.progress),
            token,
        }
    }

    /// True once the transport is gone (the child exited, the session ended).
    pub(crate) fn is_closed(&self) -> bool {
        self.service.is_closed() || self.service.peer().is_transport_closed()
    }

    /// Ends the session; for a child process this kills it.
    pub(crate) fn close(&self) {
        self.service.cancellation_token().cancel();
    }
}

fn spawn(
    config: &StdioConfig,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
) -> Result<TokioChildProcess, McpError> {
    let mut command = tokio::process::Command::new(&config.command);
    command.args(&config.args).envs(&config.env);
    if let Some(cwd) = &config.cwd {
        command.current_dir(cwd);
    }
    let mut command = CommandWrap::from(command);
    // Killing the group also stops what a launcher (`npx`, a shell) started.
    #[cfg(unix)]
    command.wrap(ProcessGroup::leader());
    command.wrap(KillOnDrop);
    let (process, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| McpError::Spawn {
            command: config.command.clone(),
            source: e,
        })?;
    if let Some(stderr) = stderr {
        tokio::spawn(collect_stderr(stderr, stderr_tail));
    }
    Ok(process)
}

/// Keeps the child's last stderr lines; they explain a crash better than an
/// exit status does, and must not mix into our own output.
async fn collect_stderr(stderr: ChildStderr, tail: Arc<Mutex<VecDeque<String>>>) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
        if tail.len() == STDERR_LINES {
            tail.pop_front();
        }
        tail.push_back(line);
    }
}

fn http_transport(
    config: &HttpConfig,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, McpError> {
    // reqwest is built without a default TLS provider; the process-wide
    // default may already be set by another crate, which is fine.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut headers = HashMap::new();
    for (name, value) in &config.headers {
        let bad = |reason: String| McpError::Config {
            message: format!("header `{name}`: {reason}"),
        };
        let header_name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| bad(e.to_string()))?;
        let header_value =
            reqwest::header::HeaderValue::from_str(value).map_err(|e| bad(e.to_string()))?;
        headers.insert(header_name, header_value);
    }
    let client = reqwest::Client::builder()
        .build()
        .map_err(|e| McpError::Handshake {
            message: format!("cannot build the HTTP client: {e}"),
        })?;
    let transport_config =
        StreamableHttpClientTransportConfig::with_uri(config.url.as_str()).custom_headers(headers);
    Ok(StreamableHttpClientTransport::with_client(
        client,
        transport_config,
    ))
}
