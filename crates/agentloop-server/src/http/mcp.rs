//! The server's projects over MCP: `/mcp` (streamable HTTP) behind the
//! API's own authentication, offering the API's project, task and agent
//! run operations as tools. Each tool call runs the same use case as its
//! HTTP route ([`super::service`]), as the user the request
//! authenticated, answering the same shapes, so the same ownership rules
//! hold: another user's project, task or run is "not
//! found".

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
use serde_json::{Map, Value, json};

use agentloop_storage::model::AgentType;

use super::error::ApiError;
use super::extract::{AuthUser, check_id};
use super::requests::{INVALID_AGENT_TYPE, NewTask};
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

fn tool(
    name: &'static str,
    description: &'static str,
    properties: Value,
    required: &[&str],
) -> Tool {
    let schema = json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false
    });
    let Value::Object(schema) = schema else {
        return Tool::new(name, description, Map::new());
    };
    Tool::new(name, description, schema)
}

/// The tools (named in the OpenAPI document's `x-mcp`).
fn tools() -> Vec<Tool> {
    let id = json!({"type": "string"});
    vec![
        tool("list_projects", "The caller's projects", json!({}), &[]),
        tool(
            "list_tasks",
            "A project's tasks",
            json!({"project_id": id}),
            &["project_id"],
        ),
        tool(
            "create_task",
            "Create a task in a project",
            json!({"project_id": id, "title": {"type": "string"}, "description": {"type": "string"}}),
            &["project_id", "title"],
        ),
        tool(
            "start_agent_run",
            "Start an agent on a task; implementation and review then chain on the server until the task is done",
            json!({"task_id": id, "agent_type": {"enum": ["planification", "implementation", "review"]}}),
            &["task_id", "agent_type"],
        ),
        tool(
            "get_agent_run",
            "An agent run: its status, error, what it waits for",
            json!({"run_id": id}),
            &["run_id"],
        ),
    ]
}

fn string(arguments: &Map<String, Value>, key: &str) -> Result<String, ApiError> {
    arguments
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| ApiError::bad_request(format!("`{key}` is required, a string")))
}

impl ProjectsServer {
    async fn call(
        &self,
        user: User,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<Value, ApiError> {
        let state = &self.state;
        Ok(match name {
            "list_projects" => {
                let projects = service::list_projects(state, &user).await?;
                let projects: Vec<ProjectShape> = projects
                    .iter()
                    .map(|p| ProjectShape::of(state, p))
                    .collect();
                json!({ "projects": projects })
            }
            "list_tasks" => {
                let project = string(&arguments, "project_id")?;
                let tasks = service::list_tasks(state, &user, &project).await?;
                let tasks: Vec<TaskShape> = tasks.iter().map(TaskShape::from).collect();
                json!({ "tasks": tasks })
            }
            "create_task" => {
                let project = string(&arguments, "project_id")?;
                let description = match arguments.get("description") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(text)) => Some(text.clone()),
                    Some(_) => return Err(ApiError::bad_request("description must be a string")),
                };
                let task = NewTask {
                    title: Some(string(&arguments, "title")?),
                    description,
                };
                let ctx = service::create_task(state, &user, &project, task).await?;
                to_json(&TaskShape::from(&ctx.task))
            }
            "start_agent_run" => {
                let task = string(&arguments, "task_id")?;
                check_id(&task, "task")?;
                let agent = AgentType::parse(&string(&arguments, "agent_type")?)
                    .ok_or_else(|| ApiError::bad_request(INVALID_AGENT_TYPE))?;
                let ctx = service::owned_task(state, &user, &task).await?;
                let start = RunInput::Start {
                    agent: Some(agent.as_str().to_owned()),
                    message: None,
                    client_tools: Vec::new(),
                };
                let run = service::submit(state, &user, Target::Task(&ctx), start)
                    .await?
                    .into_run()?;
                to_json(&AgentRunShape::of(&run))
            }
            "get_agent_run" => {
                let run = string(&arguments, "run_id")?;
                let (run, _) = service::owned_run(state, &user, &run).await?;
                let details = service::run_details(state, &run).await?;
                to_json(&AgentRunView::of(
                    &run,
                    details.tokens,
                    details.pending.as_deref(),
                ))
            }
            other => return Err(ApiError::bad_request(format!("unknown tool `{other}`"))),
        })
    }
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
        let Some(user) = context
            .extensions
            .get::<Parts>()
            .and_then(|parts| parts.extensions.get::<User>())
            .cloned()
        else {
            return Err(ErrorData::invalid_request("not authenticated", None));
        };
        let arguments = request.arguments.unwrap_or_default();
        let result = match self.call(user, &request.name, arguments).await {
            Ok(value) => {
                let mut result =
                    CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
                result.structured_content = Some(value);
                result
            }
            Err(error) => {
                let message = error
                    .body
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("failed")
                    .to_owned();
                CallToolResult::error(vec![ContentBlock::text(format!(
                    "{message} (HTTP {})",
                    error.status.as_u16()
                ))])
            }
        };
        Ok(result.into())
    }
}
