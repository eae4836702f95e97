//! What a hook step keeps while the hooks answer (the run core's methods
//! over it are in `run_core::hooks`).

use agentloop_types::{HookInput, HookPoint, StopReason};
use serde::{Deserialize, Serialize};

use super::compaction::PlannedCompaction;
use super::offer::ToolOffer;
use super::protocol::Step;

/// Which hook points a run asks at, and how often `run_end` hooks may
/// send it back to the model.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct HookConfig {
    pub(crate) points: Vec<HookPoint>,
    pub(crate) max_continues: u32,
}

impl HookConfig {
    pub(crate) fn wants(&self, point: HookPoint) -> bool {
        self.points.contains(&point)
    }
}

/// What the core was about to do when it asked the hooks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "stage", rename_all = "snake_case")]
pub(crate) enum HookStage {
    /// Start the strategy.
    Start,
    /// Send the model call in flight.
    ModelCall,
    /// Compact the request of the model call in flight as planned, then
    /// send it.
    Compaction { plan: PlannedCompaction },
    /// Plan the tool step's calls.
    Tools,
    /// Hand the tool step's results to the strategy.
    Results,
    /// Complete with this answer.
    End {
        text: String,
        /// The validated structured output, when the run has an output
        /// schema: the run completes with it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<serde_json::Value>,
        stop_reason: StopReason,
        retry: ToolOffer,
    },
}

/// A hook step in flight: its moments and what comes after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PendingHook {
    #[serde(flatten)]
    pub(crate) stage: HookStage,
    pub(crate) requests: Vec<HookInput>,
}

/// What comes after the hooks answered, when it is not the core's to do.
pub(crate) enum AfterHooks {
    /// This step.
    Step(Step),
    /// The strategy starts.
    StartStrategy,
    /// The tool step's results go to the strategy (through
    /// `settle_tools`).
    Settle,
}
