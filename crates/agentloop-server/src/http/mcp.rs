//! The server's projects over MCP: `/mcp` (streamable HTTP) behind the
//! API's own authentication, offering the API's project, task and agent
//! run operations as tools. Each tool call runs the same use case as its
//! HTTP route ([`super::service`]), as the user the request
//! authenticated, answering the same shapes, so the same ownership rules
//! hold: another user's project, task or run is "not
//! found". A call that acts (`create_task`, `start_agent_run`) is
//! recorded in the audit log as its REST route is.

use agentloop_storage::ProjectRole;
use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use axum::http::request::Parts;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use agentloop_storage::model::AgentType;

use super::error::ApiError;
use super::extract::{AuthUser, check_id};
use super::protocol_audit::{Caller, client_address};
use super::requests::{AgentName, NewTask};
use super::responses::{AgentRunView, ProjectShape, TaskShape};
use super::service::{self, Target};
use crate::shapes::{AgentRunShape, to_json};
use crate::state::AppState;
use crate::users::User;
use agentloop_types::RunInput;

/// The `/mcp` route.
pub fn router(state: AppState) -> Router<AppState> {
    let mut config = StreamableHttpServerConfig::default();
    config.legacy_session_mode = true;
    // Sessions end when the instance shuts down.
    let sessions = config.cancellation_token.clone();
    let shutdown = state.shutdown.clone();
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move {
            shutdown.cancelled().await;
            sessions.cancel();
        });
    }
    // Every request carries the user's token, so the loopback-only Host
    // check (against DNS rebinding) is not needed on a public server.
    let config = config.disable_allowed_hosts();
    let server = ProjectsServer {
        state: state.clone(),
    };
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn(
            agentloop_mcp::serve::session_end_answer,
        ))
        .layer(middleware::from_fn_with_state(state, authenticated))
}

/// Lets only authenticated requests through, the user attached.
async fn authenticated(
    user: Result<AuthUser, ApiError>,
    mut request: Request,
    next: Next,
) -> Response {
    match user {
        Ok(AuthUser(user)) => {
            request.extensions_mut().insert(user);
            next.run(request).await
        }
        Err(error) => error.into_response(),
    }
}

#[derive(Clone)]
struct ProjectsServer {
    state: AppState,
}

/// A call of one of the `/mcp` tools: its name and its arguments, each
/// tool's arguments a type of its own (the tool's input schema is that
/// type's, so what is offered and what is read cannot differ).
#[derive(Debug, Deserialize)]
#[serde(tag = "name", content = "arguments", rename_all = "snake_case")]
enum ToolCall {
    ListProjects(NoArguments),
    ListTasks(InProject),
    CreateTask(NewTaskArguments),
    StartAgentRun(StartArguments),
    GetAgentRun(OfRun),
}

/// No arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoArguments {}

/// A project of the caller's.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct InProject {
    /// The project's id.
    project_id: String,
}

/// A new task in a project of the caller's.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NewTaskArguments {
    /// The project's id.
    project_id: String,
    /// The task's title.
    title: String,
    /// The start of the task's document.
    #[serde(default)]
    description: Option<String>,
}

/// Which agent to start on a task of the caller's.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct StartArguments {
    /// The task's id.
    task_id: String,
    /// The agent to start.
    agent_type: AgentName,
}

/// An agent run of the caller's.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct OfRun {
    /// The agent run's id.
    run_id: String,
}

/// A tool whose input schema is `A`'s.
fn tool<A: JsonSchema>(name: &'static str, description: &'static str) -> Tool {
    let mut schema = match serde_json::to_value(schemars::schema_for!(A)) {
        Ok(Value::Object(schema)) => schema,
        _ => Map::new(),
    };
    schema.remove("$schema");
    schema.remove("title");
    schema.remove("description");
    Tool::new(name, description, schema)
}

/// The tools (named in the OpenAPI document's `x-mcp`).
fn tools() -> Vec<Tool> {
    vec![
        tool::<NoArguments>("list_projects", "The caller's projects"),
        tool::<InProject>("list_tasks", "A project's tasks"),
        tool::<NewTaskArguments>("create_task", "Create a task in a project"),
        tool::<StartArguments>(
            "start_agent_run",
            "Start an agent on a task; implementation and review then chain on the server until the task is done",
        ),
        tool::<OfRun>(
            "get_agent_run",
            "An agent run: its status, error, what it waits for",
        ),
    ]
}

impl ProjectsServer {
    /// Runs `call` for `user`; a call that acts is recorded in the audit
    /// log as `caller` made it.
    async fn call(&self, user: User, caller: Caller, call: ToolCall) -> Result<Value, ApiError> {
        let state = &self.state;
        Ok(match call {
            ToolCall::ListProjects(NoArguments {}) => {
                let projects = service::member_projects(state, &user).await?;
                let projects: Vec<ProjectShape> = projects
                    .iter()
                    .map(|(p, role)| ProjectShape::of(state, p, *role))
                    .collect();
                json!({ "projects": projects })
            }
            ToolCall::ListTasks(InProject { project_id }) => {
                let tasks = service::list_tasks(state, &user, &project_id).await?;
                let tasks: Vec<TaskShape> = tasks.iter().map(TaskShape::from).collect();
                json!({ "tasks": tasks })
            }
            ToolCall::CreateTask(NewTaskArguments {
                project_id,
                title,
                description,
            }) => {
                let task = NewTask {
                    title: Some(title),
                    description,
                };
                let ctx = caller.create_task(state, &user, &project_id, task).await?;
                to_json(&TaskShape::from(&ctx.task))
            }
            ToolCall::StartAgentRun(StartArguments {
                task_id,
                agent_type,
            }) => {
                check_id(&task_id, "task")?;
                let ctx = service::owned_task(state, &user, &task_id, ProjectRole::Editor).await?;
                let start = RunInput::Start {
                    agent: Some(AgentType::from(agent_type).as_str().to_owned()),
                    message: None,
                    client_tools: Vec::new(),
                };
                let run = caller
                    .submit(state, &user, Target::Task(&ctx), start)
                    .await?
                    .into_run()?;
                to_json(&AgentRunShape::of(&run))
            }
            ToolCall::GetAgentRun(OfRun { run_id }) => {
                let (run, _) =
                    service::owned_run(state, &user, &run_id, ProjectRole::Viewer).await?;
                let details = service::run_details(state, &run).await?;
                to_json(&AgentRunView::of(
                    &run,
                    details.tokens,
                    details.pending.as_deref(),
                ))
            }
        })
    }
}

/// The call `name` with `arguments`, or a 400 saying what is wrong with
/// them (an unknown tool, a missing or mistyped argument).
fn tool_call(name: &str, arguments: Map<String, Value>) -> Result<ToolCall, ApiError> {
    let call = json!({ "name": name, "arguments": arguments });
    serde_json::from_value(call).map_err(|e| {
        if tools().iter().any(|tool| tool.name == name) {
            ApiError::bad_request(format!("the arguments of `{name}` are not valid: {e}"))
        } else {
            ApiError::bad_request(format!("unknown tool `{name}`"))
        }
    })
}

impl ServerHandler for ProjectsServer {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "agentloop-server",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "The caller's projects, tasks and agent runs, as the HTTP API shows them.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // The middleware put the user on the HTTP request this call came in.
        let parts = context.extensions.get::<Parts>();
        let Some(user) = parts
            .and_then(|parts| parts.extensions.get::<User>())
            .cloned()
        else {
            return Err(ErrorData::invalid_request("not authenticated", None));
        };
        let address = parts.and_then(|parts| client_address(&self.state, parts));
        let caller = Caller::new("mcp", &request.name, address);
        let arguments = request.arguments.unwrap_or_default();
        let called = match tool_call(&request.name, arguments) {
            Ok(call) => self.call(user, caller, call).await,
            Err(error) => Err(error),
        };
        let result = match called {
            Ok(value) => {
                let mut result =
                    CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
                result.structured_content = Some(value);
                result
            }
            Err(error) => CallToolResult::error(vec![ContentBlock::text(format!(
                "{} (HTTP {})",
                error.message(),
                error.status.as_u16()
            ))]),
        };
        Ok(result.into())
    }
}
