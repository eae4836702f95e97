//! Executing one agent run on this instance, under its lease (kept by the
//! instance's [`heartbeat`](crate::heartbeat)), then finishing it: status,
//! workflow flag, notifications and the next link of the chain. Also the
//! lifecycle's entry points that set a run executing: [`start_agent_run`]
//! and [`decide`] (the last decision resumes a waiting run).
//!
//! `drive` reads as its steps: take the lease, load the run and its
//! task, close a run that ended while nothing executed it, gather what
//! earlier attempts left (chat, log, decisions), run the loop (MCP servers,
//! tools, the executor), map its outcome to how the run ends, and close it
//! (record, lease, metric, workflow flag, notifications, chaining).
//!
//! Takeover policy: a run taken over (after a crash or an expired lease)
//! continues its chat from the last stored message through the runtime,
//! which first closes tool calls left without results with error results
//! saying the run was interrupted. A chat that already ends with a final
//! assistant message, or an event log that already holds the terminal
//! event, finishes the run without calling the model again. Events of every
//! attempt go to one log, with seqs continuing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agentloop_storage::model::{
    AgentRun, AgentRunStatus, AgentType, EndReason, RunStatus, now_millis,
};
use agentloop_storage::{StorageResult, Store};
use agentloop_types::{Decision, Decisions, LoopResult, LoopStatus, PendingCall, Tool};
use serde_json::json;

use crate::ending::{Settled, finish, settle};
use crate::executor::{AgentJob, Outcome};
use crate::metrics::{RunMetrics, StatusLabels};
use crate::run_log::{close_record, log_answered, log_stopped, scan_log};
use crate::run_tools::{project_mcp, tools};
use crate::runner::{
    StartError, TaskContext, create_agent_run, load_task_context, next_agent, prepare, run_model,
};
use crate::sink::{Lease, StoreSink};
use crate::state::{AppState, LocalRun};
use crate::waiting::{self, DecideError};

/// Creates an agent run (the database refuses a second running one per
/// task), prepares it, and starts executing it in the background.
pub async fn start_agent_run(
    state: &AppState,
    ctx: &TaskContext,
    agent: AgentType,
) -> Result<AgentRun, StartError> {
    let run = create_agent_run(state, ctx, agent).await?;
    execute(state, &run.id).await;
    Ok(run)
}

/// Records `decisions` for a waiting run (see [`waiting::decide`]) and,
/// when they were the last it waited for, executes it again. Returns
/// whether it resumed.
pub async fn decide(
    state: &AppState,
    ctx: &TaskContext,
    run: &AgentRun,
    decisions: Vec<(String, Decision)>,
) -> Result<bool, DecideError> {
    let resumed = waiting::decide(state, ctx, run, decisions).await?;
    if resumed {
        execute(state, &run.id).await;
    }
    Ok(resumed)
}

/// Takes the lease of a run for this instance and executes it in the
/// background; a run whose lease another instance holds is left to it.
async fn execute(state: &AppState, run_id: &str) {
    if Lease::of(state, run_id).renew().await.is_ok() {
        tokio::spawn(drive_boxed(state.clone(), run_id.to_owned()));
    }
}

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

// The steps before and after the execution are boxed: their futures would
// otherwise be inline in this one, which every executing run holds for as
// long as it runs.
async fn drive(state: &AppState, run_id: &str, local: &Arc<LocalRun>) -> StorageResult<()> {
    let lease = Lease::of(state, run_id);
    if lease.renew().await.is_err() {
        return Ok(());
    }
    let (run, ctx) = Box::pin(load_run(state, run_id)).await?;
    if run.status != AgentRunStatus::Running {
        return Box::pin(close_ended_elsewhere(state, &run, &lease)).await;
    }
    Box::pin(mark_record_running(&*state.store, run_id)).await?;
    let (execution, earlier) = Box::pin(gather(state, local, lease, run, ctx)).await?;
    let workflow_called = Arc::new(AtomicBool::new(false));
    let sink = execution.sink();
    let outcome = execution.run_loop(earlier, &sink, &workflow_called).await?;
    let Some(ended) = Box::pin(execution.ending(outcome, &sink)).await? else {
        return Ok(());
    };
    Box::pin(execution.close(ended, &workflow_called)).await
}

/// The agent run and its task, the run prepared (conversation, chat, first
/// message, record) if it was not yet.
async fn load_run(state: &AppState, run_id: &str) -> StorageResult<(AgentRun, TaskContext)> {
    let store = &*state.store;
    let run = store.get_agent_run(run_id).await?;
    let ctx = Box::pin(load_task_context(store, &run.task_id)).await?;
    let run = Box::pin(prepare(store, &state.config, &ctx, run)).await?;
    Ok((run, ctx))
}

/// Closes a run that ended while no instance executed it: its log gets the
/// terminal event it lacks, its record the final status.
async fn close_ended_elsewhere(
    state: &AppState,
    run: &AgentRun,
    lease: &Lease,
) -> StorageResult<()> {
    let result = Box::pin(log_stopped(state, run))
        .await?
        .and_then(|r| serde_json::to_value(r).ok());
    Box::pin(close_record(&*state.store, &run.id, run.status, result)).await?;
    state.store.release_lease(&run.id, &lease.owner).await?;
    Ok(())
}

/// A run resumed after waiting may find its record still `suspended` (a
/// claim pass read it waiting just before it resumed): an executing run's
/// record must be claimable, or a crash now would strand it.
async fn mark_record_running(store: &dyn Store, run_id: &str) -> StorageResult<()> {
    let mut record = store.get_run(run_id).await?;
    if record.status != RunStatus::Running {
        record.status = RunStatus::Running;
        record.updated_at = now_millis();
        store.update_run(&record).await?;
    }
    Ok(())
}

/// What earlier attempts of the run left: where its log stands and the
/// decisions people recorded.
struct Earlier {
    /// The seq of the next event.
    first_seq: u64,
    /// The run's final result, if its log already holds it.
    logged: Option<Box<LoopResult>>,
    /// Recorded decisions, by call id.
    decisions: Decisions,
}

/// One execution of an agent run here: what every step reads.
struct Execution<'a> {
    state: &'a AppState,
    local: &'a Arc<LocalRun>,
    lease: Lease,
    run: AgentRun,
    ctx: TaskContext,
    conversation_id: String,
    chat_id: String,
}

/// Reads the run's conversation and chat and what earlier attempts left.
async fn gather<'a>(
    state: &'a AppState,
    local: &'a Arc<LocalRun>,
    lease: Lease,
    run: AgentRun,
    ctx: TaskContext,
) -> StorageResult<(Execution<'a>, Earlier)> {
    let store = &*state.store;
    let conversation_id = run.conversation_id.clone().unwrap_or_default();
    let chat_id = store
        .get_conversation(&conversation_id)
        .await?
        .chat_id
        .unwrap_or_default();
    let (last, logged) = Box::pin(scan_log(store, &run.id)).await?;
    let decisions = store
        .list_agent_run_decisions(&run.id)
        .await?
        .into_iter()
        .map(|d| (d.call_id, d.decision))
        .collect();
    let execution = Execution {
        state,
        local,
        lease,
        run,
        ctx,
        conversation_id,
        chat_id,
    };
    let earlier = Earlier {
        first_seq: last.map_or(0, |s| s + 1),
        logged,
        decisions,
    };
    Ok((execution, earlier))
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

impl Execution<'_> {
    /// The sink the run's events go through: appended to its log under
    /// the lease, sent to live followers, read into the metrics.
    fn sink(&self) -> Arc<StoreSink> {
        Arc::new(StoreSink {
            lease: self.lease.clone(),
            local: self.local.clone(),
            metrics: RunMetrics::new(
                self.state.metrics.clone(),
                self.state.config.api.as_str(),
                run_model(&self.state.config, &self.ctx),
            ),
            settled: Default::default(),
        })
    }

    /// Runs the loop, unless the log already holds the run's end: the
    /// project's MCP servers started, the owner told, the lease watched,
    /// the tools offered and the job handed to the executor.
    async fn run_loop(
        &self,
        earlier: Earlier,
        sink: &Arc<StoreSink>,
        workflow_called: &Arc<AtomicBool>,
    ) -> StorageResult<Outcome> {
        if let Some(result) = earlier.logged {
            return Ok(Outcome::Finished(result));
        }
        let mcp = match Box::pin(project_mcp(self.state, &self.ctx)).await {
            Err(message) => return Ok(Outcome::Failed(message)),
            Ok(mcp) => mcp,
        };
        self.notify_streaming("streaming-started");
        let stop = self.state.shutdown.child_token();
        let watched = self
            .state
            .watch_lease(&self.run.id, self.local.cancel.clone(), stop.clone());
        let mut tools = tools(
            self.state,
            &self.ctx,
            self.run.agent_type,
            workflow_called.clone(),
        )?;
        if let Some(mcp) = &mcp {
            tools.extend(mcp.tools());
        }
        let job = self.job(tools, earlier.first_seq, earlier.decisions, stop, sink);
        let outcome = self.state.executor.execute(job).await;
        drop(watched);
        if let Some(mcp) = mcp {
            Box::pin(mcp.shutdown()).await;
        }
        Ok(outcome)
    }

    /// The job the executor runs.
    fn job(
        &self,
        tools: Vec<Arc<dyn Tool>>,
        first_seq: u64,
        decisions: Decisions,
        stop: agentloop_types::CancellationToken,
        sink: &Arc<StoreSink>,
    ) -> AgentJob {
        AgentJob {
            run_id: self.run.id.clone(),
            chat_id: self.chat_id.clone(),
            store: self.state.store.clone(),
            provider: self.state.config.provider.clone(),
            tools,
            owner: self.lease.owner.clone(),
            lease_ms: self.lease.ttl_ms,
            first_seq,
            cancel: self.local.cancel.clone(),
            stop,
            sink: sink.clone(),
            decisions,
        }
    }

    /// Maps the executor's outcome to how the run ended; `None` when
    /// nothing more is done here: the run stopped without ending (shutdown,
    /// lost lease, another instance executes it), waits for a person, or
    /// this instance lost its lease.
    async fn ending(&self, outcome: Outcome, sink: &StoreSink) -> StorageResult<Option<Ended>> {
        let store = &*self.state.store;
        let run_id = self.run.id.as_str();
        match outcome {
            Outcome::Stopped | Outcome::Busy => {
                if self.state.shutdown.is_cancelled() || outcome == Outcome::Busy {
                    store.release_lease(run_id, &self.lease.owner).await?;
                }
                Ok(None)
            }
            Outcome::Waiting(pending) => {
                Box::pin(self.wait(&pending, false, None)).await?;
                Ok(None)
            }
            Outcome::Finished(result) if matches!(result.status, LoopStatus::Suspended { .. }) => {
                let LoopStatus::Suspended { pending, .. } = &result.status else {
                    return Ok(None);
                };
                let value = serde_json::to_value(&*result).ok();
                Box::pin(self.wait(pending, true, value)).await?;
                Ok(None)
            }
            Outcome::Finished(result) => match sink.take_settled() {
                // The terminal event went through the sink, which ended the run.
                Some(settled) => Ok(Some(Ended::from(settled))),
                None => {
                    if self.lease.renew().await.is_err() {
                        return Ok(None);
                    }
                    let settled = Box::pin(settle(store, run_id, *result)).await?;
                    Ok(Some(Ended::from(settled)))
                }
            },
            Outcome::AlreadyAnswered => {
                if self.lease.renew().await.is_err() {
                    return Ok(None);
                }
                let settled = Box::pin(log_answered(self.state, run_id, &self.chat_id)).await?;
                Ok(Some(Ended::from(settled)))
            }
            Outcome::Failed(error) => {
                if self.lease.renew().await.is_err() {
                    return Ok(None);
                }
                let reason = EndReason::new("executor", error.clone());
                let (status, _, ended_here) =
                    finish(store, run_id, AgentRunStatus::Failed, Some(reason)).await?;
                Ok(Some(Ended {
                    status,
                    ended_here,
                    result: Some(json!({ "error": error })),
                }))
            }
        }
    }

    /// Ends an execution whose run waits for a person: the run is switched
    /// to `waiting` (see [`crate::waiting`]), its lease released, its owner
    /// told.
    async fn wait(
        &self,
        pending: &[PendingCall],
        fresh: bool,
        result: Option<serde_json::Value>,
    ) -> StorageResult<()> {
        if self.lease.renew().await.is_err() {
            return Ok(());
        }
        let status =
            waiting::start_waiting(self.state, &self.ctx, &self.run, pending, fresh, result)
                .await?;
        self.state
            .store
            .release_lease(&self.run.id, &self.lease.owner)
            .await?;
        self.notify_streaming("streaming-ended");
        if status != AgentRunStatus::Waiting {
            self.state
                .notify_run_status(&self.ctx.owner, &self.run, status);
        }
        Ok(())
    }

    /// Closes an ended run: its record, its lease, the finished-runs
    /// metric, the task's workflow flag, the owner's notifications and the
    /// next link of the chain.
    async fn close(&self, ended: Ended, workflow_called: &AtomicBool) -> StorageResult<()> {
        let store = &*self.state.store;
        let Ended {
            status,
            ended_here,
            result,
        } = ended;
        Box::pin(close_record(store, &self.run.id, status, result)).await?;
        store.release_lease(&self.run.id, &self.lease.owner).await?;
        if ended_here {
            self.count_finished(status);
        }
        if status == AgentRunStatus::Completed && workflow_called.load(Ordering::SeqCst) {
            store
                .set_workflow_complete(&self.ctx.task.id, true, now_millis())
                .await?;
        }
        self.notify_streaming("streaming-ended");
        self.state
            .notify_run_status(&self.ctx.owner, &self.run, status);
        if ended_here && status == AgentRunStatus::Completed {
            Box::pin(chain(self.state, &self.ctx, self.run.agent_type)).await?;
        }
        Ok(())
    }

    /// Counts a run ended here in the finished-runs metric.
    fn count_finished(&self, status: AgentRunStatus) {
        self.state
            .metrics
            .runs_finished
            .get_or_create(&StatusLabels {
                status: status.as_str(),
            })
            .inc();
    }

    /// Tells the owner the run's stream started or ended (`kind`).
    fn notify_streaming(&self, kind: &str) {
        self.state.notify(
            &self.ctx.owner,
            json!({ "type": kind, "taskId": self.ctx.task.id,
                    "agentRunId": self.run.id, "conversationId": self.conversation_id }),
        );
    }
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
        Ok(_) | Err(StartError::Conflict(_)) => Ok(()),
        Err(StartError::Storage(e)) => Err(e),
    }
}
