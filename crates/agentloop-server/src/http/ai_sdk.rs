//! `POST /api/tasks/{id}/ai-sdk`: a task's agent runs for an AI SDK chat
//! client (the `ai` package's `useChat` and chat transports), and `GET
//! /api/tasks/{id}/ai-sdk/{chatId}/stream`, where such a client re-attaches
//! to the stream of a run still going.
//!
//! The body is what the SDK's HTTP chat transport posts (its
//! `ChatRequest`); the answer is the run's events as a UI message stream
//! (see [`agentloop_aisdk`]), one assistant message per agent run (its id
//! the agent run's). While an agent run of the task waits for the person,
//! the approval responses and tool outputs in the tool parts of the last
//! (assistant) message decide the calls it waits on (submitted as a
//! `RunInput::Decide`) and the stream follows the run from there.
//! Otherwise it starts an agent run of the task (`agentType`,
//! `implementation` by default), as `POST …/agent-runs` does, the text of
//! the person's last message being its request. Either way the message
//! finishes when the agent run ends or waits for the person again. The
//! audit log records either: `run.start` with the run started, or
//! `run.decide` on the run decided.
//!
//! The resume route follows the SDK's convention (`{api}/{chatId}/stream`,
//! a 204 when nothing is streaming): the task is the chat, so the chat id
//! is checked but not read. It replays the running agent run's message
//! from its start.

use agentloop_storage::ProjectRole;
use std::convert::Infallible;

use agentloop_aisdk::{ChatRequest, DONE, Encoder, STREAM_HEADER, UiChunk};
use agentloop_storage::model::{AgentRun, AgentRunStatus, AgentType};
use agentloop_types::{Decision, Message, RunInput};
use axum::extract::{Path, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use serde_json::json;

use super::audit::AuditAction;
use super::error::ApiError;
use super::events::Follow;
use super::extract::{ApiJson, AuthUser, check_id};
use super::requests::RequestBody;
use super::service::{self, Submitted, Target};
use crate::ids::new_id;
use crate::runner::TaskContext;
use crate::state::AppState;
use crate::users::User;

/// `POST /api/tasks/{taskId}/ai-sdk`: the AI SDK chat transport's body
/// (other fields are ignored).
#[derive(Debug, Clone)]
pub struct AiSdkChat(pub ChatRequest);

impl<'de> Deserialize<'de> for AiSdkChat {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        ChatRequest::deserialize(deserializer).map(Self)
    }
}

impl RequestBody for AiSdkChat {
    fn refused(problem: String) -> ApiError {
        ApiError::bad_request(format!("not an AI SDK chat request: {problem}"))
    }
}

impl JsonSchema for AiSdkChat {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "AiSdkChatRequest".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "description": "The body the `ai` package's chat transport posts, with the application's `agentType`.",
            "properties": {
                "id": { "type": ["string", "null"], "description": "The client's chat id (not read: the task is the chat)" },
                "messages": {
                    "type": "array",
                    "description": "The conversation, oldest first (`UIMessage`s). While an agent run of the task waits, the tool parts of the last (`assistant`) message answer the calls it waits on (`approval-responded`, `output-available`, `output-error`); otherwise a new agent run starts, the text of the last `user` message being its request.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": { "type": "string" },
                            "role": { "enum": ["system", "user", "assistant"] },
                            "parts": { "type": "array", "items": { "type": "object" } }
                        },
                        "required": ["id", "role"]
                    }
                },
                "trigger": { "enum": ["submit-message", "regenerate-message", null] },
                "messageId": { "type": ["string", "null"] },
                "agentType": {
                    "enum": ["planification", "implementation", "review", null],
                    "description": "The agent a new run starts (null or absent: implementation)"
                }
            },
            "required": ["messages"]
        })
    }
}

/// `POST /api/tasks/{taskId}/ai-sdk`.
pub(super) async fn chat(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(task_id): Path<String>,
    ApiJson(AiSdkChat(request)): ApiJson<AiSdkChat>,
) -> Result<Response, ApiError> {
    let agent = agent_of(&request)?;
    let ctx = service::owned_task(&state, &user, &task_id, ProjectRole::Editor).await?;
    let responses = request.tool_responses();
    let (run, after, denied, decided) = match service::waiting_run(&state, &ctx).await? {
        Some(waiting) => {
            let (decisions, denied) = decisions(&state, &waiting, &request).await?;
            let after = resume(&state, &user, &ctx, &waiting, decisions).await?;
            (waiting, after, denied, true)
        }
        None if !responses.is_empty() => {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "no agent run of this task waits for a decision",
            ));
        }
        None => {
            let start = RunInput::Start {
                agent,
                message: request
                    .user_text()
                    .map(|text| Message::user_text(new_id(), text)),
                client_tools: Vec::new(),
            };
            let run = service::submit(&state, &user, Target::Task(&ctx), start)
                .await?
                .into_run()?;
            (run, None, Vec::new(), false)
        }
    };
    let encoder = encoder(&run, &ctx).with_denied(denied);
    let audited = decided.then(|| AuditAction {
        action: "run.decide",
        target: run.id.clone(),
    });
    let mut response = respond(state, run, after, encoder);
    if let Some(audited) = audited {
        response.extensions_mut().insert(audited);
    }
    Ok(response)
}

/// `GET /api/tasks/{taskId}/ai-sdk/{chatId}/stream`: the running agent
/// run's message, replayed from its start and followed live; a 204 when
/// no agent run of the task is running.
pub(super) async fn reattach(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path((task_id, chat_id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    check_id(&chat_id, "chat")?;
    let ctx = service::owned_task(&state, &user, &task_id, ProjectRole::Viewer).await?;
    let running = service::list_runs(&state, &ctx)
        .await?
        .into_iter()
        .rev()
        .find(|run| run.status == AgentRunStatus::Running);
    let Some(run) = running else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    // Suspensions logged so far were resumed from: the run runs.
    let through = service::last_seq(&state, &run.id).await?;
    let encoder = encoder(&run, &ctx).replaying_through(through);
    Ok(respond(state, run, None, encoder))
}

/// The agent the request names, if it names one.
fn agent_of(request: &ChatRequest) -> Result<Option<String>, ApiError> {
    match &request.agent_type {
        None => Ok(None),
        Some(name) if AgentType::parse(name).is_some() => Ok(Some(name.clone())),
        Some(_) => Err(ApiError::bad_request(
            "agentType must be one of planification, implementation, review",
        )),
    }
}

/// The decisions the request's tool parts make on the calls the run
/// waits on and has no decision for yet (the client sends its whole
/// message each time, so answers given before are left out), and the
/// calls among them the person refused.
async fn decisions(
    state: &AppState,
    run: &AgentRun,
    request: &ChatRequest,
) -> Result<(Vec<(String, Decision)>, Vec<String>), ApiError> {
    let open: Vec<_> = service::pending(state, run)
        .await?
        .into_iter()
        .filter(|(_, decided)| decided.is_none())
        .map(|(call, _)| call)
        .collect();
    let mut decisions = Vec::new();
    let mut denied = Vec::new();
    for response in request.tool_responses() {
        let Some(call) = open
            .iter()
            .find(|call| call.call.id == response.tool_call_id)
        else {
            continue;
        };
        let decision = response
            .decision(&call.wait)
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        if response.refuses() {
            denied.push(response.tool_call_id.clone());
        }
        decisions.push((response.tool_call_id, decision));
    }
    if decisions.is_empty() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "the task's agent run waits for a decision: answer its tool approval requests \
             (and its questions, with the tool's output) in the assistant message",
        ));
    }
    Ok((decisions, denied))
}

/// Decides the waiting run's calls; the seq its log stood at, to follow
/// it from there.
async fn resume(
    state: &AppState,
    user: &User,
    ctx: &TaskContext,
    waiting: &AgentRun,
    decisions: Vec<(String, Decision)>,
) -> Result<Option<u64>, ApiError> {
    // Read before deciding: once decided, the run appends again.
    let after = service::last_seq(state, &waiting.id).await?;
    let decide = RunInput::Decide {
        decisions: decisions.into_iter().collect(),
    };
    let submitted = service::submit(state, user, Target::Run(waiting, ctx), decide).await?;
    if !matches!(submitted, Submitted::Decided { resumed: true, .. }) {
        return Err(ApiError::bad_request(
            "the decisions were recorded, but the run waits on more calls: answer each of its \
             approval requests and questions",
        ));
    }
    Ok(after)
}

/// The encoder of the run's message: its id is the agent run's, its
/// metadata names the agent run and the task.
fn encoder(run: &AgentRun, ctx: &TaskContext) -> Encoder {
    Encoder::new(run.id.clone())
        .with_metadata(json!({ "agentRunId": run.id, "taskId": ctx.task.id }))
}

/// The run's events after `after` as a UI message stream response.
fn respond(state: AppState, run: AgentRun, after: Option<u64>, encoder: Encoder) -> Response {
    let opening = encoder.start();
    let follow = Follow::new(state, run.id, after);
    let stream = futures::stream::unfold(
        (follow, encoder, opening, false),
        |(mut follow, mut encoder, mut ready, mut done)| async move {
            loop {
                if !ready.is_empty() {
                    let chunk: UiChunk = ready.remove(0);
                    let event: Result<Event, Infallible> = Ok(data(chunk.to_data()));
                    return Some((event, (follow, encoder, ready, done)));
                }
                if done {
                    return None;
                }
                if encoder.ended() {
                    done = true;
                    return Some((Ok(data(DONE.to_owned())), (follow, encoder, ready, done)));
                }
                ready = match follow.next().await {
                    Some(event) => encoder.encode(&event),
                    None => encoder.end(),
                };
            }
        },
    );
    let sse: Sse<_> = Sse::new(stream).keep_alive(KeepAlive::default());
    (
        [
            (
                HeaderName::from_static(STREAM_HEADER.0),
                HeaderValue::from_static(STREAM_HEADER.1),
            ),
            (
                HeaderName::from_static("x-accel-buffering"),
                HeaderValue::from_static("no"),
            ),
        ],
        sse,
    )
        .into_response()
}

fn data(text: String) -> Event {
    Event::default().data(text)
}
