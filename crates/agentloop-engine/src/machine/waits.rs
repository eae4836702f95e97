//! What a tool step that waits for a person keeps between its rounds of
//! calls (the run core's methods over it are in `run_core::waiting`).

use std::collections::{BTreeMap, BTreeSet};

use agentloop_types::{ChildResume, PendingCall, ToolResult};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a tool step that waits, or waited, for a person keeps between its
/// rounds of calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Waiting {
    /// Results of the step's calls that have one, in the order they came.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) done: Vec<(String, ToolResult)>,
    /// Calls that wait for a person.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) pending: Vec<PendingCall>,
    /// Whether the run has ended `suspended` and awaits decisions.
    #[serde(default)]
    pub(crate) suspended: bool,
    /// Calls a person approved, with the arguments they run with.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) approved: BTreeMap<String, Value>,
    /// Approved calls whose arguments a person edited.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) edited: Vec<String>,
    /// Suspended child runs of calls (a minion's, a skill's), by call id,
    /// with the decisions for them once given.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) children: BTreeMap<String, ChildResume>,
    /// What `before_tool_call` hooks decided, by call id, merged with what
    /// `before_subagent` hooks decided about the same call: a call listed
    /// here is never asked about at `before_tool_call` again.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) hooked: BTreeMap<String, ToolVerdict>,
    /// Calls `before_subagent` hooks were asked about: never asked again.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub(crate) subagents_asked: BTreeSet<String>,
    /// Whether `after_tool_call` hooks have seen the step's results.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) reviewed: bool,
    /// Whether `after_subagent` hooks have seen the step's results.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) subagents_reviewed: bool,
}

/// The combined decision of the hooks before one call runs
/// (`before_tool_call`, then `before_subagent`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ToolVerdict {
    /// A hook blocked it: its result is in `done`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) blocked: bool,
    /// A hook holds it for approval, with this reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ask: Option<String>,
    /// The arguments a hook rewrote it to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) arguments: Option<Value>,
    /// Context hooks added, appended to its result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) context: Option<String>,
}

impl Waiting {
    pub(crate) fn has(&self, id: &str) -> bool {
        self.done.iter().any(|(done, _)| done == id)
            || self
                .pending
                .iter()
                .any(|p| p.path.is_root() && p.call.id == id)
            || self
                .children
                .get(id)
                .is_some_and(|c| c.decisions.is_empty())
    }

    /// The result a call already has.
    pub(crate) fn result(&self, id: &str) -> Option<&ToolResult> {
        self.done
            .iter()
            .find(|(done, _)| done == id)
            .map(|(_, r)| r)
    }

    /// Whether the call waits for a person, itself or inside its child run.
    pub(crate) fn waits(&self, id: &str) -> bool {
        self.pending.iter().any(|p| {
            p.path
                .0
                .first()
                .map_or(p.call.id == id, |first| first == id)
        })
    }
}
