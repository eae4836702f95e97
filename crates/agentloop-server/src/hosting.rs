//! Executing an agent run's loop here through the runtime: the run is
//! one run of its chat with one record, lease and event log (see
//! [`agentloop_runtime::HostedRun`]); the runtime takes and keeps the
//! lease (its heartbeat, paced by [`crate::heartbeat`]) and stores each
//! event before it reaches this module, which only reads the run — into
//! the metrics and to live followers — and stops reading when the run is
//! given up.

use std::sync::Arc;

use agentloop_engine::{Handoffs, LoopStrategy};
use agentloop_runtime::{ChatRun, ChatRuntime, Hosted, HostedRun, RuntimeError, RuntimeResult};
use agentloop_types::{Budget, Hooks, LoopResult, PendingCall, Tool};
use futures::StreamExt;
use futures::future::BoxFuture;

use crate::local_run::{Halt, LocalRun};
use crate::metrics::RunMetrics;
use crate::state::AppState;

/// How one execution of an agent run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The run ended with this result (already recorded and logged).
    Finished(Box<LoopResult>),
    /// The chat already ends with a final answer: nothing ran.
    Answered,
    /// The run waits for a person on these calls and the recorded
    /// decisions do not decide them all: nothing ran.
    Waiting(Vec<PendingCall>),
    /// Another instance holds the run's lease; it is left to it.
    Busy,
    /// The execution was given up where it was (shutdown, lost lease).
    Stopped,
    /// One step was executed, as asked ([`Pace::OneStep`]), and stored;
    /// the run goes on when it is executed again.
    Paused,
    /// The run could not be executed.
    Failed(String),
}

/// How much of a run one execution goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// To its end, or until it waits for a person.
    Whole,
    /// One step (a model turn or a tool step), for a durable engine that
    /// journals each (see [`crate::durable`]).
    OneStep,
}

/// The runtime agent runs are executed with: this instance's provider,
/// lease owner and lease length, `tools`, and the run's cancel token and
/// interrupt signal.
pub fn runtime(
    state: &AppState,
    tools: Vec<Arc<dyn Tool>>,
    local: Option<&LocalRun>,
) -> ChatRuntime {
    let runtime = ChatRuntime::new(state.store.clone(), state.config.provider.clone())
        .with_tools(tools)
        .with_step_retention(state.config.keep_steps)
        .with_lease(state.config.instance_id.clone(), state.lease_ttl_ms());
    match local {
        Some(local) => runtime
            .with_cancel(local.token().clone())
            .with_interrupt(local.interrupt().clone()),
        None => runtime,
    }
}

/// What a run is given to run with beyond the server's own: its tools,
/// the project's agents it hands off between, the strategy it starts
/// (recalling its memories), its hooks, and the budget its model calls
/// (its sub-agents', skills' and hooks' too) are reserved with.
pub struct RunKit {
    /// The tools it is offered.
    pub tools: Vec<Arc<dyn Tool>>,
    /// The project's agents, when it has some.
    pub handoffs: Option<Handoffs>,
    /// The loop a fresh run starts.
    pub strategy: Arc<dyn LoopStrategy>,
    /// The hooks it asks.
    pub hooks: Hooks,
    /// What its model calls are reserved with ([`crate::budgets::for_run`]).
    pub budget: Arc<dyn Budget>,
}

/// The hosting of a run: a runtime with the run's kit takes it over
/// (see [`ChatRuntime::host`]). Boxed, and built before it is awaited, so
/// that neither the run nor its kit stays in the future that then reads
/// the run for as long as it goes on.
pub fn host(
    state: &AppState,
    local: &Arc<LocalRun>,
    hosted: HostedRun,
    kit: RunKit,
) -> BoxFuture<'static, RuntimeResult<Hosted>> {
    let RunKit {
        tools,
        handoffs,
        strategy,
        hooks,
        budget,
    } = kit;
    let mut runtime = runtime(state, tools, Some(local))
        .with_strategy(strategy)
        .with_hooks(hooks)
        .with_budget(budget);
    if let Some(handoffs) = handoffs {
        // The project's agents: the run goes on with whoever speaks.
        runtime = runtime.with_handoffs(handoffs);
    }
    Box::pin(async move { runtime.host(hosted).await })
}

/// Executes a run: its `hosting` (see [`host`]) awaited, then, when it
/// runs, read to its end.
pub async fn execute(
    state: &AppState,
    local: &Arc<LocalRun>,
    hosting: BoxFuture<'static, RuntimeResult<Hosted>>,
    metrics: &RunMetrics,
    pace: Pace,
) -> Outcome {
    match hosting.await {
        Ok(Hosted::Running(run)) => {
            let run = match pace {
                Pace::Whole => run,
                Pace::OneStep => run.stop_after_step(),
            };
            // The runtime holds the run's lease now: its heartbeat keeps
            // it while the run is read here.
            let watched = state.watch_lease(run.run_id(), local.clone());
            let outcome = relay(state, local, run, metrics).await;
            drop(watched);
            outcome
        }
        Ok(Hosted::Ended(result)) => Outcome::Finished(result),
        Ok(Hosted::Answered) => Outcome::Answered,
        Ok(Hosted::Waiting(pending)) => Outcome::Waiting(pending),
        Err(error) => failed(error),
    }
}

/// Reads a run to its end: each event, stored already, goes into the
/// metrics and to live followers. A run halted with [`Halt::Stop`], or an
/// instance shutting down, stops the reading and drops the run where it is.
async fn relay(
    state: &AppState,
    local: &LocalRun,
    mut run: ChatRun,
    metrics: &RunMetrics,
) -> Outcome {
    let mut result = None;
    let mut cancelled = false;
    loop {
        let event = tokio::select! {
            biased;
            () = state.shutdown.cancelled() => {
                // Handed back at once: another instance takes it over.
                run.give_up().await;
                return Outcome::Stopped;
            }
            () = local.token().cancelled(), if !cancelled => {
                if local.halted() == Some(Halt::Stop) {
                    return Outcome::Stopped;
                }
                // A person's cancel: the loop hears the same token and
                // ends the run, which is read on to its end.
                cancelled = true;
                continue;
            }
            event = run.next() => event,
        };
        match event {
            None => break,
            Some(Err(error)) => return failed(error),
            Some(Ok(event)) => {
                metrics.event(&event);
                if event.path.is_root()
                    && let agentloop_types::EventKind::Finished(finished) = &event.kind
                {
                    result = Some(finished.result.clone());
                }
                local.send(event);
            }
        }
    }
    match result {
        Some(result) => Outcome::Finished(result),
        None if run.paused() => Outcome::Paused,
        None => Outcome::Failed("the run ended without a result".to_owned()),
    }
}

/// The outcome of a run the runtime could not execute or go on with.
fn failed(error: RuntimeError) -> Outcome {
    match error {
        RuntimeError::RunInProgress { .. } => Outcome::Busy,
        RuntimeError::LeaseLost { .. } => Outcome::Stopped,
        error => Outcome::Failed(error.to_string()),
    }
}
