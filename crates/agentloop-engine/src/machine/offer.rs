//! Which tools a model call offers (stored with a model call in flight).

use agentloop_types::ToolDefinition;
use serde::{Deserialize, Serialize};

/// Which tools a model call offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "offer", rename_all = "snake_case")]
pub(crate) enum ToolOffer {
    /// The run's offered tools.
    RunTools,
    /// None: a plain answer.
    Nothing,
    /// One control tool of the strategy.
    Control {
        /// Its definition.
        tool: ToolDefinition,
    },
}
