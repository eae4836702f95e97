//! [`RunHost`]: what a Restate workflow asks of the process that executes
//! agent runs. The workflow knows Restate and nothing of HTTP or of a
//! run's task; the host knows how to execute one step of a run from where
//! its record stands (the server implements it over its run lifecycle,
//! and the binary hands it to [`crate::AgentRunWorkflow`]).

use agentloop_types::RunInput;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// Where a run stands after one step a host executed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// The step committed and the run goes on: the workflow asks for the
    /// next one.
    Continue,
    /// The run ended (its terminal event and record are written).
    Ended,
    /// The run waits for a person; nothing more runs until they decide.
    Waiting {
        /// Names this wait: the same for every attempt that finds the run
        /// waiting on the same calls, different from any other wait of
        /// the run. The decisions route wakes the workflow by this name
        /// ([`crate::RestateClient::wake`]).
        wait: String,
    },
}

/// Executes runs one step at a time, each step from where the run's
/// record stands (so a step retried after its worker died goes on from
/// the last committed one).
#[async_trait]
pub trait RunHost: Send + Sync + 'static {
    /// Executes the next step of run `run_id`. An error means the step did
    /// not commit and is tried again (Restate retries it, here or on
    /// another worker).
    async fn step(&self, run_id: &str) -> Result<Step, String>;

    /// Ends run `run_id`, whose workflow Restate cancelled: a run still
    /// active is cancelled as a person's cancel would (a cancel from
    /// Restate's own UI or CLI), and the answer is `Ok` once the run's end
    /// is logged. An error is tried again.
    async fn stop(&self, run_id: &str) -> Result<(), String>;

    /// Submits `input` to run `run_id` (a person's decisions, a message, a
    /// cancel, Mark Done), as the host's own API would take it for the
    /// run: what it did, as JSON, or why it was not taken.
    async fn submit(&self, run_id: &str, input: RunInput) -> Result<serde_json::Value, Refused>;
}

/// Why a host did not take an input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The input does not fit the run as it stands (`status` is the
    /// host's HTTP status for it, 4xx): the caller is told, and it is not
    /// tried again.
    Input {
        /// The host's status for the refusal.
        status: u16,
        /// Why, for the caller.
        message: String,
    },
    /// The host failed (its store): tried again.
    Failed(String),
}
