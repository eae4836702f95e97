//! A2A (Agent2Agent, protocol 1.0, JSON-RPC binding): the server's agent
//! runs as A2A tasks. `GET /.well-known/agent-card.json` is the public
//! agent card; `POST /a2a` takes JSON-RPC requests from an authenticated
//! user (bearer token, or the session cookie with its CSRF token).
//!
//! An A2A task is one agent run (task id = agent run id); its context is
//! the agentloop task the run works on (context id = task id). A message
//! without `taskId` starts a run:
//! - with `contextId`, a new run of that task of the caller's (the
//!   message's text is added to the task's document first);
//! - otherwise a new task in the project `tenant` names (one of the
//!   caller's), its title the text's first line, its document the text.
//!
//! Either way the run's first message carries the text after the agent's
//! prompt, so the model reads the request without opening the document.
//!
//! The run's agent is `metadata.agentType` (of the message or the request;
//! `implementation` by default). A message with `taskId` answers the run's
//! input-required state: a data part `{"decisions": [...]}` (the HTTP
//! API's decisions body) or, when one call waits, text ("approve",
//! "reject: why", or a question's answer). Another user's run or task is
//! "task not found", as an unknown id is. See [`agentloop_a2a::mapping`]
//! for how a run's events and result read as A2A.

use agentloop_storage::ProjectRole;
use std::convert::Infallible;

use agentloop_a2a::mapping::{self, Reply, TaskIds};
use agentloop_a2a::rpc::{self, ErrorCode, Request, RequestId, RpcError, method};
use agentloop_a2a::v0_3;
use agentloop_a2a::wire::{
    self, AgentCapabilities, AgentCard, AgentInterface, AgentSkill, ListTasksRequest, Message,
    SendMessageRequest, SendMessageResponse, StreamResponse, Task, TaskIdRequest,
};
use agentloop_storage::model::{AgentRun, AgentRunStatus, AgentType};
use agentloop_types::{PendingCall, RunInput};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use super::a2a_task::{
    ended_updates, final_updates, ids_of, internal, stamp, task_from_result, task_of, working_task,
};
use super::error::ApiError;
use super::events::Follow;
use super::extract::{AuthUser, from_body};
use super::protocol_audit::{Caller, ClientAddress};
use super::requests::{Decisions, NewTask};
use super::service::{self, Submitted, Target, last_seq, owned_project, owned_run, owned_task};
use crate::runner::TaskContext;
use crate::state::AppState;
use crate::users::User;

/// The agent card's path and the JSON-RPC endpoint.
pub const RPC_PATH: &str = "/a2a";

/// The public agent card: what the server's agents do, where and how to
/// reach them (JSON-RPC at [`RPC_PATH`], bearer token).
pub(super) async fn card(headers: HeaderMap) -> Response {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("localhost");
    let scheme = match headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
    {
        Some("https") => "https",
        _ => "http",
    };
    let card = AgentCard {
        name: "agentloop".to_owned(),
        description: "Coding agents working on your agentloop projects. Each A2A task is one \
                      agent run; its context is the agentloop task it works on. Start one with a \
                      message whose tenant is the id of one of your projects (a new task) or \
                      whose contextId is one of your tasks."
            .to_owned(),
        // One endpoint, both protocol versions (their method names differ);
        // 1.0 first, as preferred.
        supported_interfaces: [wire::PROTOCOL_VERSION, v0_3::PROTOCOL_VERSION]
            .into_iter()
            .map(|version| AgentInterface {
                url: format!("{scheme}://{host}{RPC_PATH}"),
                protocol_binding: wire::JSONRPC_BINDING.to_owned(),
                tenant: String::new(),
                protocol_version: version.to_owned(),
            })
            .collect(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(false),
            extended_agent_card: Some(false),
        },
        security_schemes: Map::from_iter([(
            "bearer".to_owned(),
            json!({ "httpAuthSecurityScheme": { "scheme": "Bearer" } }),
        )]),
        security_requirements: vec![json!({ "schemes": { "bearer": { "list": [] } } })],
        default_input_modes: vec!["text/plain".to_owned(), "application/json".to_owned()],
        default_output_modes: vec!["text/plain".to_owned(), "application/json".to_owned()],
        skills: vec![AgentSkill {
            id: "task".to_owned(),
            name: "Work on a task".to_owned(),
            description: "Plans, implements or reviews a task in a project's folder, asking for \
                          approval or answers when it needs them."
                .to_owned(),
            tags: vec!["coding".to_owned(), "agent".to_owned()],
            examples: Vec::new(),
        }],
    };
    // Strictly 1.0: a 0.3 client finds its interface in
    // `supportedInterfaces`, as the SDKs that speak both read it.
    axum::Json(card).into_response()
}

/// `POST /a2a`: one JSON-RPC request (no batches). Authentication and the
/// body's size are checked as for the rest of the API (401 and 413 are
/// HTTP answers); everything after is a JSON-RPC answer.
pub(super) async fn rpc_endpoint(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Response {
    let body = match body {
        Ok(body) => body,
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the request body is too large",
            )
            .into_response();
        }
        Err(rejection) => {
            return ApiError::new(rejection.status(), rejection.body_text()).into_response();
        }
    };
    let request = match Request::parse(&body) {
        Ok(request) => request,
        Err((id, error)) => return answer_error(&id, &error, Dialect::V1),
    };
    let dialect = if v0_3::to_v1_method(&request.method).is_some() {
        Dialect::V0_3
    } else {
        Dialect::V1
    };
    if let Err(error) = check_version(&headers, dialect) {
        return answer_error(&request.id, &error, dialect);
    }
    let request = match dialect {
        Dialect::V1 => request,
        Dialect::V0_3 => match to_v1_request(request.clone()) {
            Ok(request) => request,
            Err(error) => return answer_error(&request.id, &error, dialect),
        },
    };
    let call = Call {
        state,
        user,
        caller: Caller::new("a2a", &request.method, address),
        id: request.id.clone(),
        dialect,
    };
    let outcome = match request.method.as_str() {
        method::SEND_MESSAGE => call.send(&request, false).await,
        method::SEND_STREAMING_MESSAGE => call.send(&request, true).await,
        method::GET_TASK => call.get(&request).await,
        method::CANCEL_TASK => call.cancel(&request).await,
        method::SUBSCRIBE_TO_TASK => call.subscribe(&request).await,
        method::LIST_TASKS => call.list(&request).await,
        method::GET_EXTENDED_AGENT_CARD => Err(RpcError::new(
            ErrorCode::ExtendedAgentCardNotConfigured,
            "this agent has no extended card",
        )),
        name if method::PUSH_CONFIG.contains(&name) => Err(RpcError::new(
            ErrorCode::PushNotificationNotSupported,
            "push notifications are not supported: register webhooks on the project instead",
        )),
        name => Err(RpcError::new(
            ErrorCode::MethodNotFound,
            format!("no method {name:?}"),
        )),
    };
    outcome.unwrap_or_else(|error| answer_error(&request.id, &error, dialect))
}

/// Which protocol version a request speaks: its method name tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    /// A2A 1.0 (`SendMessage`, ...).
    V1,
    /// A2A 0.3 (`message/send`, ...), answered in its shapes.
    V0_3,
}

/// One stream item's SSE data in the request's dialect.
fn stream_answer(id: &RequestId, item: &StreamResponse, dialect: Dialect) -> Value {
    match dialect {
        Dialect::V1 => rpc::result(id, item),
        Dialect::V0_3 => rpc::result(id, &v0_3::stream_item(item)),
    }
}

fn stream_error(id: &RequestId, error: &RpcError, dialect: Dialect) -> Value {
    match dialect {
        Dialect::V1 => rpc::error(id, error),
        Dialect::V0_3 => rpc::error(id, &v0_3::error(error)),
    }
}

/// A 0.3 request as the 1.0 request it stands for.
fn to_v1_request(request: Request) -> Result<Request, RpcError> {
    let Request { id, method, params } = request;
    let v1 = v0_3::to_v1_method(&method)
        .ok_or_else(|| RpcError::new(ErrorCode::MethodNotFound, format!("no method {method:?}")))?;
    let params = match method.as_str() {
        v0_3::method::SEND | v0_3::method::STREAM => {
            serde_json::to_value(v0_3::send_params(&method, params)?)
        }
        v0_3::method::GET | v0_3::method::CANCEL | v0_3::method::RESUBSCRIBE => {
            serde_json::to_value(v0_3::task_id_params(&method, params)?)
        }
        _ => Ok(params),
    }
    .map_err(internal)?;
    Ok(Request {
        id,
        method: v1.to_owned(),
        params,
    })
}

/// A missing `A2A-Version` is taken as the version the method names; a
/// version other than the method's is refused.
fn check_version(headers: &HeaderMap, dialect: Dialect) -> Result<(), RpcError> {
    let Some(version) = headers
        .get(wire::VERSION_HEADER)
        .map(|v| v.to_str().unwrap_or_default().trim())
    else {
        return Ok(());
    };
    let fits = match dialect {
        Dialect::V1 => version.split('.').next() == Some("1"),
        Dialect::V0_3 => v0_3::is_version(version),
    };
    if version.is_empty() || fits {
        Ok(())
    } else {
        Err(RpcError::new(
            ErrorCode::VersionNotSupported,
            format!(
                "A2A version {version:?} does not fit the method: this server speaks {} \
                 (SendMessage, ...) and {} (message/send, ...)",
                wire::PROTOCOL_VERSION,
                v0_3::PROTOCOL_VERSION
            ),
        ))
    }
}

fn answer_error(id: &RequestId, error: &RpcError, dialect: Dialect) -> Response {
    let error = match dialect {
        Dialect::V1 => error.clone(),
        Dialect::V0_3 => v0_3::error(error),
    };
    axum::Json(rpc::error(id, &error)).into_response()
}

/// An API error as a JSON-RPC one: `missing` for a 404, invalid params for
/// other refusals, internal otherwise.
fn rpc_error(err: ApiError, missing: ErrorCode) -> RpcError {
    let message = err
        .body
        .get("error")
        .and_then(Value::as_str)
        .unwrap_or("request failed")
        .to_owned();
    let code = match err.status {
        StatusCode::NOT_FOUND => missing,
        status if status.is_client_error() => ErrorCode::InvalidParams,
        _ => ErrorCode::InternalError,
    };
    RpcError::new(code, message)
}

/// One request of one user.
struct Call {
    state: AppState,
    user: User,
    caller: Caller,
    id: RequestId,
    dialect: Dialect,
}

impl Call {
    /// A task as `GetTask` / `CancelTask` answer it, in the request's
    /// dialect.
    fn task_answer(&self, task: Task) -> Response {
        let answer = match self.dialect {
            Dialect::V1 => rpc::result(&self.id, &task),
            Dialect::V0_3 => rpc::result(&self.id, &v0_3::task(&task)),
        };
        axum::Json(answer).into_response()
    }

    /// `SendMessage` / `SendStreamingMessage`.
    async fn send(&self, request: &Request, stream: bool) -> Result<Response, RpcError> {
        let params: SendMessageRequest = request.params()?;
        if params
            .configuration
            .as_ref()
            .is_some_and(|c| c.task_push_notification_config.is_some())
        {
            return Err(RpcError::new(
                ErrorCode::PushNotificationNotSupported,
                "push notifications are not supported: register webhooks on the project instead",
            ));
        }
        if params
            .message
            .parts
            .iter()
            .any(|p| p.raw.is_some() || p.url.is_some())
        {
            return Err(RpcError::new(
                ErrorCode::ContentTypeNotSupported,
                "only text and data parts are read; files are not",
            ));
        }
        let (run, ctx, after) = if params.message.task_id.is_empty() {
            let (run, ctx) = self.start(&params).await?;
            (run, ctx, None)
        } else {
            self.resume(&params.message).await?
        };
        let ids = TaskIds {
            task_id: run.id.clone(),
            context_id: ctx.task.id.clone(),
        };
        let first = StreamResponse::Task(working_task(&ids));
        if stream {
            return Ok(self.stream(ids, first, Follow::new(self.state.clone(), run.id, after)));
        }
        let immediately = params
            .configuration
            .as_ref()
            .is_some_and(|c| c.return_immediately);
        let task = if immediately {
            task_of(&self.state, &run, &ids).await?
        } else {
            let mut follow = Follow::new(self.state.clone(), run.id.clone(), after);
            let mut result = None;
            while let Some(event) = follow.next().await {
                if let Some(found) = event.root_result() {
                    result = Some(found.clone());
                    if !matches!(found.status, agentloop_types::LoopStatus::Suspended { .. }) {
                        break;
                    }
                }
            }
            match result {
                Some(result) => task_from_result(&ids, &result),
                None => {
                    let run = self
                        .state
                        .store
                        .get_agent_run(&run.id)
                        .await
                        .map_err(internal)?;
                    task_of(&self.state, &run, &ids).await?
                }
            }
        };
        let answer = match self.dialect {
            Dialect::V1 => rpc::result(&self.id, &SendMessageResponse::Task(task)),
            Dialect::V0_3 => rpc::result(&self.id, &v0_3::task(&task)),
        };
        Ok(axum::Json(answer).into_response())
    }

    /// Starts the run a message without `taskId` asks for.
    async fn start(
        &self,
        params: &SendMessageRequest,
    ) -> Result<(AgentRun, TaskContext), RpcError> {
        let message = &params.message;
        let text = message
            .text()
            .filter(|t| !t.trim().is_empty())
            .ok_or_else(|| RpcError::invalid_params("a new task needs a message with text"))?;
        let agent = agent_type(message, params)?;
        let ctx = if message.context_id.is_empty() {
            self.new_task(&params.tenant, &text).await?
        } else {
            let ctx = owned_task(
                &self.state,
                &self.user,
                &message.context_id,
                ProjectRole::Editor,
            )
            .await
            .map_err(|e| rpc_error(e, ErrorCode::InvalidParams))?;
            self.add_to_document(&ctx, &text).await?;
            ctx
        };
        let start = RunInput::Start {
            agent: Some(agent.as_str().to_owned()),
            message: Some(agentloop_types::Message::user_text(
                &message.message_id,
                text,
            )),
            client_tools: Vec::new(),
        };
        let run = self
            .caller
            .submit(&self.state, &self.user, Target::Task(&ctx), start)
            .await
            .and_then(Submitted::into_run)
            .map_err(|e| rpc_error(e, ErrorCode::InvalidParams))?;
        Ok((run, ctx))
    }

    /// A new task in the tenant's project, from the message's text.
    async fn new_task(&self, tenant: &str, text: &str) -> Result<TaskContext, RpcError> {
        if tenant.is_empty() {
            return Err(RpcError::invalid_params(
                "a message without contextId starts a new task: set tenant to the id of one of your projects",
            ));
        }
        let project = owned_project(&self.state, &self.user, tenant, ProjectRole::Editor)
            .await
            .map_err(|e| match e.status {
                StatusCode::FORBIDDEN => rpc_error(e, ErrorCode::InvalidParams),
                _ => RpcError::invalid_params("tenant names no project of yours"),
            })?;
        let title: String = text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("A2A task")
            .chars()
            .take(120)
            .collect();
        let task = NewTask {
            title: Some(title),
            description: Some(text.to_owned()),
        };
        self.caller
            .create_task(&self.state, &self.user, &project.id, task)
            .await
            .map_err(|e| rpc_error(e, ErrorCode::InvalidParams))
    }

    /// Adds a message's text to the task's document, so the new run reads it.
    async fn add_to_document(&self, ctx: &TaskContext, text: &str) -> Result<(), RpcError> {
        let current = service::read_document(ctx)
            .await
            .map(|(_, content)| content)
            .unwrap_or_default();
        let content = format!("{}\n\n{}\n", current.trim_end(), text.trim());
        service::write_document(ctx, &content)
            .await
            .map_err(|e| rpc_error(e, ErrorCode::InvalidParams))
    }

    /// Decides the calls a waiting run waits on from the client's reply;
    /// the run, its task and the seq its log stood at before.
    async fn resume(
        &self,
        message: &Message,
    ) -> Result<(AgentRun, TaskContext, Option<u64>), RpcError> {
        let (run, ctx) = self.owned(&message.task_id).await?;
        if run.status == AgentRunStatus::Running {
            return self.steer(message, run, ctx).await;
        }
        if run.status != AgentRunStatus::Waiting {
            return Err(RpcError::new(
                ErrorCode::UnsupportedOperation,
                format!(
                    "task {} is {}: it takes a message only while it works or input is required",
                    run.id,
                    run.status.as_str()
                ),
            ));
        }
        let pending: Vec<PendingCall> = service::pending(&self.state, &run)
            .await
            .map_err(|e| rpc_error(e, ErrorCode::InternalError))?
            .into_iter()
            .filter(|(_, decided)| decided.is_none())
            .map(|(call, _)| call)
            .collect();
        let decisions = match mapping::reply(message) {
            Some(Reply::Decisions(body)) => from_body::<Decisions>(Value::Object(body))
                .and_then(Decisions::parse)
                .map_err(|e| rpc_error(e, ErrorCode::InvalidParams))?,
            Some(Reply::Text(text)) => match pending.as_slice() {
                [call] => vec![(
                    call.call.id.clone(),
                    mapping::decision_from_text(&call.wait, &text)
                        .map_err(RpcError::invalid_params)?,
                )],
                _ => {
                    return Err(RpcError::invalid_params(format!(
                        "{} calls wait: reply with a data part {{\"decisions\": [...]}} deciding each of {}",
                        pending.len(),
                        pending
                            .iter()
                            .map(|c| c.call.id.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                }
            },
            None => {
                return Err(RpcError::invalid_params(
                    "the reply needs text or a data part with decisions",
                ));
            }
        };
        let after = last_seq(&self.state, &run.id)
            .await
            .map_err(|e| rpc_error(e, ErrorCode::InternalError))?;
        let decide = RunInput::Decide {
            decisions: decisions.into_iter().collect(),
        };
        let submitted = self
            .caller
            .submit(&self.state, &self.user, Target::Run(&run, &ctx), decide)
            .await
            .map_err(|e| rpc_error(e, ErrorCode::TaskNotFound))?;
        let resumed = matches!(submitted, Submitted::Decided { resumed: true, .. });
        if !resumed {
            return Err(RpcError::invalid_params(
                "the decisions were recorded, but the task waits on more calls: decide each of them",
            ));
        }
        Ok((run, ctx, after))
    }

    /// A message to a working task: handed to its run as the project's
    /// steering strategy says (by default kept and taken at the run's
    /// next step); the answer follows the run from here on.
    async fn steer(
        &self,
        message: &Message,
        run: AgentRun,
        ctx: TaskContext,
    ) -> Result<(AgentRun, TaskContext, Option<u64>), RpcError> {
        let text = message
            .text()
            .filter(|t| !t.trim().is_empty())
            .ok_or_else(|| RpcError::invalid_params("a message to a working task needs text"))?;
        let after = last_seq(&self.state, &run.id)
            .await
            .map_err(|e| rpc_error(e, ErrorCode::InternalError))?;
        let input = RunInput::message(agentloop_types::Message::user_text(
            &message.message_id,
            text,
        ));
        let submitted = self
            .caller
            .submit(&self.state, &self.user, Target::Run(&run, &ctx), input)
            .await
            .map_err(|e| rpc_error(e, ErrorCode::InvalidParams))?;
        match submitted {
            // Rolled back: the answer follows the run that took over.
            Submitted::Started(started) => Ok((started, ctx, None)),
            _ => Ok((run, ctx, after)),
        }
    }

    /// The caller's run with that id, or "task not found".
    async fn owned(&self, task_id: &str) -> Result<(AgentRun, TaskContext), RpcError> {
        owned_run(&self.state, &self.user, task_id, ProjectRole::Viewer)
            .await
            .map_err(|e| match e.status {
                StatusCode::NOT_FOUND | StatusCode::BAD_REQUEST => RpcError::task_not_found(),
                StatusCode::FORBIDDEN => rpc_error(e, ErrorCode::InvalidParams),
                _ => rpc_error(e, ErrorCode::InternalError),
            })
    }

    /// `ListTasks`.
    async fn list(&self, request: &Request) -> Result<Response, RpcError> {
        let params: ListTasksRequest = request.params()?;
        let page = super::a2a_list::list(&self.state, &self.user, &params).await?;
        Ok(axum::Json(rpc::result(&self.id, &page)).into_response())
    }

    /// `GetTask`.
    async fn get(&self, request: &Request) -> Result<Response, RpcError> {
        let params: TaskIdRequest = request.params()?;
        let (run, ctx) = self.owned(&params.id).await?;
        let task = task_of(&self.state, &run, &ids_of(&run, &ctx)).await?;
        Ok(self.task_answer(task))
    }

    /// `CancelTask`: the run stops (as `POST /api/agent-runs/{id}/cancel`).
    async fn cancel(&self, request: &Request) -> Result<Response, RpcError> {
        let params: TaskIdRequest = request.params()?;
        let (run, ctx) = self.owned(&params.id).await?;
        let run = self
            .caller
            .submit(
                &self.state,
                &self.user,
                Target::Run(&run, &ctx),
                RunInput::Cancel {},
            )
            .await
            .and_then(Submitted::into_run)
            .map_err(|e| match e.status {
                StatusCode::CONFLICT => RpcError::new(
                    ErrorCode::TaskNotCancelable,
                    format!("task {} has already ended", params.id),
                ),
                _ => rpc_error(e, ErrorCode::TaskNotFound),
            })?;
        let task = task_of(&self.state, &run, &ids_of(&run, &ctx)).await?;
        Ok(self.task_answer(task))
    }

    /// `SubscribeToTask`: the task, then its updates until it ends or
    /// waits.
    async fn subscribe(&self, request: &Request) -> Result<Response, RpcError> {
        let params: TaskIdRequest = request.params()?;
        let (run, ctx) = self.owned(&params.id).await?;
        let ids = ids_of(&run, &ctx);
        let task = task_of(&self.state, &run, &ids).await?;
        if task.status.state.is_terminal() {
            return Err(RpcError::new(
                ErrorCode::UnsupportedOperation,
                format!("task {} has ended: read it with GetTask", run.id),
            ));
        }
        let after = last_seq(&self.state, &run.id)
            .await
            .map_err(|e| rpc_error(e, ErrorCode::InternalError))?;
        let ends = task.status.state.ends_stream();
        let follow = Follow::new(self.state.clone(), run.id, after);
        let first = StreamResponse::Task(task);
        if ends {
            return Ok(self.sse(vec![first], None));
        }
        Ok(self.stream(ids, first, follow))
    }

    /// The SSE answer: `first`, then the run's progress, then its end.
    fn stream(&self, ids: TaskIds, first: StreamResponse, follow: Follow) -> Response {
        self.sse(vec![first], Some((ids, follow)))
    }

    fn sse(&self, ready: Vec<StreamResponse>, follow: Option<(TaskIds, Follow)>) -> Response {
        let id = self.id.clone();
        let dialect = self.dialect;
        let state = self.state.clone();
        let items = futures::stream::unfold(
            (ready, follow, state),
            move |(mut ready, mut follow, state)| {
                let id = id.clone();
                async move {
                    loop {
                        if !ready.is_empty() {
                            let item = ready.remove(0);
                            let event = Event::default()
                                .data(stream_answer(&id, &item, dialect).to_string());
                            return Some((Ok::<_, Infallible>(event), (ready, follow, state)));
                        }
                        let (ids, mut run) = follow.take()?;
                        match run.next().await {
                            Some(event) => {
                                if let Some(result) = event.root_result() {
                                    // The run ended or waits: the stream ends
                                    // with it.
                                    ready = final_updates(&ids, result);
                                    continue;
                                }
                                if let Some(update) = mapping::progress(&ids, &event) {
                                    ready.push(stamp(update));
                                }
                                follow = Some((ids, run));
                            }
                            None => {
                                ready = match ended_updates(&state, &ids).await {
                                    Ok(updates) => updates,
                                    Err(error) => {
                                        let event = Event::default()
                                            .event("error")
                                            .data(stream_error(&id, &error, dialect).to_string());
                                        return Some((Ok(event), (Vec::new(), None, state)));
                                    }
                                };
                            }
                        }
                    }
                }
            },
        );
        Sse::new(items)
            .keep_alive(KeepAlive::default())
            .into_response()
    }
}

/// The agent a new run is: `metadata.agentType` of the message, else of
/// the request, else `implementation`.
fn agent_type(message: &Message, params: &SendMessageRequest) -> Result<AgentType, RpcError> {
    let named = message
        .metadata
        .as_ref()
        .and_then(|m| m.get("agentType"))
        .or_else(|| params.metadata.as_ref().and_then(|m| m.get("agentType")));
    match named {
        None => Ok(AgentType::Implementation),
        Some(name) => name.as_str().and_then(AgentType::parse).ok_or_else(|| {
            RpcError::invalid_params(
                "metadata.agentType must be one of planification, implementation, review",
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn version(value: Option<&str>) -> Result<(), RpcError> {
        let mut headers = HeaderMap::new();
        if let Some(value) = value {
            headers.insert(wire::VERSION_HEADER, value.parse().unwrap());
        }
        check_version(&headers, Dialect::V1)
    }

    #[test]
    fn protocol_1_is_served_and_others_are_refused() {
        assert!(version(None).is_ok());
        assert!(version(Some("1.0")).is_ok());
        assert!(version(Some("1.2")).is_ok());
        let refused = version(Some("0.3")).unwrap_err();
        assert_eq!(refused.code, ErrorCode::VersionNotSupported.code());
        assert!(refused.message.contains("0.3"), "{}", refused.message);
    }

    #[test]
    fn protocol_0_3_methods_take_0_3_and_refuse_1() {
        let mut headers = HeaderMap::new();
        assert!(check_version(&headers, Dialect::V0_3).is_ok());
        headers.insert(wire::VERSION_HEADER, "0.3".parse().unwrap());
        assert!(check_version(&headers, Dialect::V0_3).is_ok());
        headers.insert(wire::VERSION_HEADER, "1.0".parse().unwrap());
        let refused = check_version(&headers, Dialect::V0_3).unwrap_err();
        assert_eq!(refused.code, ErrorCode::VersionNotSupported.code());
    }
}

/// What the document says of an A2A agent card (its other fields are
/// A2A's).
#[derive(schemars::JsonSchema)]
#[schemars(rename = "AgentCard")]
#[allow(dead_code)]
pub(super) struct AgentCardSchema {
    name: String,
    description: String,
    version: String,
    #[serde(rename = "supportedInterfaces")]
    supported_interfaces: Vec<Map<String, Value>>,
    capabilities: Map<String, Value>,
    skills: Vec<Map<String, Value>>,
}

/// A JSON-RPC 2.0 request, as the document describes `POST /a2a`'s body.
pub(super) struct JsonRpcRequest;

impl schemars::JsonSchema for JsonRpcRequest {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "JsonRpcRequest".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "properties": {
                "jsonrpc": {"const": "2.0"},
                "id": {"type": ["string", "integer", "null"]},
                "method": {"type": "string"},
                "params": {"type": "object"}
            },
            "required": ["jsonrpc", "method"]
        })
    }
}
