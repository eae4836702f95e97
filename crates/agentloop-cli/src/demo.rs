//! The shipped demo conversation (`examples/demo.json`), played by
//! `agentloop run --demo` and by `run` when no provider is configured: a
//! scripted model that thinks, streams text, lists the tool root with the
//! fs tool and answers, with a cost line, without a key or a network.
//! `serve --demo` plays the agents' conversations (`examples/demo-agents.json`).

use std::sync::Arc;

use agentloop_types::ApiKind;

use crate::demo_model::DemoModel;
use crate::out::Failure;
use crate::providers::{self, Chosen};

/// The scripts, built into the binary so the demo runs from any folder.
const SCRIPT: &str = include_str!("../../../examples/demo.json");
const AGENT_SCRIPTS: &str = include_str!("../../../examples/demo-agents.json");

/// The question the demo answers when none is given.
pub const PROMPT: &str = "What is in this folder?";

/// The tools the demo offers when `--tools` names none.
pub const TOOLS: &[&str] = &["fs"];

/// What stderr says before a demo plays.
pub const NOTICE: &str = "this is a demo: a scripted conversation (examples/demo.json), no model \
is called. To use a real model, set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY (or \
OPENAI_BASE_URL for a local server) and run: agentloop run \"your question\" --tools fs";

/// What `serve --demo` logs when it starts.
pub const SERVE_NOTICE: &str = "every run plays the shipped demo conversations \
(examples/demo-agents.json): the implementation agent writes agentloop-demo.md in its project \
folder, the review agent reads it and completes the task, a planification agent asks you a \
question; no model is called. To use a real model, set ANTHROPIC_API_KEY, OPENAI_API_KEY or \
GEMINI_API_KEY (or OPENAI_BASE_URL) and start agentloop serve without --demo";

/// Whether `run` plays the demo: asked for, or nothing else configured.
pub fn wanted(asked: bool, provider: Option<&str>, base_url: Option<&str>) -> bool {
    asked || (provider.is_none() && base_url.is_none() && !providers::configured_in_env())
}

/// The provider playing the demo: every prompt of a chat plays it again,
/// and each server agent run plays its agent's conversation.
pub fn provider(model: Option<&str>) -> Result<Chosen, Failure> {
    let demo = DemoModel::from_json(
        ("examples/demo.json", SCRIPT),
        ("examples/demo-agents.json", AGENT_SCRIPTS),
    )
    .map_err(|e| Failure::Runtime(e.to_string()))?;
    Ok(Chosen {
        provider: Arc::new(demo),
        api: ApiKind::AnthropicMessages,
        model: model.map_or_else(|| "scripted".to_owned(), str::to_owned),
        context_window: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_scripts_parse() {
        assert!(provider(None).is_ok());
    }
}
