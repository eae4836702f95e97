//! Which run, in a tree of nested runs, something belongs to. Events,
//! pending approvals and tool contexts all carry one.

use serde::{Deserialize, Serialize};

/// Where an event comes from: the tool-call ids that led from the root run
/// to the run that emitted it. Empty for the root (depth 0).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct RunPath(pub Vec<String>);

impl RunPath {
    /// The root run's path.
    pub fn root() -> Self {
        Self::default()
    }

    /// Nesting depth: 0 for the root.
    pub fn depth(&self) -> usize {
        self.0.len()
    }

    /// Whether this is the root run.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// The path of a child run started by tool call `tool_use_id`.
    pub fn child(&self, tool_use_id: &str) -> Self {
        let mut segments = self.0.clone();
        segments.push(tool_use_id.to_owned());
        Self(segments)
    }

    /// This path placed under `prefix`.
    pub fn under(&self, prefix: &RunPath) -> Self {
        let mut segments = prefix.0.clone();
        segments.extend(self.0.iter().cloned());
        Self(segments)
    }
}
