//! How an agent run is executed: the [`AgentExecutor`] port and
//! [`EngineExecutor`], which drives the engine and hands every event to the
//! job's [`RunSink`] (which stores messages and events as they come).

use std::sync::Arc;

use agentloop_engine::RunDeps;
use agentloop_types::{
    CancellationToken, EventKind, LoopEvent, LoopOptions, LoopResult, Message, ModelProvider, Tool,
};
use async_trait::async_trait;
use futures::StreamExt;

/// Why a sink refused an event: the run must stop without finishing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SinkError {
    /// Another instance holds the run's lease now.
    #[error("the lease of run {0} was lost")]
    LeaseLost(String),
    /// The store failed.
    #[error("storage: {0}")]
    Storage(String),
}

/// Where a run's events go, in order. Implementations persist messages
/// (`message_created` of the root run) and the event log, and fan events out
/// to live followers.
#[async_trait]
pub trait RunSink: Send + Sync {
    /// Takes one event, already numbered for the run's log.
    async fn event(&self, event: LoopEvent) -> Result<(), SinkError>;
}

/// One execution of an agent run (a first start or a takeover).
pub struct AgentJob {
    /// The agent run (and its run record).
    pub run_id: String,
    /// Engine run id of this attempt; message ids derive from it, so each
    /// attempt has its own.
    pub attempt_id: String,
    /// The history to continue: the stored messages of the run's chat.
    pub history: Vec<Message>,
    /// Loop options (model, limits, project and chat ids).
    pub options: LoopOptions,
    /// The model.
    pub provider: Arc<dyn ModelProvider>,
    /// The tools offered.
    pub tools: Vec<Arc<dyn Tool>>,
    /// Seq of the first event this attempt emits (the log continues).
    pub first_seq: u64,
    /// Cancelled when a person cancels the run: it ends `cancelled`.
    pub cancel: CancellationToken,
    /// Cancelled when the instance stops or loses the lease: the run is
    /// dropped where it is and left for another instance.
    pub stop: CancellationToken,
    /// Where events go.
    pub sink: Arc<dyn RunSink>,
}

/// How an execution ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The loop ended with this result.
    Finished(Box<LoopResult>),
    /// The execution was stopped (shutdown or lost lease) before it ended.
    Stopped,
}

/// Runs agent jobs.
#[async_trait]
pub trait AgentExecutor: Send + Sync {
    /// Runs a job until its loop ends or it is stopped.
    async fn execute(&self, job: AgentJob) -> Outcome;
}

/// An [`AgentExecutor`] over `agentloop-engine`: runs the loop over the
/// job's history and numbers events after `first_seq`.
#[derive(Debug, Clone, Copy, Default)]
pub struct EngineExecutor;

#[async_trait]
impl AgentExecutor for EngineExecutor {
    async fn execute(&self, job: AgentJob) -> Outcome {
        let deps = RunDeps::new(job.provider)
            .with_tools(job.tools)
            .with_cancel(job.cancel)
            .with_run_id(job.attempt_id);
        let mut stream = agentloop_engine::run(job.options, job.history, deps);
        loop {
            let next = tokio::select! {
                biased;
                () = job.stop.cancelled() => return Outcome::Stopped,
                next = stream.next() => next,
            };
            let Some(mut event) = next else {
                return Outcome::Stopped;
            };
            event.seq += job.first_seq;
            let result = match &event.kind {
                EventKind::Finished { result } if event.path.is_root() => Some(result.clone()),
                _ => None,
            };
            if job.sink.event(event).await.is_err() {
                return Outcome::Stopped;
            }
            if let Some(result) = result {
                return Outcome::Finished(Box::new(result));
            }
        }
    }
}
