//! The `AgentRun` workflow: one workflow per agent run, keyed by the run's
//! id. Its `run` handler asks the [`RunHost`] for the run's steps, each a
//! journaled `ctx.run`, until the run ends or waits for a person.
//!
//! Every journal entry is the same kind of entry (a step named `step`),
//! and each step starts from where the run's record stands: a replay
//! returns the journaled answers of the steps that committed, and the
//! first step that did not (its worker died) is executed again, from the
//! last state the runtime committed. That re-execution follows the
//! runtime's recovery rule: calls that were started and not answered are
//! answered as interrupted, unless the tool declares itself safe to retry.
use std::sync::Arc;
use std::time::Duration;

use restate_sdk::prelude::*;

use crate::host::{RunHost, Step};

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
}

/// A step that did not commit is tried again for as long as it takes
/// (a worker may be down for a while), never more slowly than every 2 s.
fn step_retries() -> RunRetryPolicy {
    RunRetryPolicy::new()
        .initial_delay(Duration::from_millis(100))
        .exponentiation_factor(2.0)
        .max_delay(Duration::from_secs(2))
}

#[restate_sdk::workflow(name = "AgentRun", client_visibility = "pub(crate)")]
impl AgentRunWorkflow {
    /// Executes the run to its end, or until it waits for a person;
    /// answers `ended` or `waiting`.
    #[handler]
    async fn run(&self, ctx: WorkflowContext<'_>) -> Result<String, HandlerError> {
        let run_id = ctx.key().to_owned();
        loop {
            let host = self.host.clone();
            let id = run_id.clone();
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
                Step::Continue => {}
                Step::Ended => return Ok("ended".to_owned()),
                Step::Waiting => return Ok("waiting".to_owned()),
            }
        }
    }
}
