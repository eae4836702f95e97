//! Executing one agent run on this instance, under its lease (kept by the
//! instance's [`heartbeat`](crate::heartbeat)), then finishing it: status,
//! workflow flag, notifications and the next link of the chain.
//!
//! Takeover policy: a run taken over (after a crash or an expired lease)
//! continues its chat from the last stored message through the runtime,
//! which first closes tool calls left without results with error results
//! saying the run was interrupted. A chat that already ends with a final
//! assistant message, or an event log that already holds the terminal
//! event, finishes the run without calling the model again. Events of every
//! attempt go to one log, with seqs continuing.

use agentloop_types::FinishedEvent;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agentloop_mcp::{McpConfig, McpServers, ServerConfig as McpServerConfig, ServerOptions};
use agentloop_storage::model::{AgentRunStatus, AgentType, EndReason, RunStatus, now_millis};
use agentloop_storage::{StorageError, StorageResult, Store};
use agentloop_tools::vfs::DirJail;
use agentloop_tools::{AskUserTool, FsTool};
use agentloop_types::{EventKind, LoopEvent, LoopResult, LoopStatus, Tool};
use serde_json::json;

use crate::ending::{Settled, agreeing, finish, settle};
use crate::executor::{AgentJob, Outcome};
use crate::metrics::{RunMetrics, StatusLabels};
use crate::runner::{
    TaskContext, load_task_context, next_agent, prepare, record_status, start_agent_run, ttl_ms,
};
use crate::sink::{Lease, StoreSink};
use crate::state::{AppState, LocalRun};
use crate::tool::CompleteWorkflowTool;

/// [`drive_run`] as a boxed future, to spawn from code that `drive_run`
/// itself reaches (chaining starts the next run).
pub fn drive_boxed(
    state: AppState,
    run_id: String,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    Box::pin(drive_run(state, run_id))
}

/// Executes an agent run here if it is not already executing here.
pub async fn drive_run(state: AppState, run_id: String) {
    let Some(local) = state.register_local(&run_id) else {
        return;
    };
    if let Err(e) = drive(&state, &run_id, &local).await {
        tracing::error!(agent_run_id = %run_id, error = %e, "agent run could not be executed");
    }
    state.unregister_local(&run_id);
}

async fn drive(state: &AppState, run_id: &str, local: &Arc<LocalRun>) -> StorageResult<()> {
    let store = &*state.store;
    let lease = Lease {
        store: state.store.clone(),
        run_id: run_id.to_owned(),
        owner: state.config.instance_id.clone(),
        ttl_ms: ttl_ms(state),
    };
    if lease.renew().await.is_err() {
        return Ok(());
    }
    let run = store.get_agent_run(run_id).await?;
    // The steps before and after the execution are boxed: their futures
    // would otherwise be inline in this one, which every executing run
    // holds for as long as it runs.
    let ctx = Box::pin(load_task_context(store, &run.task_id)).await?;
    let run = Box::pin(prepare(store, &state.config, &ctx, run)).await?;
    if run.status != AgentRunStatus::Running {
        // Ended while no instance executed it: its log gets the terminal
        // event it lacks.
        let result = Box::pin(log_stopped(state, &run))
            .await?
            .and_then(|r| serde_json::to_value(r).ok());
        Box::pin(close_record(store, run_id, run.status, result)).await?;
        store.release_lease(run_id, &lease.owner).await?;
        return Ok(());
    }
    // A run resumed after waiting may find its record still `suspended`
    // (a claim pass read it waiting just before it resumed): an executing
    // run's record must be claimable, or a crash now would strand it.
    let mut record = store.get_run(run_id).await?;
    if record.status != RunStatus::Running {
        record.status = RunStatus::Running;
        record.updated_at = now_millis();
        store.update_run(&record).await?;
    }
    let conversation_id = run.conversation_id.clone().unwrap_or_default();
    let chat_id = store
        .get_conversation(&conversation_id)
        .await?
        .chat_id
        .unwrap_or_default();
    let logged = Box::pin(scan_log(store, run_id)).await?;
    let decisions = store
        .list_agent_run_decisions(run_id)
        .await?
        .into_iter()
        .map(|d| (d.call_id, d.decision))
        .collect();
    let workflow_called = Arc::new(AtomicBool::new(false));
    let sink = Arc::new(StoreSink {
        lease: lease.clone(),
        local: local.clone(),
        metrics: RunMetrics::new(
            state.metrics.clone(),
            state.config.api.as_str(),
            crate::runner::run_model(&state.config, &ctx),
        ),
        settled: Default::default(),
    });
    let outcome = match logged.1 {
        Some(result) => Outcome::Finished(result),
        None => match Box::pin(project_mcp(state, &ctx)).await {
            Err(message) => Outcome::Failed(message),
            Ok(mcp) => {
                state.notify(
                    &ctx.owner,
                    json!({ "type": "streaming-started", "taskId": ctx.task.id,
                            "agentRunId": run_id, "conversationId": conversation_id }),
                );
                let stop = state.shutdown.child_token();
                let watched = state.watch_lease(run_id, local.cancel.clone(), stop.clone());
                let mut tools = tools(state, &ctx, run.agent_type, workflow_called.clone())?;
                if let Some(mcp) = &mcp {
                    tools.extend(mcp.tools());
                }
                let job = AgentJob {
                    run_id: run_id.to_owned(),
                    chat_id: chat_id.clone(),
                    store: state.store.clone(),
                    provider: state.config.provider.clone(),
                    tools,
                    owner: lease.owner.clone(),
                    lease_ms: lease.ttl_ms,
                    first_seq: logged.0.map_or(0, |s| s + 1),
                    cancel: local.cancel.clone(),
                    stop,
                    sink: sink.clone(),
                    decisions,
                };
                let outcome = state.executor.execute(job).await;
                drop(watched);
                if let Some(mcp) = mcp {
                    Box::pin(mcp.shutdown()).await;
                }
                outcome
            }
        },
    };
    let ended = match outcome {
        Outcome::Stopped | Outcome::Busy => {
            if state.shutdown.is_cancelled() || outcome == Outcome::Busy {
                store.release_lease(run_id, &lease.owner).await?;
            }
            return Ok(());
        }
        Outcome::Waiting(pending) => {
            return Box::pin(wait(
                state,
                &ctx,
                &run,
                &lease,
                &conversation_id,
                &pending,
                false,
                None,
            ))
            .await;
        }
        Outcome::Finished(result) if matches!(result.status, LoopStatus::Suspended { .. }) => {
            let LoopStatus::Suspended { pending, .. } = &result.status else {
                return Ok(());
            };
            let value = serde_json::to_value(&*result).ok();
            return Box::pin(wait(
                state,
                &ctx,
                &run,
                &lease,
                &conversation_id,
                pending,
                true,
                value,
            ))
            .await;
        }
        Outcome::Finished(result) => match sink.take_settled() {
            // The terminal event went through the sink, which ended the run.
            Some(settled) => Ended::from(settled),
            None => {
                if lease.renew().await.is_err() {
                    return Ok(());
                }
                Ended::from(Box::pin(settle(store, run_id, *result)).await?)
            }
        },
        Outcome::AlreadyAnswered => {
            if lease.renew().await.is_err() {
                return Ok(());
            }
            Ended::from(Box::pin(log_answered(state, run_id, &chat_id)).await?)
        }
        Outcome::Failed(error) => {
            if lease.renew().await.is_err() {
                return Ok(());
            }
            let reason = EndReason::new("executor", error.clone());
            let (status, _, ended_here) =
                finish(store, run_id, AgentRunStatus::Failed, Some(reason)).await?;
            Ended {
                status,
                ended_here,
                result: Some(json!({ "error": error })),
            }
        }
    };
    let Ended {
        status,
        ended_here,
        result,
    } = ended;
    Box::pin(close_record(store, run_id, status, result)).await?;
    store.release_lease(run_id, &lease.owner).await?;
    if ended_here {
        state
            .metrics
            .runs_finished
            .get_or_create(&StatusLabels {
                status: status.as_str(),
            })
            .inc();
    }
    if status == AgentRunStatus::Completed && workflow_called.load(Ordering::SeqCst) {
        store
            .set_workflow_complete(&ctx.task.id, true, now_millis())
            .await?;
    }
    state.notify(
        &ctx.owner,
        json!({ "type": "streaming-ended", "taskId": ctx.task.id,
                "agentRunId": run_id, "conversationId": conversation_id }),
    );
    state.notify_run_status(&ctx.owner, &run, status);
    if ended_here && status == AgentRunStatus::Completed {
        Box::pin(chain(state, &ctx, run.agent_type)).await?;
    }
    Ok(())
}

/// What the record of an ended run is written from.
struct Ended {
    status: AgentRunStatus,
    ended_here: bool,
    result: Option<serde_json::Value>,
}

impl From<Settled> for Ended {
    fn from(settled: Settled) -> Self {
        Self {
            status: settled.status,
            ended_here: settled.ended_here,
            result: serde_json::to_value(&settled.result).ok(),
        }
    }
}

/// Ends an execution whose run waits for a person: the run is switched to
/// `waiting` (see [`crate::waiting`]), its lease released, its owner told.
#[allow(clippy::too_many_arguments)]
async fn wait(
    state: &AppState,
    ctx: &TaskContext,
    run: &agentloop_storage::model::AgentRun,
    lease: &Lease,
    conversation_id: &str,
    pending: &[agentloop_types::PendingCall],
    fresh: bool,
    result: Option<serde_json::Value>,
) -> StorageResult<()> {
    if lease.renew().await.is_err() {
        return Ok(());
    }
    let status = crate::waiting::start_waiting(state, ctx, run, pending, fresh, result).await?;
    state.store.release_lease(&run.id, &lease.owner).await?;
    state.notify(
        &ctx.owner,
        json!({ "type": "streaming-ended", "taskId": ctx.task.id,
                "agentRunId": run.id, "conversationId": conversation_id }),
    );
    if status != AgentRunStatus::Waiting {
        state.notify_run_status(&ctx.owner, run, status);
    }
    Ok(())
}

/// Starts the next agent of the chain unless the workflow is complete.
async fn chain(state: &AppState, ctx: &TaskContext, agent: AgentType) -> StorageResult<()> {
    let Some(next) = next_agent(agent) else {
        return Ok(());
    };
    if state.shutdown.is_cancelled() {
        return Ok(());
    }
    let task = state.store.get_task(&ctx.task.id).await?;
    if task.workflow_complete {
        return Ok(());
    }
    let ctx = TaskContext {
        task,
        ..ctx.clone()
    };
    match start_agent_run(state, &ctx, next).await {
        Ok(_) | Err(crate::runner::StartError::Conflict(_)) => Ok(()),
        Err(crate::runner::StartError::Storage(e)) => Err(e),
    }
}

/// Sets the run record's final status and result.
async fn close_record(
    store: &dyn Store,
    run_id: &str,
    status: AgentRunStatus,
    result: Option<serde_json::Value>,
) -> StorageResult<()> {
    let mut record = store.get_run(run_id).await?;
    record.status = record_status(status);
    if result.is_some() {
        record.result = result;
    }
    record.updated_at = now_millis();
    store.update_run(&record).await
}

/// Ends a run whose chat already holds its final answer (the previous
/// attempt stored it but stopped before logging the end): the run is
/// settled and the terminal event, with the chat's messages, appended.
async fn log_answered(state: &AppState, run_id: &str, chat_id: &str) -> StorageResult<Settled> {
    let store = &*state.store;
    let result = LoopResult {
        status: LoopStatus::Complete {
            return_value: None,
            output: None,
        },
        messages: chat_messages(store, chat_id).await?,
        tokens: store.get_chat(chat_id).await?.totals,
        stop: None,
    };
    let settled = settle(store, run_id, result).await?;
    log_terminal(state, run_id, &settled.result).await?;
    Ok(settled)
}

/// The messages of a chat, in order.
async fn chat_messages(
    store: &dyn Store,
    chat_id: &str,
) -> StorageResult<agentloop_types::History> {
    Ok(store
        .list_messages(chat_id)
        .await?
        .into_iter()
        .map(|m| m.message)
        .collect())
}

/// Appends `result` as the run's terminal event unless its log holds one.
async fn log_terminal(state: &AppState, run_id: &str, result: &LoopResult) -> StorageResult<()> {
    let store = &*state.store;
    let (last, logged) = scan_log(store, run_id).await?;
    if logged.is_none() {
        let event = LoopEvent {
            seq: last.map_or(0, |s| s + 1),
            path: Default::default(),
            kind: EventKind::Finished(FinishedEvent {
                result: result.clone(),
            }),
        };
        store
            .append_events(run_id, std::slice::from_ref(&event))
            .await?;
        if let Some(local) = state.local_run(run_id) {
            local.send(event);
        }
    }
    Ok(())
}

/// Logs the end of a run that ended while no instance executed it: a
/// person ended it (cancelled, or its task marked done) after the instance
/// that executed it crashed, or that instance ended it and stopped before
/// logging the end. Unless its log holds a terminal event, one is built
/// from its chat, agreeing with how the run ended. Returns the result
/// logged (none for a failed run, whose error is not known here).
pub(crate) async fn log_stopped(
    state: &AppState,
    run: &agentloop_storage::model::AgentRun,
) -> StorageResult<Option<LoopResult>> {
    let store = &*state.store;
    if let (_, Some(logged)) = scan_log(store, &run.id).await? {
        return Ok(Some(*logged));
    }
    if !matches!(
        run.status,
        AgentRunStatus::Completed | AgentRunStatus::Cancelled
    ) {
        return Ok(None);
    }
    let Some(chat_id) = crate::waiting::run_chat(state, run).await? else {
        return Ok(None);
    };
    let status = if run.status == AgentRunStatus::Completed {
        LoopStatus::Complete {
            return_value: None,
            output: None,
        }
    } else {
        LoopStatus::Cancelled
    };
    let result = agreeing(
        LoopResult {
            status,
            messages: chat_messages(store, &chat_id).await?,
            tokens: store.get_chat(&chat_id).await?.totals,
            stop: None,
        },
        run.status,
        run.end_reason.as_ref(),
    );
    log_terminal(state, &run.id, &result).await?;
    Ok(Some(result))
}

/// The highest stored event seq and, if the log already holds it, the
/// run's final result (a suspended result is not final: the run goes on
/// after its decisions, and its log with it).
pub(crate) async fn scan_log(
    store: &dyn Store,
    run_id: &str,
) -> StorageResult<(Option<u64>, Option<Box<LoopResult>>)> {
    const PAGE: u32 = 1000;
    let mut after = None;
    let mut result = None;
    loop {
        let events = store.list_events(run_id, after, PAGE).await?;
        for event in &events {
            if let EventKind::Finished(FinishedEvent { result: r }) = &event.kind {
                if event.path.is_root() {
                    result = (!matches!(r.status, LoopStatus::Suspended { .. }))
                        .then(|| Box::new(r.clone()));
                }
            }
        }
        let len = events.len();
        if let Some(last) = events.last() {
            after = Some(last.seq);
        }
        if len < PAGE as usize {
            return Ok((after, result));
        }
    }
}

/// The tools an agent run is offered (the project's MCP servers' aside),
/// under the project's approval policy.
pub(crate) fn tools(
    state: &AppState,
    ctx: &TaskContext,
    agent: AgentType,
    workflow_called: Arc<AtomicBool>,
) -> StorageResult<Vec<Arc<dyn Tool>>> {
    let jail = DirJail::new(&ctx.repo)
        .map_err(|e| StorageError::Invalid(format!("project folder: {e}")))?;
    // `ask_user` suspends the run as `waiting` with a question, answered
    // through the run's decisions like an approval.
    let mut tools: Vec<Arc<dyn Tool>> =
        vec![Arc::new(FsTool::new(Arc::new(jail))), Arc::new(AskUserTool)];
    if agent != AgentType::Planification {
        tools.push(Arc::new(CompleteWorkflowTool::new(workflow_called)));
    }
    tools.extend(state.config.extra_tools.iter().cloned());
    let (mode, _) = crate::policy::effective(&state.config, &ctx.project);
    Ok(crate::policy::apply(mode, tools))
}

/// Starts the MCP servers the project names (`settings.mcp_servers`, the
/// `mcpServers` map it was created with), stdio ones inside the project
/// folder. They live for the run.
async fn project_mcp(state: &AppState, ctx: &TaskContext) -> Result<Option<McpServers>, String> {
    let Some(servers) = ctx.project.settings.get("mcp_servers") else {
        return Ok(None);
    };
    if !state.config.allow_project_mcp {
        return Err(
            "the project names MCP servers, but this server does not run them \
             (start it with --allow-project-mcp)"
                .to_owned(),
        );
    }
    let mut config = McpConfig::from_json(&json!({ "mcpServers": servers }).to_string())
        .map_err(|e| format!("the project's MCP servers: {e}"))?;
    for server in config.servers.values_mut() {
        if let McpServerConfig::Stdio(stdio) = server {
            stdio.cwd = Some(ctx.repo.clone());
        }
    }
    McpServers::start(&config, ServerOptions::default())
        .await
        .map(Some)
        .map_err(|e| format!("the project's MCP servers could not start: {e}"))
}
