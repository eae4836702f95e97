//! The approval policy of a project's server runs: `ask` (the fs tool's
//! writes and every JavaScript call wait for a person, as the tools
//! declare) or `unattended` (they run without asking: the fs tool is
//! jailed to the project folder and JavaScript is sandboxed, so agents
//! work on inside their folder with no client attached).
//!
//! A project's own setting wins; without one it follows the server's
//! (`ServerConfig::approvals`, `agentloop serve --approvals`). Only the
//! fs and JavaScript tools are covered: other tools (a project's MCP
//! servers, `--minion`) keep their own rule, and a project's per-tool
//! `tool_approvals` wins over the policy, tool by tool.

use std::sync::Arc;

use agentloop_storage::model::{ApprovalMode, Project};
use agentloop_types::{
    ApprovalPolicy, Tool, ToolContext, ToolDefinition, ToolOptionSpec, ToolStream,
};
use serde_json::Value;

use crate::config::ServerConfig;

/// The tools the policy covers: their calls run unattended under it.
pub const COVERED_TOOLS: [&str; 3] = ["fs", "javascript", "shell"];

/// Where a project's effective policy comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicySource {
    /// The project sets it.
    Project,
    /// The project follows the server's default.
    Server,
}

impl PolicySource {
    /// The name the API shows (`approvals_source`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Project => "project",
            Self::Server => "server",
        }
    }
}

/// The policy a project's runs follow, and where it comes from.
pub fn effective(config: &ServerConfig, project: &Project) -> (ApprovalMode, PolicySource) {
    match project.approval_mode {
        Some(mode) => (mode, PolicySource::Project),
        None => (config.approvals, PolicySource::Server),
    }
}

/// `tools` as a run under `mode` gets them: under `unattended`, the
/// covered tools ask for nothing by their own rule.
pub fn apply(mode: ApprovalMode, tools: Vec<Arc<dyn Tool>>) -> Vec<Arc<dyn Tool>> {
    match mode {
        ApprovalMode::Ask => tools,
        ApprovalMode::Unattended => tools
            .into_iter()
            .map(|tool| {
                if COVERED_TOOLS.contains(&tool.name()) {
                    Arc::new(Unattended(tool)) as Arc<dyn Tool>
                } else {
                    tool
                }
            })
            .collect(),
    }
}

/// A tool whose calls need no approval by its own rule (a project's
/// per-tool approvals still apply); everything else is the tool's.
struct Unattended(Arc<dyn Tool>);

impl Tool for Unattended {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn description(&self) -> &str {
        self.0.description()
    }
    fn input_schema(&self) -> Value {
        self.0.input_schema()
    }
    fn options(&self) -> Vec<ToolOptionSpec> {
        self.0.options()
    }
    fn runs_alone(&self) -> bool {
        self.0.runs_alone()
    }
    fn approval(&self) -> ApprovalPolicy {
        ApprovalPolicy::Never
    }
    fn is_skill(&self) -> bool {
        self.0.is_skill()
    }
    fn runs_subagent(&self) -> bool {
        self.0.runs_subagent()
    }
    fn may_write(&self, input: &Value) -> bool {
        self.0.may_write(input)
    }
    fn definition(&self) -> ToolDefinition {
        self.0.definition()
    }
    fn execute(self: Arc<Self>, input: Value, context: ToolContext) -> ToolStream {
        Arc::clone(&self.0).execute(input, context)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_tools::FsTool;
    use agentloop_tools::vfs::MemoryVfs;
    use serde_json::json;

    #[test]
    fn unattended_lifts_the_fs_tools_own_rule_and_ask_keeps_it() {
        let fs: Arc<dyn Tool> = Arc::new(FsTool::new(Arc::new(MemoryVfs::default())));
        let write = json!({ "command": "create", "path": "a", "file_text": "x" });
        let asked = apply(ApprovalMode::Ask, vec![fs.clone()]);
        assert!(asked[0].approval().requires("fs", &write).is_some());
        let unattended = apply(ApprovalMode::Unattended, vec![fs]);
        assert_eq!(unattended[0].approval().requires("fs", &write), None);
        assert_eq!(unattended[0].name(), "fs");
    }

    /// A tool that starts a sub-agent.
    struct Delegating;

    impl Tool for Delegating {
        fn name(&self) -> &str {
            "delegate"
        }
        fn description(&self) -> &str {
            "Starts a sub-agent."
        }
        fn input_schema(&self) -> Value {
            json!({ "type": "object" })
        }
        fn runs_subagent(&self) -> bool {
            true
        }
        fn execute(self: Arc<Self>, _input: Value, _context: ToolContext) -> ToolStream {
            agentloop_types::single_result(async { agentloop_types::ToolResult::ok("done") })
        }
    }

    #[test]
    fn unattended_keeps_the_sub_agent_mark() {
        let unattended = apply(ApprovalMode::Unattended, vec![Arc::new(Delegating)]);
        assert!(unattended[0].runs_subagent());
    }
}
