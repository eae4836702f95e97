//! What a run sends of its tools and tool results, beside compaction:
//! tool search (a large tool set offered as an index and a search tool,
//! each tool's definition loaded once found), per-tool output budgets and
//! the clearing of old tool results. Each changes only what requests
//! carry; the stored history stays whole.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The tool the model searches the run's tool index with.
pub const TOOL_SEARCH_TOOL: &str = "tool_search";

/// The tool the model reads a stored tool result with, when what it was
/// sent of it was shortened or cleared.
pub const READ_TOOL_RESULT_TOOL: &str = "read_tool_result";

/// Tool search and context budgets of a run. The default changes nothing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct ContextOptions {
    /// Offer the tools through [`TOOL_SEARCH_TOOL`] and an index of names
    /// and one-line descriptions when more than this many are offered;
    /// `None` always offers every definition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_search_threshold: Option<u32>,
    /// Estimated tokens (characters / 4) of a tool result sent to the
    /// model, for tools without an entry in `tool_output_budgets`; `None`
    /// sends results whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_output_budget: Option<u32>,
    /// Budgets by tool name, over `tool_output_budget`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_output_budgets: BTreeMap<String, u32>,
    /// Clearing of old tool results from requests, before compaction is
    /// needed (takes effect when the run's context window is known).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clear_tool_results: Option<ClearToolResults>,
}

impl ContextOptions {
    /// Whether these are the defaults (nothing changes what is sent).
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// The output budget of `tool`, in estimated tokens.
    pub fn budget_of(&self, tool: &str) -> Option<u32> {
        self.tool_output_budgets
            .get(tool)
            .copied()
            .or(self.tool_output_budget)
    }

    /// Whether the model may be sent a shortened or cleared result, so
    /// that [`READ_TOOL_RESULT_TOOL`] is offered.
    pub fn edits_results(&self) -> bool {
        self.tool_output_budget.is_some()
            || !self.tool_output_budgets.is_empty()
            || self.clear_tool_results.is_some()
    }
}

/// When old tool results are cleared from what a run sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct ClearToolResults {
    /// Clear when the estimated request exceeds this fraction of the
    /// context window (below the compaction threshold to come first).
    pub threshold: f32,
    /// Tool-result messages at the end of the history always sent whole.
    pub keep_last: u32,
}

impl Default for ClearToolResults {
    fn default() -> Self {
        Self {
            threshold: 0.5,
            keep_last: 3,
        }
    }
}

/// What a run changed in what it sends (never in what it stores).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ContextEdit {
    /// Tool search found these tools: their definitions are sent from the
    /// next request on, after the tools sent before.
    ToolsLoaded {
        /// Their names, in the order they are appended.
        tools: Vec<String>,
    },
    /// Results over their tool's budget are sent shortened, with a note
    /// saying how to read the rest.
    ResultsShortened {
        /// The calls whose results are shortened.
        calls: Vec<String>,
    },
    /// Older tool results are sent as a note saying how to read them.
    ResultsCleared {
        /// The calls whose results are cleared, in all.
        calls: u32,
        /// The last history message whose results are cleared.
        through: String,
        /// Estimated tokens of the request before.
        tokens_before: u64,
        /// Estimated tokens of the request after.
        tokens_after: u64,
    },
    /// Passages the retriever found for the latest user message (stored
    /// memories, documents) are sent before it, cited by number.
    PassagesRecalled {
        /// What was searched for: the latest user message's text.
        query: String,
        /// Where each passage comes from, in citation order.
        sources: Vec<String>,
    },
}

/// A run changed what it sends: tools loaded by tool search, results
/// shortened to their budget, older results cleared, passages recalled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ContextEditedEvent {
    /// What changed.
    pub edit: ContextEdit,
}
