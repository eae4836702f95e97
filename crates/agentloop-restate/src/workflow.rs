//! The `AgentRun` workflow: one workflow per agent run, keyed by the run's
//! id. Its `run` handler asks the [`RunHost`] for the run's steps, each a
//! journaled `ctx.run`, until the run ends.
//!
//! Every step entry is the same kind of entry (a step named `step`), and
//! each step starts from where the run's record stands: a replay returns
//! the journaled answers of the steps that committed, and the first step
//! that did not (its worker died) is executed again, from the last state
//! the runtime committed. That re-execution follows the runtime's
//! recovery rule: calls that were started and not answered are answered
//! as interrupted, unless the tool declares itself safe to retry.
//!
//! A run that waits for a person parks the workflow on a durable promise
//! named after the wait (`wake:<wait>`, see [`Step::Waiting`]); the
//! decisions route resolves it through the shared `wake` handler once the
//! last decision is recorded. The promise lives in Restate, so a decision
//! taken after every process restarted still resumes the run. A slow
//! timer (5 s, doubling up to 5 min) looks at the run again in case a
//! wake was lost (the instance taking the decision died between
//! recording it and waking the workflow).
//!
//! Inputs for a run (decisions, a message, a cancel, Mark Done) can also
//! come through Restate's ingress: the shared `submit` handler takes an
//! `agentloop_types::RunInput` and hands it to the host, which submits it
//! as its API would.
//!
//! Restate's cancellation (the cancel and Mark Done routes send it, as
//! can Restate's UI or CLI) stops the workflow at its next step or while
//! it waits; a last journaled step (`stop`) then makes sure the run's end
//! is logged, so Restate neither retries the run nor leaves it open.
use std::sync::Arc;
use std::time::Duration;

use restate_sdk::prelude::*;

use agentloop_types::RunInput;

use crate::host::{Refused, RunHost, Step};

/// The workflow a Restate-hosted agent run is (service `AgentRun`, keyed
/// by the run's id), over a [`RunHost`].
#[derive(Clone)]
pub struct AgentRunWorkflow {
    host: Arc<dyn RunHost>,
}

impl AgentRunWorkflow {
    /// The workflow executing its steps through `host`.
    pub fn new(host: Arc<dyn RunHost>) -> Self {
        Self { host }
    }

    /// Executes the run's steps until it ends; Restate's cancellation
    /// comes out as a terminal error with code 409.
    async fn drive(&self, ctx: &WorkflowContext<'_>, run_id: &str) -> Result<(), TerminalError> {
        // The wait whose wake-up was received: a run found waiting on it
        // again (a wake that came before its run could go on) is looked
        // at again on the timer only.
        let mut woken: Option<String> = None;
        let mut recheck = FIRST_RECHECK;
        loop {
            let host = self.host.clone();
            let id = run_id.to_owned();
            let step = ctx
                .run(|| async move {
                    let step = host.step(&id).await.map_err(HandlerError::from)?;
                    Ok(Json(step))
                })
                .name("step")
                .retry_policy(step_retries())
                .await?
                .into_inner();
            match step {
                Step::Continue => {
                    woken = None;
                    recheck = FIRST_RECHECK;
                }
                Step::Ended => return Ok(()),
                Step::Waiting { wait } => {
                    if woken.as_deref() == Some(wait.as_str()) {
                        ctx.sleep(recheck).await?;
                    } else {
                        let name = wake_promise(&wait);
                        restate_sdk::select! {
                            _ = ctx.promise::<String>(&name) => { woken = Some(wait); },
                            _ = ctx.sleep(recheck) => {},
                        }
                    }
                    recheck = (recheck * 2).min(LAST_RECHECK);
                }
            }
        }
    }
}

/// The first wait before a waiting run is looked at again without a wake.
const FIRST_RECHECK: Duration = Duration::from_secs(5);
/// The longest.
const LAST_RECHECK: Duration = Duration::from_secs(300);

/// The durable promise a run waiting on `wait` is woken by.
fn wake_promise(wait: &str) -> String {
    format!("wake:{wait}")
}

/// A step that did not commit is tried again for as long as it takes
/// (a worker may be down for a while), never more slowly than every 2 s.
fn step_retries() -> RunRetryPolicy {
    RunRetryPolicy::new()
        .initial_delay(Duration::from_millis(100))
        .exponentiation_factor(2.0)
        .max_delay(Duration::from_secs(2))
}

/// The status code of Restate's cancellation.
const CANCELLED: u16 = 409;

#[restate_sdk::workflow(name = "AgentRun", client_visibility = "pub(crate)")]
impl AgentRunWorkflow {
    /// Executes the run to its end; answers `ended`, or `cancelled` when
    /// Restate cancelled the workflow (the run's end is logged either
    /// way).
    #[handler]
    async fn run(&self, ctx: WorkflowContext<'_>) -> Result<String, HandlerError> {
        let run_id = ctx.key().to_owned();
        match self.drive(&ctx, &run_id).await {
            Ok(()) => Ok("ended".to_owned()),
            Err(error) if error.code() == CANCELLED => {
                let host = self.host.clone();
                ctx.run(|| async move {
                    host.stop(&run_id).await.map_err(HandlerError::from)?;
                    Ok(())
                })
                .name("stop")
                .retry_policy(step_retries())
                .await?;
                Ok("cancelled".to_owned())
            }
            Err(error) => Err(error.into()),
        }
    }

    /// Takes an input for the run (`agentloop_types::RunInput`: decisions,
    /// a message, a cancel, Mark Done) through Restate's ingress, as the
    /// host's API takes it for the run, and answers what it did. The
    /// submission is one journaled step, so a retried invocation does not
    /// submit twice; an input the host refuses ends the invocation with
    /// the host's status and reason.
    #[handler]
    async fn submit(
        &self,
        ctx: SharedWorkflowContext<'_>,
        input: Json<RunInput>,
    ) -> Result<Json<serde_json::Value>, HandlerError> {
        let run_id = ctx.key().to_owned();
        let host = self.host.clone();
        let input = input.into_inner();
        let answer = ctx
            .run(|| async move {
                match host.submit(&run_id, input).await {
                    Ok(answer) => Ok(Json(answer)),
                    Err(Refused::Input { status, message }) => {
                        Err(TerminalError::new_with_code(status, message).into())
                    }
                    Err(Refused::Failed(message)) => Err(HandlerError::from(message)),
                }
            })
            .name("submit")
            .retry_policy(step_retries())
            .await?;
        Ok(answer)
    }

    /// Wakes the run waiting on `wait` (a person decided every call it
    /// waits on). Waking a wait that is over, or twice, changes nothing.
    #[handler]
    async fn wake(&self, ctx: SharedWorkflowContext<'_>, wait: String) -> Result<(), HandlerError> {
        ctx.resolve_promise::<String>(&wake_promise(&wait), wait);
        Ok(())
    }
}
