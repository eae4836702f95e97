//! Executing one agent run on this instance, under the lease the runtime
//! takes and keeps (paced by the instance's
//! [`heartbeat`](crate::heartbeat)), then closing it: metric,
//! workflow flag, notifications and the next link of the chain. Also the
//! lifecycle's entry points that set a run executing: [`start_agent_run`]
//! and [`decide`] (the last decision resumes a waiting run).
//!
//! `drive` reads as its steps: load the run and its task, end a run a
//! person ended while nothing executed it, execute it (MCP servers, tools,
//! the runtime: see [`crate::hosting`]), see how it ended, and close it.
//! Every write of the run's record, status and lease is the runtime's,
//! and so is every end (a run that fails before its loop starts
//! included: [`agentloop_runtime::ChatRuntime::fail_hosted`]); this module
//! writes none.
//!
//! The run's record, lease and event log are the runtime's: a run taken
//! over after a crash or an expired lease continues in place from its
//! record (its started calls answered as interrupted), a chat that already
//! ends with a final answer ends the run without calling the model, and
//! the events of every attempt continue one log. How the run ended is
//! decided once, as its terminal event is written
//! ([`crate::ending::AgentRunEnding`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agentloop_runtime::{HostedRun, RuntimeError, RuntimeResult, Written};
use agentloop_storage::StorageResult;
use agentloop_storage::model::{AgentRun, AgentRunStatus, AgentType, now_millis};
use agentloop_types::{Decision, Decisions, LoopStatus, Message, SteerStrategy};
use serde_json::json;

use crate::budgets::RunSchedule;
use crate::ending::{AgentRunEnding, Settled};
use crate::hosting::{self, Outcome, Pace};
use crate::local_run::Halt;
use crate::metrics::{RunMetrics, StatusLabels};
use crate::run_log::{end_answered, end_stopped, fail};
use crate::run_memory;
use crate::run_tools::{Offer, offered, project_mcp, project_shell};
use crate::runner::{
    CreatedRun, StartError, StartInput, StartedBy, TaskContext, create_agent_run,
    load_task_context, next_agent, prepare, run_model,
};
use crate::state::{AppState, LocalRun};
use crate::waiting::{self, DecideError};

/// Creates an agent run ready to execute (see [`create_agent_run`]) and
/// starts executing it in the background, from what its creation wrote:
/// nothing is read back. The run is registered as executing here before it
/// is written, so a cancel that finds the run also finds its execution.
/// With a durable engine, the run is handed to it instead. A person starts
/// it: a new chain of the task begins with it.
pub async fn start_agent_run(
    state: &AppState,
    ctx: &TaskContext,
    agent: AgentType,
    input: StartInput<'_>,
) -> Result<AgentRun, StartError> {
    start(state, ctx, agent, input, StartedBy::Person).await
}

/// [`start_agent_run`] as chaining starts the next link: within the
/// task's current chain.
pub async fn start_chained(
    state: &AppState,
    ctx: &TaskContext,
    agent: AgentType,
    input: StartInput<'_>,
) -> Result<AgentRun, StartError> {
    start(state, ctx, agent, input, StartedBy::Chain).await
}

/// [`start_agent_run`] and [`start_chained`], as `by` starts it.
async fn start(
    state: &AppState,
    ctx: &TaskContext,
    agent: AgentType,
    input: StartInput<'_>,
    by: StartedBy,
) -> Result<AgentRun, StartError> {
    let run_id = crate::ids::new_id();
    let local = match &state.config.dispatch {
        Some(_) => None,
        None => state.register_local(&run_id),
    };
    let created = match create_agent_run(state, ctx, agent, &run_id, input, by).await {
        Ok(created) => created,
        Err(error) => {
            if local.is_some() {
                state.unregister_local(&run_id, false);
            }
            return Err(error);
        }
    };
    let run = created.run.clone();
    match local {
        Some(local) if created.leased => {
            // Boxed: the futures an execution nests each hold it until the
            // run's first step, for as long as the run goes on.
            tokio::spawn(drive_created(state.clone(), local, Box::new(created)));
        }
        _ => execute(state, &run_id).await,
    }
    Ok(run)
}

/// Executes a run this instance just created and registered (see
/// [`start_agent_run`]), under the lease its creation took. Boxed, as
/// [`drive_boxed`] is: the chain reaches this from a run's own execution.
fn drive_created(
    state: AppState,
    local: Arc<LocalRun>,
    created: Box<CreatedRun>,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    Box::pin(async move {
        let run_id = created.run.id.clone();
        drive_registered(&state, &run_id, local, Pace::Whole, Some(created)).await;
    })
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
    // A durable engine parks the run on its wait, named while the run
    // still waits (the record moves on once it resumes).
    let wait = match &state.config.dispatch {
        Some(_) => waiting::wait_key(state, &run.id).await?,
        None => None,
    };
    let resumed = waiting::decide(state, ctx, run, decisions).await?;
    if !resumed {
        return Ok(false);
    }
    match (&state.config.dispatch, wait) {
        (Some(dispatch), Some(wait)) => {
            if let Err(error) = dispatch.wake(&run.id, &wait).await {
                // The engine looks at a parked run again on its own
                // (see `agentloop_restate::workflow`).
                tracing::warn!(agent_run_id = %run.id, %error,
                               "the durable engine could not be woken; it will find the run resumed");
            }
        }
        _ => execute(state, &run.id).await,
    }
    Ok(true)
}

/// Cancels the engine's execution of a run a person ended (nothing without
/// an engine). A failure is logged: the run's end is logged anyway by the
/// engine's next attempt, which finds the run ended.
pub async fn cancel_in_engine(state: &AppState, run_id: &str) {
    if let Some(dispatch) = &state.config.dispatch
        && let Err(error) = dispatch.cancel(run_id).await
    {
        tracing::warn!(agent_run_id = %run_id, %error,
                       "the durable engine did not take the run's cancellation");
    }
}

/// Executes a run in the background here (the runtime takes its lease; a
/// run whose lease another instance holds is left to it). With a durable
/// engine, the run is handed to it instead.
pub(crate) async fn execute(state: &AppState, run_id: &str) {
    if let Some(dispatch) = &state.config.dispatch {
        if let Err(error) = dispatch.dispatch(run_id).await {
            // Handed again by the claim loop once its lease is claimable.
            tracing::error!(agent_run_id = %run_id, %error, "the durable engine refused the run");
        }
        return;
    }
    tokio::spawn(drive_boxed(state.clone(), run_id.to_owned()));
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
    drive_paced(&state, &run_id, Pace::Whole).await;
}

/// Executes an agent run here at `pace`, if it is not already executing
/// here; returns whether it paused after one step (see [`Pace`]). A run
/// asked to execute while its execution here ends executes once more (see
/// [`AppState::register_local`]) — at `Pace::Whole` only: a step of a
/// durable engine is one step, and the engine asks for the next.
pub async fn drive_paced(state: &AppState, run_id: &str, pace: Pace) -> bool {
    let Some(local) = state.register_local(run_id) else {
        return false;
    };
    drive_registered(state, run_id, local, pace, None).await
}

/// Executes a run registered here (see [`drive_paced`]); `created` is what
/// its creation wrote, when this instance just created it.
async fn drive_registered(
    state: &AppState,
    run_id: &str,
    mut local: Arc<LocalRun>,
    pace: Pace,
    mut created: Option<Box<CreatedRun>>,
) -> bool {
    loop {
        let paused = match drive(state, run_id, &local, pace, created.take()).await {
            Ok(paused) => paused,
            Err(e) => {
                tracing::error!(agent_run_id = %run_id, error = %e, "agent run could not be executed");
                false
            }
        };
        if !paused {
            // Messages sent to the run that it never took go on to what
            // runs next (nothing moves while it still goes on or waits).
            deliver_left(state, run_id).await;
        }
        match state.unregister_local(run_id, pace == Pace::Whole) {
            Some(next) => local = next,
            None => return paused,
        }
    }
}

// The steps before and after the execution are boxed: their futures would
// otherwise be inline in this one, which every executing run holds for as
// long as it runs.
async fn drive(
    state: &AppState,
    run_id: &str,
    local: &Arc<LocalRun>,
    pace: Pace,
    created: Option<Box<CreatedRun>>,
) -> RuntimeResult<bool> {
    let mut execution = match created {
        // Created under this instance's lease a moment ago: nothing to
        // read back.
        Some(created) => Execution::created(state, local, created),
        None => {
            let (run, ctx) = Box::pin(load_run(state, run_id)).await?;
            Box::pin(Execution::new(state, local, run, ctx)).await?
        }
    };
    let settled = match execution.run.status {
        AgentRunStatus::Running => None,
        AgentRunStatus::Waiting => Some(Box::pin(execution.settle_wait()).await),
        AgentRunStatus::Completed | AgentRunStatus::Failed | AgentRunStatus::Cancelled => {
            Some(Box::pin(execution.end_stopped()).await)
        }
    };
    match settled {
        None => {}
        // Another instance holds it: left to it.
        Some(Ok(()) | Err(RuntimeError::RunInProgress { .. })) => return Ok(false),
        Some(Err(e)) => return Err(e),
    }
    let workflow_called = Arc::new(AtomicBool::new(false));
    let ending = Arc::new(AgentRunEnding::new(state.store.clone(), run_id));
    let outcome = execution.run_loop(&ending, &workflow_called, pace).await?;
    if outcome == Outcome::Paused {
        // The step is stored and the runtime gave the lease up: whoever
        // executes the next one takes it again.
        return Ok(true);
    }
    let Some(ended) = Box::pin(execution.ended(outcome, &ending)).await? else {
        return Ok(false);
    };
    Box::pin(execution.close(ended, &workflow_called)).await?;
    Ok(false)
}

/// The agent run and its task, the run prepared (conversation, chat, first
/// message, record) if it was not yet.
async fn load_run(state: &AppState, run_id: &str) -> RuntimeResult<(AgentRun, TaskContext)> {
    let store = &*state.store;
    let run = store.get_agent_run(run_id).await?;
    let ctx = Box::pin(load_task_context(store, &run.task_id)).await?;
    let run = Box::pin(prepare(store, &state.config, &ctx, run)).await?;
    Ok((run, ctx))
}

/// One execution of an agent run here: what every step reads.
struct Execution<'a> {
    state: &'a AppState,
    local: &'a Arc<LocalRun>,
    run: AgentRun,
    ctx: TaskContext,
    conversation_id: String,
    chat_id: String,
    /// What this instance wrote as it created the run a moment ago (see
    /// [`Written`]): the first execution reads none of it back.
    written: Option<Box<Written>>,
    /// The schedule it spends for, known when it was created here.
    schedule: RunSchedule,
}

/// What the close of an ended run reads.
struct Ended {
    status: AgentRunStatus,
    ended_here: bool,
}

impl From<Settled> for Ended {
    fn from(settled: Settled) -> Self {
        Self {
            status: settled.status,
            ended_here: settled.ended_here,
        }
    }
}

impl<'a> Execution<'a> {
    /// The execution of `run`, with its conversation and chat read.
    async fn new(
        state: &'a AppState,
        local: &'a Arc<LocalRun>,
        run: AgentRun,
        ctx: TaskContext,
    ) -> RuntimeResult<Self> {
        let conversation_id = run.conversation_id.clone().unwrap_or_default();
        let chat_id = state
            .store
            .get_conversation(&conversation_id)
            .await?
            .chat_id
            .unwrap_or_default();
        Ok(Self {
            state,
            local,
            run,
            ctx,
            conversation_id,
            chat_id,
            written: None,
            schedule: RunSchedule::Unread,
        })
    }

    /// The run as the runtime hosts it, with `ending` taking part in its
    /// end.
    fn hosted(&self, decisions: Decisions, ending: Arc<AgentRunEnding>) -> HostedRun {
        HostedRun {
            run_id: self.run.id.clone(),
            chat_id: self.chat_id.clone(),
            decisions,
            ending: Some(ending),
            written: None,
        }
    }

    /// Ends a run that a person ended while no instance executed it (see
    /// [`end_stopped`]).
    async fn end_stopped(&self) -> RuntimeResult<()> {
        let ending = Arc::new(AgentRunEnding::new(self.state.store.clone(), &self.run.id));
        let hosted = self.hosted(Decisions::default(), ending);
        Box::pin(end_stopped(self.state, &self.run, hosted)).await
    }

    /// Has the runtime store the wait of a run that waits for a person
    /// (one whose record a crash left `running` is stored `suspended`).
    async fn settle_wait(&self) -> RuntimeResult<()> {
        let ending = Arc::new(AgentRunEnding::new(self.state.store.clone(), &self.run.id));
        let hosted = self.hosted(Decisions::default(), ending);
        hosting::runtime(self.state, Vec::new(), None)
            .settle_wait(hosted)
            .await
            .map(drop)
    }

    /// The execution of a run this instance just created.
    fn created(state: &'a AppState, local: &'a Arc<LocalRun>, created: Box<CreatedRun>) -> Self {
        let CreatedRun {
            run,
            ctx,
            chat,
            first_message,
            record,
            schedule_id,
            ..
        } = *created;
        let written = Written {
            record,
            chat,
            project: ctx.project.clone(),
            messages: vec![first_message],
        };
        Self {
            state,
            local,
            conversation_id: run.conversation_id.clone().unwrap_or_default(),
            chat_id: written.chat.id.clone(),
            run,
            ctx,
            written: Some(Box::new(written)),
            schedule: RunSchedule::Known(schedule_id),
        }
    }

    /// Runs the loop: the project's MCP servers started, the owner told,
    /// the tools offered and the run executed.
    async fn run_loop(
        &mut self,
        ending: &Arc<AgentRunEnding>,
        workflow_called: &Arc<AtomicBool>,
        pace: Pace,
    ) -> RuntimeResult<Outcome> {
        let shell = match project_shell(self.state, &self.ctx) {
            Err(message) => return Ok(Outcome::Failed(message)),
            Ok(shell) => shell,
        };
        let mcp = match Box::pin(project_mcp(self.state, &self.ctx)).await {
            Err(message) => return Ok(Outcome::Failed(message)),
            Ok(mcp) => mcp,
        };
        let written = self.written.take();
        // A run created a moment ago has no decisions yet.
        let decisions = match written {
            Some(_) => Decisions::default(),
            None => self
                .state
                .store
                .list_agent_run_decisions(&self.run.id)
                .await?
                .into_iter()
                .map(|d| (d.call_id, d.decision))
                .collect(),
        };
        self.notify_streaming("streaming-started");
        let chat = match &written {
            Some(written) => written.chat.clone(),
            None => self.state.store.get_chat(&self.chat_id).await?,
        };
        let offer = Offer {
            agent: self.run.agent_type,
            workflow_called: workflow_called.clone(),
            shell,
            mcp: mcp.as_ref(),
            chat: &chat,
        };
        let tools = offered(self.state, &self.ctx, offer)?;
        let metrics = RunMetrics::new(
            self.state.metrics.clone(),
            self.state.config.provider.api(),
            run_model(&self.state.config, &self.ctx),
        );
        let handoffs =
            match crate::project_agents::handoffs(&self.ctx.project, self.run.agent_type, &tools) {
                Ok(handoffs) => handoffs,
                Err(error) => return Ok(Outcome::Failed(format!("the project's agents: {error}"))),
            };
        let hosted = HostedRun {
            written,
            ..self.hosted(decisions, ending.clone())
        };
        let budget = crate::budgets::for_run(
            self.state,
            &hosted.run_id,
            crate::budgets::Owners {
                user: self.ctx.owner.clone(),
                project: self.ctx.project.id.clone(),
                task: self.ctx.task.id.clone(),
                schedule: std::mem::replace(&mut self.schedule, RunSchedule::Unread),
            },
        );
        let mut hooks = run_memory::hooks(self.state, &self.ctx, &self.chat_id, &budget);
        if let Some(checkpoints) = crate::run_files::hook(self.state, &self.ctx, &tools) {
            hooks.push(checkpoints);
        }
        let kit = hosting::RunKit {
            tools,
            handoffs,
            strategy: run_memory::strategy(run_memory::recall(self.state, &self.ctx)),
            hooks,
            budget,
        };
        // Built here, so that the chat, the kit and the run are not held
        // by this future while the run goes on.
        let hosting = hosting::host(self.state, self.local, hosted, kit);
        drop(chat);
        let outcome = hosting::execute(self.state, self.local, hosting, &metrics, pace).await;
        if let Some(mcp) = mcp {
            Box::pin(mcp.shutdown()).await;
        }
        Ok(outcome)
    }

    /// How the execution ended; `None` when nothing more is done here: the
    /// run stopped without ending (shutdown, lost lease, another instance
    /// executes it), or waits for a person.
    async fn ended(
        &self,
        outcome: Outcome,
        ending: &Arc<AgentRunEnding>,
    ) -> RuntimeResult<Option<Ended>> {
        match outcome {
            // The runtime gives the lease up as it logs the run's end (or
            // its suspension), and the heartbeat reads a lease given up as
            // lost: it may halt the reading between the two. The run then
            // ended here (its ending settled), or waits for a person (its
            // wait stored), or is executed again to say where it is (its
            // lease is free).
            Outcome::Stopped
                if !self.state.shutdown.is_cancelled()
                    && self.local.halted() == Some(Halt::Stop) =>
            {
                if let Some(settled) = ending.settled() {
                    return Ok(Some(Ended::from(settled)));
                }
                if ending.told_to_wait() {
                    Box::pin(self.wait(ending)).await;
                    return Ok(None);
                }
                self.local.execute_again();
                Ok(None)
            }
            // Nothing of the run is ours to write: the runtime handed a
            // run given up at shutdown back, another instance holds a
            // busy one, a paused one's step is stored.
            Outcome::Stopped | Outcome::Busy | Outcome::Paused => Ok(None),
            Outcome::Waiting(_) => {
                Box::pin(self.wait(ending)).await;
                Ok(None)
            }
            Outcome::Finished(result) => {
                if let LoopStatus::Suspended { .. } = &result.status {
                    Box::pin(self.wait(ending)).await;
                    return Ok(None);
                }
                // The runtime ends every finished run through the ending:
                // nothing here decides or commits an end again.
                match ending.settled() {
                    Some(settled) => Ok(Some(Ended::from(settled))),
                    None => Err(RuntimeError::Host {
                        run_id: self.run.id.clone(),
                        message: format!(
                            "the run finished ({}) without its end being settled",
                            result.status.name()
                        ),
                    }),
                }
            }
            Outcome::Answered => {
                let hosted = self.hosted(Decisions::default(), ending.clone());
                Box::pin(end_answered(self.state, hosted)).await?;
                Ok(ending.settled().map(Ended::from))
            }
            // The runtime ends it, with its one terminal event; another
            // instance that holds it ends it there.
            Outcome::Failed(error) => {
                let hosted = self.hosted(Decisions::default(), ending.clone());
                match Box::pin(fail(self.state, hosted, error)).await {
                    Ok(()) => Ok(ending.settled().map(Ended::from)),
                    Err(RuntimeError::RunInProgress { .. }) => Ok(None),
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// Ends an execution whose run waits for a person, its wait stored by
    /// the runtime (see [`crate::waiting`]): its owner is told.
    async fn wait(&self, ending: &AgentRunEnding) {
        let waited = match ending.waited().await {
            Ok(Some(waited)) => waited,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(agent_run_id = %self.run.id, error = %e,
                               "how a waiting run took its wait could not be read");
                return;
            }
        };
        waiting::announce_wait(self.state, &self.ctx, &self.run, &waited).await;
        self.notify_streaming("streaming-ended");
        if waited.status != AgentRunStatus::Waiting {
            self.state.notify_run_status(
                &self.ctx.owner,
                &self.ctx.project,
                &self.run,
                waited.status,
            );
        }
    }

    /// Closes an ended run: the finished-runs metric, the task's workflow
    /// flag, the owner's notifications and the next link of the chain.
    /// (Its record and terminal event were written, and its lease
    /// released, by the runtime as it ended.)
    async fn close(&self, ended: Ended, workflow_called: &AtomicBool) -> RuntimeResult<()> {
        let store = &*self.state.store;
        let Ended { status, ended_here } = ended;
        if ended_here {
            self.count_finished(status);
        }
        // A run executed in several attempts (taken over, or one step at a
        // time by a durable engine) may have made the call in an earlier
        // one: its chat says so.
        let called = workflow_called.load(Ordering::SeqCst)
            || (status == AgentRunStatus::Completed
                && completed_workflow_in(store, &self.chat_id).await?);
        if status == AgentRunStatus::Completed && called {
            store
                .set_workflow_complete(&self.ctx.task.id, true, now_millis())
                .await?;
        }
        self.notify_streaming("streaming-ended");
        self.state
            .notify_run_status(&self.ctx.owner, &self.ctx.project, &self.run, status);
        if ended_here && status == AgentRunStatus::Completed {
            Box::pin(chain(self.state, &self.ctx, &self.run)).await?;
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
        self.state.notify_project(
            &self.ctx.owner,
            &self.ctx.project.id,
            json!({ "type": kind, "taskId": self.ctx.task.id,
                    "agentRunId": self.run.id, "conversationId": self.conversation_id }),
        );
    }
}

/// Whether the chat holds a `complete_workflow` call answered without
/// error.
async fn completed_workflow_in(
    store: &dyn agentloop_storage::Store,
    chat_id: &str,
) -> RuntimeResult<bool> {
    let messages = store.list_messages(chat_id).await?;
    let calls: Vec<&str> = messages
        .iter()
        .flat_map(|stored| stored.message.tool_uses())
        .filter(|call| call.name == crate::tool::COMPLETE_WORKFLOW)
        .map(|call| call.id.as_str())
        .collect();
    Ok(messages
        .iter()
        .flat_map(|stored| stored.message.tool_results())
        .any(|result| !result.is_error && calls.contains(&result.tool_use_id.as_str())))
}

/// Starts the next agent of the chain after `ended`, unless the workflow
/// is complete or the chain reached one of its bounds (see
/// [`crate::chain_bounds`]; the end is then stored and told).
async fn chain(state: &AppState, ctx: &TaskContext, ended: &AgentRun) -> RuntimeResult<()> {
    let Some(next) = next_agent(ended.agent_type) else {
        return Ok(());
    };
    if state.shutdown.is_cancelled() {
        return Ok(());
    }
    let task = state.store.get_task(&ctx.task.id).await?;
    if task.workflow_complete {
        return Ok(());
    }
    if Box::pin(crate::chain_bounds::end_if_reached(
        state, &ctx.owner, &task, &ended.id,
    ))
    .await?
    {
        return Ok(());
    }
    let ctx = TaskContext {
        task,
        ..ctx.clone()
    };
    match start_chained(state, &ctx, next, StartInput::default()).await {
        Ok(_) | Err(StartError::Conflict(_) | StartError::Done) => Ok(()),
        Err(StartError::Storage(e)) => Err(e.into()),
    }
}

/// After `run_id`'s execution here: messages its chat's inbox still holds
/// (sent as its last turn ran) go to what runs next —
/// the task's active run, when the chain started one, which takes them at
/// its next step boundary; else a new run of the same agent, whose request
/// they are. Nothing moves while the run still goes on or waits for a
/// person, nor once it was cancelled or its task is marked done.
async fn deliver_left(state: &AppState, run_id: &str) {
    if let Err(error) = Box::pin(try_deliver_left(state, run_id)).await {
        tracing::warn!(agent_run_id = %run_id, %error,
                       "messages left in the run's inbox could not be delivered");
    }
}

async fn try_deliver_left(state: &AppState, run_id: &str) -> StorageResult<()> {
    let run = state.store.get_agent_run(run_id).await?;
    // A run going on or waiting takes them itself; a cancelled one's
    // messages end with it (a person stopped the work they were about).
    if matches!(
        run.status,
        AgentRunStatus::Running | AgentRunStatus::Waiting | AgentRunStatus::Cancelled
    ) {
        return Ok(());
    }
    let Some(chat_id) = crate::run_log::run_chat(state, &run).await? else {
        return Ok(());
    };
    let left = state.store.queued_messages(&chat_id).await?;
    if left.is_empty() {
        return Ok(());
    }
    let ctx = load_task_context(&*state.store, &run.task_id).await?;
    if ctx.task.workflow_complete {
        return Ok(());
    }
    let left: Vec<Message> = left.into_iter().map(|q| q.message).collect();
    let ids: Vec<String> = left.iter().map(|m| m.id.clone()).collect();
    // Moved to another run, a message waits for its next step: whatever
    // it interrupted was this run's.
    if let Some(active) = state.store.active_agent_run(&run.task_id).await? {
        for message in &left {
            crate::steer::enqueue(state, &active, message, SteerStrategy::Enqueue).await?;
        }
    } else {
        let request = left
            .iter()
            .map(Message::text)
            .collect::<Vec<_>>()
            .join("\n\n");
        let input = StartInput {
            request: Some(&request),
            ..StartInput::default()
        };
        match start_agent_run(state, &ctx, run.agent_type, input).await {
            Ok(_) => {}
            // Started meanwhile: the messages go to that run.
            Err(StartError::Conflict(Some(active))) => {
                for message in &left {
                    crate::steer::enqueue(state, &active, message, SteerStrategy::Enqueue).await?;
                }
            }
            Err(StartError::Conflict(None) | StartError::Done) => return Ok(()),
            Err(StartError::Storage(error)) => return Err(error),
        }
    }
    state
        .store
        .mark_delivered(&chat_id, &ids, now_millis())
        .await?;
    Ok(())
}
