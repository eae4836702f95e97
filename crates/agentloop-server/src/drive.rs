//! Executing one agent run on this instance, under its lease, then
//! finishing it: status, workflow flag, notifications and the next link of
//! the chain.
//!
//! Takeover policy: a run taken over (after a crash or an expired lease)
//! continues from its last stored message. Tool calls left without results
//! get error results saying the run was interrupted; a history that already
//! ends with a final assistant message, or an event log that already holds
//! the terminal event, finishes the run without calling the model again.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agentloop_storage::model::{AgentRun, AgentRunStatus, AgentType, now_millis};
use agentloop_storage::{StorageError, StorageResult, Store};
use agentloop_tools::FsTool;
use agentloop_tools::vfs::DirJail;
use agentloop_types::{
    CancellationToken, EventKind, LoopOptions, LoopResult, LoopStatus, Message, Role, Tool,
    history::close_dangling_calls,
};
use serde_json::json;

use crate::executor::{AgentJob, Outcome};
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
        eprintln!("agentloop-server: agent run {run_id}: {e}");
    }
    state.unregister_local(&run_id);
}

/// What a stored history says about a run.
enum Resume {
    /// Run the loop over these messages.
    Continue(Vec<Message>),
    /// The run already ended with this result.
    Ended(Box<LoopResult>),
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
    let ctx = load_task_context(store, &run.task_id).await?;
    let run = prepare(store, &state.config.prompts, &ctx, run).await?;
    if run.status != AgentRunStatus::Running {
        close_record(store, run_id, run.status, None).await?;
        store.release_lease(run_id, &lease.owner).await?;
        return Ok(());
    }
    let conversation_id = run.conversation_id.clone().unwrap_or_default();
    let chat_id = store
        .get_conversation(&conversation_id)
        .await?
        .chat_id
        .unwrap_or_default();
    let (last_seq, logged_result) = scan_log(store, run_id).await?;
    let resume = match logged_result {
        Some(result) => Resume::Ended(result),
        None => load_history(state, &ctx, &run, &chat_id).await?,
    };
    let workflow_called = Arc::new(AtomicBool::new(false));
    let outcome = match resume {
        Resume::Ended(result) => Outcome::Finished(result),
        Resume::Continue(history) => {
            state.notify(
                &ctx.owner,
                json!({ "type": "streaming-started", "taskId": ctx.task.id,
                        "agentRunId": run_id, "conversationId": conversation_id }),
            );
            let stop = state.shutdown.child_token();
            let done = CancellationToken::new();
            tokio::spawn(heartbeat(
                state.clone(),
                lease.clone(),
                local.cancel.clone(),
                stop.clone(),
                done.clone(),
            ));
            let job = AgentJob {
                run_id: run_id.to_owned(),
                attempt_id: format!("{run_id}-{}", crate::ids::new_id()),
                history,
                options: loop_options(state, &ctx, &chat_id),
                provider: state.config.provider.clone(),
                tools: tools(state, &ctx, run.agent_type, workflow_called.clone())?,
                first_seq: last_seq.map_or(0, |s| s + 1),
                cancel: local.cancel.clone(),
                stop,
                sink: Arc::new(StoreSink {
                    lease: lease.clone(),
                    chat_id: chat_id.clone(),
                    events: local.events.clone(),
                }),
            };
            let outcome = state.executor.execute(job).await;
            done.cancel();
            outcome
        }
    };
    let result = match outcome {
        Outcome::Stopped => {
            if state.shutdown.is_cancelled() {
                store.release_lease(run_id, &lease.owner).await?;
            }
            return Ok(());
        }
        Outcome::Finished(result) => result,
    };
    if lease.renew().await.is_err() {
        return Ok(());
    }
    let wanted = match &result.status {
        LoopStatus::Complete { .. } => AgentRunStatus::Completed,
        LoopStatus::Cancelled => AgentRunStatus::Cancelled,
        _ => AgentRunStatus::Failed,
    };
    let current = store.get_agent_run(run_id).await?;
    let status = if current.status == AgentRunStatus::Running {
        store
            .set_agent_run_status(run_id, wanted, Some(now_millis()))
            .await?;
        wanted
    } else {
        current.status
    };
    close_record(store, run_id, status, serde_json::to_value(&*result).ok()).await?;
    store.release_lease(run_id, &lease.owner).await?;
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
    state.notify(
        &ctx.owner,
        json!({ "type": "agent-run-status", "taskId": ctx.task.id, "agentRunId": run_id,
                "agentType": run.agent_type, "status": status }),
    );
    if status == AgentRunStatus::Completed {
        chain(state, &ctx, run.agent_type).await?;
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

/// The highest stored event seq and, if the log already holds it, the
/// run's result.
async fn scan_log(
    store: &dyn Store,
    run_id: &str,
) -> StorageResult<(Option<u64>, Option<Box<LoopResult>>)> {
    const PAGE: u32 = 1000;
    let mut after = None;
    let mut result = None;
    loop {
        let events = store.list_events(run_id, after, PAGE).await?;
        for event in &events {
            if let EventKind::Finished { result: r } = &event.kind {
                if event.path.is_root() {
                    result = Some(Box::new(r.clone()));
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

/// The stored history of a run, repaired for continuing.
async fn load_history(
    state: &AppState,
    ctx: &TaskContext,
    run: &AgentRun,
    chat_id: &str,
) -> StorageResult<Resume> {
    let run_id = run.id.as_str();
    let store = &*state.store;
    let stored: Vec<Message> = store
        .list_messages(chat_id)
        .await?
        .into_iter()
        .map(|m| m.message)
        .collect();
    if stored.is_empty() {
        let first = crate::runner::first_message(&state.config.prompts, ctx, run);
        store.save_message(chat_id, &first).await?;
        return Ok(Resume::Continue(vec![first]));
    }
    if let Some(last) = stored.last() {
        if last.role == Role::Assistant && last.tool_uses().next().is_none() {
            return Ok(Resume::Ended(Box::new(LoopResult {
                status: LoopStatus::Complete { return_value: None },
                messages: stored,
                tokens: Default::default(),
            })));
        }
    }
    let known: std::collections::HashSet<String> = stored.iter().map(|m| m.id.clone()).collect();
    let mut n = 0;
    let repaired = close_dangling_calls(stored, "the run was interrupted", || {
        n += 1;
        format!("{run_id}-recovered-{}-{n}", crate::ids::new_id())
    });
    for message in &repaired {
        if !known.contains(&message.id) {
            store.save_message(chat_id, message).await?;
        }
    }
    Ok(Resume::Continue(repaired))
}

fn loop_options(state: &AppState, ctx: &TaskContext, chat_id: &str) -> LoopOptions {
    let model = ctx
        .project
        .settings
        .get("model")
        .and_then(|v| v.as_str())
        .unwrap_or(&state.config.model)
        .to_owned();
    LoopOptions {
        model,
        api: state.config.api,
        project_id: ctx.project.id.clone(),
        chat_id: Some(chat_id.to_owned()),
        max_tokens: state.config.max_tokens,
        max_iterations: state.config.max_iterations,
        system_prompt: Some(format!(
            "You are an agent working on task {} of project {}. The fs tool works in the \
project folder; the task document is {}.",
            ctx.task.id,
            ctx.project.name,
            crate::config::task_doc_path(&ctx.task.id)
        )),
        ..LoopOptions::default()
    }
}

fn tools(
    state: &AppState,
    ctx: &TaskContext,
    agent: AgentType,
    workflow_called: Arc<AtomicBool>,
) -> StorageResult<Vec<Arc<dyn Tool>>> {
    let jail = DirJail::new(&ctx.repo)
        .map_err(|e| StorageError::Invalid(format!("project folder: {e}")))?;
    let mut tools: Vec<Arc<dyn Tool>> = vec![Arc::new(FsTool::new(Arc::new(jail)))];
    if agent != AgentType::Planification {
        tools.push(Arc::new(CompleteWorkflowTool::new(workflow_called)));
    }
    tools.extend(state.config.extra_tools.iter().cloned());
    Ok(tools)
}

/// Renews the lease and watches the run's status until `done`: a lost
/// lease stops the execution; a run no longer `running` in the store
/// (cancelled or force-completed, possibly by another instance) is
/// cancelled.
async fn heartbeat(
    state: AppState,
    lease: Lease,
    cancel: CancellationToken,
    stop: CancellationToken,
    done: CancellationToken,
) {
    loop {
        tokio::select! {
            () = done.cancelled() => return,
            () = tokio::time::sleep(state.config.heartbeat) => {}
        }
        if lease.renew().await.is_err() {
            stop.cancel();
            return;
        }
        match state.store.get_agent_run(&lease.run_id).await {
            Ok(run) if run.status != AgentRunStatus::Running => cancel.cancel(),
            Ok(_) | Err(StorageError::Database(_)) => {}
            Err(_) => cancel.cancel(),
        }
    }
}
