//! How an agent run is executed: the [`AgentExecutor`] port and
//! [`RuntimeExecutor`], which continues the run's chat through
//! `agentloop-runtime` (the runtime stores messages, totals and its own run
//! records as the loop goes) and hands every event to the job's
//! [`RunSink`], numbered for the agent run's event log.

use std::sync::Arc;

use agentloop_runtime::{ChatRuntime, RuntimeError};
use agentloop_storage::Store;
use agentloop_types::{
    CancellationToken, Decisions, LoopEvent, LoopResult, ModelProvider, PendingCall, Tool,
};
use async_trait::async_trait;

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

/// Where a run's events go, in order: the agent run's event log and its
/// live followers.
#[async_trait]
pub trait RunSink: Send + Sync {
    /// Takes one event, already numbered for the agent run's log.
    async fn event(&self, event: LoopEvent) -> Result<(), SinkError>;
}

/// One execution of an agent run (a first start or a takeover): continue
/// the run's chat from its last stored message.
pub struct AgentJob {
    /// The agent run.
    pub run_id: String,
    /// The chat holding the run's messages; its settings carry the loop
    /// options (model, system prompt, limits).
    pub chat_id: String,
    /// The store.
    pub store: Arc<dyn Store>,
    /// The model.
    pub provider: Arc<dyn ModelProvider>,
    /// The tools offered.
    pub tools: Vec<Arc<dyn Tool>>,
    /// Lease owner name of this instance.
    pub owner: String,
    /// Lease length (ms).
    pub lease_ms: i64,
    /// Seq of the first event this attempt emits (the log continues).
    pub first_seq: u64,
    /// Cancelled when a person cancels the run: it ends `cancelled`.
    pub cancel: CancellationToken,
    /// Cancelled when the instance stops or loses the lease: the run is
    /// dropped where it is and left for another instance.
    pub stop: CancellationToken,
    /// Where events go.
    pub sink: Arc<dyn RunSink>,
    /// The decisions recorded for the run. When its chat waits for a
    /// person and these decide every pending call, the run resumes with
    /// them; when they do not, it goes on waiting.
    pub decisions: Decisions,
}

/// How an execution ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The loop ended with this result.
    Finished(Box<LoopResult>),
    /// The chat already ends with a final answer: nothing to run.
    AlreadyAnswered,
    /// The chat waits for a person on these calls and the recorded
    /// decisions do not decide them all: nothing to run yet.
    Waiting(Vec<PendingCall>),
    /// Another worker still holds a live lease on the chat's run; try later.
    Busy,
    /// The execution was stopped (shutdown or lost lease) before it ended.
    Stopped,
    /// The run could not be executed.
    Failed(String),
}

/// Runs agent jobs.
#[async_trait]
pub trait AgentExecutor: Send + Sync {
    /// Runs a job until its loop ends or it is stopped.
    async fn execute(&self, job: AgentJob) -> Outcome;
}

/// An [`AgentExecutor`] over [`ChatRuntime::continue_chat`], or
/// [`ChatRuntime::resume_with`] when the chat waits for a person and the
/// job's decisions decide every pending call.
#[derive(Debug, Clone, Copy, Default)]
pub struct RuntimeExecutor;

#[async_trait]
impl AgentExecutor for RuntimeExecutor {
    async fn execute(&self, job: AgentJob) -> Outcome {
        let runtime = ChatRuntime::new(job.store, job.provider)
            .with_tools(job.tools)
            .with_lease(job.owner, job.lease_ms)
            .with_cancel(job.cancel);
        // Boxed: the channel allocates slots 32 at a time, and an event
        // inline is hundreds of bytes, per run.
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Box<LoopEvent>>();
        // The run goes on in its own task, so storing an event here never
        // waits on a transaction the run holds open.
        let run = tokio::spawn(run_chat(runtime, job.chat_id, job.decisions, tx));
        let abort = run.abort_handle();
        let forwarded = forward_events(rx, &*job.sink, job.first_seq, &job.stop).await;
        if forwarded.is_err() {
            abort.abort();
            return Outcome::Stopped;
        }
        outcome_of(run.await.ok())
    }
}

/// Runs the chat: continues it, or resumes it when it waits for a person
/// and `decisions` decide every pending call. Its events go to `tx`.
async fn run_chat(
    runtime: ChatRuntime,
    chat_id: String,
    decisions: Decisions,
    tx: tokio::sync::mpsc::UnboundedSender<Box<LoopEvent>>,
) -> Result<Ran, RuntimeError> {
    let mut observer = move |event: &LoopEvent| {
        let _ = tx.send(Box::new(event.clone()));
    };
    // The steps around the run are boxed, so their futures are not
    // held inline in this task for as long as the run goes on.
    let pending = Box::pin(runtime.pending(&chat_id)).await?;
    if pending.is_empty() {
        return runtime
            .continue_chat(&chat_id, &mut observer)
            .await
            .map(Ran::from);
    }
    let decided: Decisions = decisions
        .into_iter()
        .filter(|(id, _)| pending.iter().any(|p| &p.call.id == id))
        .collect();
    if decided.len() < pending.len() {
        return Ok(Ran::Waiting(pending));
    }
    Box::pin(runtime.resume_with(&chat_id, decided, &mut observer))
        .await
        .map(|outcome| Ran::from(Some(outcome)))
}

/// Hands the run's events to `sink`, numbered from `first_seq`, until the
/// run stops sending. `Err` when the execution must stop: `stop` was
/// cancelled or the sink refused an event.
async fn forward_events(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<Box<LoopEvent>>,
    sink: &dyn RunSink,
    first_seq: u64,
    stop: &CancellationToken,
) -> Result<(), ()> {
    let mut seq = first_seq;
    loop {
        tokio::select! {
            biased;
            () = stop.cancelled() => return Err(()),
            event = rx.recv() => match event {
                Some(mut event) => {
                    event.seq = seq;
                    seq += 1;
                    if sink.event(*event).await.is_err() {
                        return Err(());
                    }
                }
                None => return Ok(()),
            },
        }
    }
}

/// The outcome of a run task that ended (`None`: it was aborted or
/// panicked).
fn outcome_of(ended: Option<Result<Ran, RuntimeError>>) -> Outcome {
    match ended {
        Some(Ok(Ran::Finished(result))) => Outcome::Finished(result),
        Some(Ok(Ran::AlreadyAnswered)) => Outcome::AlreadyAnswered,
        Some(Ok(Ran::Waiting(pending))) => Outcome::Waiting(pending),
        Some(Err(RuntimeError::RunInProgress { .. })) => Outcome::Busy,
        Some(Err(e)) => Outcome::Failed(e.to_string()),
        None => Outcome::Stopped,
    }
}

/// What the runtime did with a job.
enum Ran {
    Finished(Box<LoopResult>),
    AlreadyAnswered,
    Waiting(Vec<PendingCall>),
}

impl From<Option<agentloop_runtime::RunOutcome>> for Ran {
    fn from(outcome: Option<agentloop_runtime::RunOutcome>) -> Self {
        match outcome {
            Some(outcome) => Self::Finished(Box::new(outcome.result)),
            None => Self::AlreadyAnswered,
        }
    }
}
