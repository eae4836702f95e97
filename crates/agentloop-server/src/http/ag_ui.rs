//! `POST /api/tasks/{id}/ag-ui`: a task's agent runs for an AG-UI client.
//!
//! The body is AG-UI's `RunAgentInput`; the answer is the run's events as
//! AG-UI events over SSE (see [`agentloop_agui`]). Without `resume`
//! entries it starts an agent run of the task (`forwardedProps.agentType`,
//! `implementation` by default) as `POST …/agent-runs` does; the text of
//! the thread's last user message is the request, put in the run's first
//! message after the agent's prompt. With `resume`
//! entries it decides the calls the task's waiting run waits on (as `POST
//! /api/agent-runs/{id}/decisions` does) and follows the run from there.
//! Either way the AG-UI run ends when the agent run ends or waits for a
//! person again (`RUN_FINISHED` with outcome `interrupt`).

use agentloop_storage::ProjectRole;
use std::convert::Infallible;

use agentloop_agui::{AgUiEvent, Encoder, FrontendToolSpec, RunAgentInput};
use agentloop_storage::model::{AgentRun, AgentType};
use agentloop_types::{Decision, Message, RunInput};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use serde_json::json;

use super::error::ApiError;
use super::events::Follow;
use super::extract::{ApiJson, AuthUser};
use super::requests::AgUiInput;
use super::service::{self, Submitted, Target};
use crate::ids::new_id;
use crate::runner::TaskContext;
use crate::state::AppState;
use crate::users::User;

pub(super) async fn run(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(task_id): Path<String>,
    ApiJson(AgUiInput(input)): ApiJson<AgUiInput>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let resumed = input
        .resume
        .iter()
        .map(|entry| Ok((entry.interrupt_id.clone(), entry.decision()?)))
        .collect::<Result<Vec<(String, Decision)>, agentloop_agui::ResumeError>>()
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let ctx = service::owned_task(&state, &user, &task_id, ProjectRole::Editor).await?;
    let waiting = service::waiting_run(&state, &ctx).await?;
    let answers = match &waiting {
        Some(waiting) => frontend_answers(&state, waiting, &input).await?,
        None => Vec::new(),
    };
    let (run, after, frontend) = match waiting {
        Some(waiting) if !resumed.is_empty() || !answers.is_empty() => {
            let decisions = resumed.into_iter().chain(answers).collect();
            let after = resume(&state, &user, &ctx, &waiting, decisions).await?;
            let frontend = service::offered_frontend_tools(&state, &waiting).await?;
            (waiting, after, frontend)
        }
        _ if !resumed.is_empty() => {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "no agent run of this task waits for a decision",
            ));
        }
        _ => match service::running_run(&state, &ctx).await? {
            // A user message while the task's agent works steers it (as
            // the project's strategy says); the stream follows the run
            // that takes it from here on.
            Some(running) if input.last_user_text().is_some() => {
                let (run, after) = steer(&state, &user, &ctx, running, &input).await?;
                let frontend = service::offered_frontend_tools(&state, &run).await?;
                (run, after, frontend)
            }
            _ => (
                start(&state, &user, &ctx, &input).await?,
                None,
                input.tools.clone(),
            ),
        },
    };
    let encoder = Encoder::new(input.thread_id, input.run_id)
        .with_frontend_tools(frontend.into_iter().map(|tool| tool.name))
        .with_state(input.state);
    let mut opening = encoder.start();
    opening.push(AgUiEvent::Custom {
        name: "agentloop.agent_run".to_owned(),
        value: json!({ "agentRunId": run.id, "taskId": ctx.task.id }),
    });
    let follow = Follow::new(state, run.id, after);
    let stream = futures::stream::unfold(
        (follow, encoder, opening, false),
        |(mut follow, mut encoder, mut ready, mut ended)| async move {
            loop {
                if !ready.is_empty() {
                    let event = ready.remove(0);
                    ended |= matches!(
                        event,
                        AgUiEvent::RunFinished { .. } | AgUiEvent::RunError { .. }
                    );
                    return Some((Ok(to_sse(&event)), (follow, encoder, ready, ended)));
                }
                if ended {
                    return None;
                }
                ready = match follow.next().await {
                    Some(event) => encoder.encode(&event),
                    None => encoder.end(),
                };
            }
        },
    );
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// Hands the input's last user message to the task's `running` run;
/// returns the run that takes it (a new one, after a rollback) and the
/// seq its stream follows from.
async fn steer(
    state: &AppState,
    user: &User,
    ctx: &TaskContext,
    running: AgentRun,
    input: &RunAgentInput,
) -> Result<(AgentRun, Option<u64>), ApiError> {
    let after = service::last_seq(state, &running.id).await?;
    let message = input
        .last_user_text()
        .map(|text| Message::user_text(new_id(), text))
        .ok_or_else(|| ApiError::bad_request("a message to a working agent needs text"))?;
    match service::submit(
        state,
        user,
        Target::Run(&running, ctx),
        RunInput::message(message),
    )
    .await?
    {
        Submitted::Started(started) => Ok((started, None)),
        other => Ok((other.into_run()?, after)),
    }
}

/// Starts the agent run the input asks for, offering the input's tools.
async fn start(
    state: &AppState,
    user: &User,
    ctx: &TaskContext,
    input: &RunAgentInput,
) -> Result<AgentRun, ApiError> {
    let agent = match input
        .forwarded_props
        .as_ref()
        .and_then(|props| props.get("agentType"))
    {
        None => None,
        Some(name) => Some(
            name.as_str()
                .filter(|name| AgentType::parse(name).is_some())
                .ok_or_else(|| {
                    ApiError::bad_request(
                        "forwardedProps.agentType must be one of planification, implementation, review",
                    )
                })?
                .to_owned(),
        ),
    };
    let start = RunInput::Start {
        agent,
        message: input
            .last_user_text()
            .map(|text| Message::user_text(new_id(), text)),
        client_tools: input
            .tools
            .iter()
            .map(FrontendToolSpec::definition)
            .collect(),
    };
    service::submit(state, user, Target::Task(ctx), start)
        .await?
        .into_run()
}

/// The input's `tool` messages that answer calls of front-end tools the
/// run waits on and has no decision for yet. The client sends its whole
/// conversation each time, so answers to calls decided before are left
/// out.
async fn frontend_answers(
    state: &AppState,
    run: &AgentRun,
    input: &RunAgentInput,
) -> Result<Vec<(String, Decision)>, ApiError> {
    let frontend = service::offered_frontend_tools(state, run).await?;
    if frontend.is_empty() {
        return Ok(Vec::new());
    }
    let open: Vec<String> = service::pending(state, run)
        .await?
        .into_iter()
        .filter(|(call, decided)| {
            decided.is_none() && frontend.iter().any(|tool| tool.name == call.call.name)
        })
        .map(|(call, _)| call.call.id)
        .collect();
    Ok(input
        .tool_answers()
        .into_iter()
        .filter(|(call_id, _)| open.contains(call_id))
        .collect())
}

/// Decides the waiting run's calls (the input's resume entries and the
/// client's answers to its tools' calls); the seq its log stood at, to
/// follow it from there.
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
             interrupts and each call of the application's tools",
        ));
    }
    Ok(after)
}

fn to_sse(event: &AgUiEvent) -> Event {
    Event::default().data(serde_json::to_string(event).unwrap_or_else(|_| "{}".to_owned()))
}
