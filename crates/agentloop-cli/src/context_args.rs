//! The flags that shape what a run sends of its tools and tool results:
//! tool search, tool output budgets and the clearing of old results.

use agentloop_types::{ClearToolResults, ContextOptions};

/// Tool search and context budgets, shared by the commands that run an
/// agent.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ContextArgs {
    /// Offer the tools as an index and a `tool_search` tool when more
    /// than N are offered; the definitions of the tools the model finds
    /// are sent from then on (default: every definition every turn).
    #[arg(long, value_name = "N")]
    pub tool_search_threshold: Option<u32>,
    /// Send a tool result of more than TOKENS estimated tokens (characters
    /// / 4) shortened, with a note on reading the rest through
    /// `read_tool_result`; the run's log keeps it whole.
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u32).range(1..))]
    pub tool_output_budget: Option<u32>,
    /// Once a request passes half of the model's context window (known
    /// from the model table), send older tool results (all but the last
    /// three turns') as a note on reading them through `read_tool_result`.
    #[arg(long)]
    pub clear_tool_results: bool,
}

impl ContextArgs {
    /// The run options these flags ask for.
    pub fn options(&self) -> ContextOptions {
        ContextOptions {
            tool_search_threshold: self.tool_search_threshold,
            tool_output_budget: self.tool_output_budget,
            clear_tool_results: self.clear_tool_results.then(ClearToolResults::default),
            ..ContextOptions::default()
        }
    }
}
