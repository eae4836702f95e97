//! One way in: every host of the API (REST, MCP, A2A, AG-UI) turns what
//! its client asked into an [`agentloop_types::RunInput`] and submits it
//! here, to a task or one of its agent runs. What each input means for an
//! agent run is decided in this one place:
//!
//! - `start`: a new agent run of the task (the agent named, else
//!   `implementation`), its first message carrying the message's text, its
//!   client tools offered beside the server's;
//! - `decide`: the decisions go to the run (a task: its waiting run); the
//!   run resumes once every call it waits on is decided;
//! - `message`: a task whose agents are idle starts its default agent with
//!   the message; a message to an agent still going (or waiting for a
//!   person) is handled as its `strategy` says, else as its project's
//!   `steer_strategy` setting (see [`crate::steer`]): `enqueue` (the
//!   default) keeps it for the run, which takes it at its next step
//!   boundary; `interrupt` keeps it and stops the step in flight, so the
//!   run goes on with it at once; `rollback` cancels the run and starts its
//!   agent again with the message as its request; `reject` refuses it
//!   (409);
//! - `cancel`: the run (a task: its active run) is cancelled;
//! - `stop`: Mark Done of the run's task.

use agentloop_agui::{FrontendToolSpec, validate_frontend_tools};
use agentloop_storage::ProjectRole;
use agentloop_storage::model::{AgentRun, AgentType};
use agentloop_types::{Message, RunInput, SteerStrategy, ToolDefinition};
use axum::http::StatusCode;

use super::owned::require;
use super::runs::{cancel_run, decide, start_run, waiting_run};
use super::tasks::mark_task_done;
use crate::http::error::ApiError;
use crate::run_tools::reserved_tool_names;
use crate::runner::{StartInput, TaskContext};
use crate::state::AppState;
use crate::users::User;

/// What an input is submitted to.
#[derive(Clone, Copy)]
pub enum Target<'a> {
    /// A task: a start begins its next run; other inputs go to its active
    /// run.
    Task(&'a TaskContext),
    /// One agent run of a task.
    Run(&'a AgentRun, &'a TaskContext),
}

impl<'a> Target<'a> {
    fn ctx(self) -> &'a TaskContext {
        match self {
            Target::Task(ctx) | Target::Run(_, ctx) => ctx,
        }
    }
}

/// What a submitted input did.
#[derive(Debug)]
pub enum Submitted {
    /// A new agent run started.
    Started(AgentRun),
    /// Decisions were recorded on the run; `resumed` once it waits on no
    /// more calls and goes on.
    Decided {
        /// The run decided on.
        run: AgentRun,
        /// Whether it resumed.
        resumed: bool,
    },
    /// The run was cancelled (as it stands now).
    Cancelled(AgentRun),
    /// A message was kept for the run going on, which takes it at its
    /// next step boundary; `interrupted` when the step it had in flight
    /// was stopped for it.
    Queued {
        /// The run the message is for.
        run: AgentRun,
        /// Whether the run's step in flight was interrupted.
        interrupted: bool,
    },
    /// The task was marked done.
    Stopped,
}

impl Submitted {
    /// The run the input started, decided on or cancelled; a 500 for Mark
    /// Done, which names no run (a host asks for a run only after an input
    /// that yields one).
    pub fn into_run(self) -> Result<AgentRun, ApiError> {
        match self {
            Submitted::Started(run)
            | Submitted::Decided { run, .. }
            | Submitted::Queued { run, .. }
            | Submitted::Cancelled(run) => Ok(run),
            Submitted::Stopped => Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Mark Done names no agent run",
            )),
        }
    }
}

/// Submits `input` from `user` to `target`; see the module docs.
pub async fn submit(
    state: &AppState,
    user: &User,
    target: Target<'_>,
    input: RunInput,
) -> Result<Submitted, ApiError> {
    let ctx = target.ctx();
    // Every input acts on the task's runs: an editor's at least.
    require(ctx, ProjectRole::Editor)?;
    match input {
        RunInput::Start {
            agent,
            message,
            client_tools,
        } => {
            if let Target::Run(..) = target {
                return Err(ApiError::bad_request(
                    "a start is submitted to a task, not to one of its runs",
                ));
            }
            let agent = match agent {
                None => AgentType::Implementation,
                Some(name) => AgentType::parse(&name).ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "unknown agent {name:?}: one of planification, implementation, review"
                    ))
                })?,
            };
            start(state, ctx, agent, message.as_ref(), &client_tools, None).await
        }
        RunInput::Message { message, strategy } => {
            let Some(active) = state.store.active_agent_run(&ctx.task.id).await? else {
                let agent = AgentType::Implementation;
                return start(state, ctx, agent, Some(&message), &[], None).await;
            };
            steer(state, user, ctx, active, message, strategy).await
        }
        RunInput::Decide { decisions } => {
            let run = match target {
                Target::Run(run, _) => run.clone(),
                Target::Task(ctx) => waiting_run(state, ctx).await?.ok_or_else(|| {
                    ApiError::new(
                        StatusCode::CONFLICT,
                        "no agent run of this task waits for a decision",
                    )
                })?,
            };
            let resumed = decide(state, ctx, &run, decisions.into_iter().collect()).await?;
            Ok(Submitted::Decided { run, resumed })
        }
        RunInput::Cancel {} => {
            let run = match target {
                Target::Run(run, _) => run.clone(),
                Target::Task(ctx) => state
                    .store
                    .active_agent_run(&ctx.task.id)
                    .await?
                    .ok_or_else(|| {
                        ApiError::new(
                            StatusCode::CONFLICT,
                            "no agent run of this task is going or waiting",
                        )
                    })?,
            };
            cancel_run(state, user, ctx, &run)
                .await
                .map(Submitted::Cancelled)
        }
        RunInput::Stop {} => {
            mark_task_done(state, ctx, true).await?;
            Ok(Submitted::Stopped)
        }
    }
}

/// Hands `message` to the task's `active` run as `strategy` (else the
/// project's) says; see the module docs.
async fn steer(
    state: &AppState,
    user: &User,
    ctx: &TaskContext,
    active: AgentRun,
    message: Message,
    strategy: Option<SteerStrategy>,
) -> Result<Submitted, ApiError> {
    let strategy = strategy.unwrap_or_else(|| crate::steer::project_strategy(&ctx.project));
    if strategy == SteerStrategy::Reject {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!(
                "agent run {} of this task is still {} and messages to it are rejected \
                 (strategy `reject`): send it once the run ends, cancel the run first, or \
                 send it with strategy `enqueue`, `interrupt` or `rollback`",
                active.id,
                active.status.as_str()
            ),
        ));
    }
    if !crate::steer::is_persons(&message) {
        return Err(ApiError::bad_request(
            "a message to a run is a person's message: role `user`, with no tool calls or \
             results",
        ));
    }
    match strategy {
        SteerStrategy::Rollback => {
            cancel_run(state, user, ctx, &active).await?;
            start(state, ctx, active.agent_type, Some(&message), &[], None).await
        }
        SteerStrategy::Interrupt => {
            // Kept as an interrupt only where the run's step can be
            // stopped; elsewhere it waits for the next step like any
            // message, and is shown so.
            let kept = if crate::steer::executes_here(state, &active) {
                SteerStrategy::Interrupt
            } else {
                SteerStrategy::Enqueue
            };
            crate::steer::enqueue(state, &active, &message, kept).await?;
            let interrupted = crate::steer::interrupt(state, &active);
            Ok(Submitted::Queued {
                run: active,
                interrupted,
            })
        }
        SteerStrategy::Enqueue | SteerStrategy::Reject => {
            crate::steer::enqueue(state, &active, &message, SteerStrategy::Enqueue).await?;
            Ok(Submitted::Queued {
                run: active,
                interrupted: false,
            })
        }
    }
}

/// Starts `agent` on the task with the message's text as its request,
/// offering the client's tools.
async fn start(
    state: &AppState,
    ctx: &TaskContext,
    agent: AgentType,
    message: Option<&Message>,
    client_tools: &[ToolDefinition],
    schedule: Option<&str>,
) -> Result<Submitted, ApiError> {
    let frontend_tools: Vec<FrontendToolSpec> = client_tools
        .iter()
        .map(FrontendToolSpec::of_definition)
        .collect();
    let reserved = reserved_tool_names(state);
    let reserved: Vec<&str> = reserved.iter().map(String::as_str).collect();
    validate_frontend_tools(&frontend_tools, &reserved)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let request = message
        .map(Message::text)
        .filter(|text| !text.trim().is_empty());
    let input = StartInput {
        frontend_tools: &frontend_tools,
        request: request.as_deref(),
        schedule,
    };
    start_run(state, ctx, agent, input)
        .await
        .map(Submitted::Started)
}

/// Starts `agent` on the task for a tick of schedule `schedule_id`, with
/// `message` as its request: a start as [`submit`] makes it, whose run
/// (and the runs chained after it) spends against the schedule's budgets.
pub async fn start_scheduled(
    state: &AppState,
    ctx: &TaskContext,
    agent: AgentType,
    message: Option<&Message>,
    schedule_id: &str,
) -> Result<AgentRun, ApiError> {
    match start(state, ctx, agent, message, &[], Some(schedule_id)).await? {
        Submitted::Started(run) => Ok(run),
        _ => Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the start started no agent run",
        )),
    }
}
