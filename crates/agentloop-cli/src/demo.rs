//! The shipped demo conversation (`examples/demo.json`), played by
//! `agentloop run --demo` and by `run` when no provider is configured: a
//! scripted model that thinks, streams text, lists the tool root with the
//! fs tool and answers, with a cost line, without a key or a network.

use crate::out::Failure;
use crate::providers::{self, Chosen};

/// The script, built into the binary so the demo runs from any folder.
const SCRIPT: &str = include_str!("../demo.json");

/// The question the demo answers when none is given.
pub const PROMPT: &str = "What is in this folder?";

/// The tools the demo offers when `--tools` names none.
pub const TOOLS: &[&str] = &["fs"];

/// What stderr says before a demo plays.
pub const NOTICE: &str = "this is a demo: a scripted conversation (examples/demo.json), no model \
is called. To use a real model, set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY (or \
OPENAI_BASE_URL for a local server) and run: agentloop run \"your question\" --tools fs";

/// What `serve --demo` logs when it starts.
pub const SERVE_NOTICE: &str = "every run plays the shipped demo conversation \
(examples/demo.json); no model is called. To use a real model, set ANTHROPIC_API_KEY, \
OPENAI_API_KEY or GEMINI_API_KEY (or OPENAI_BASE_URL) and start agentloop serve without --demo";

/// Whether `run` plays the demo: asked for, or nothing else configured.
pub fn wanted(asked: bool, provider: Option<&str>, base_url: Option<&str>) -> bool {
    asked || (provider.is_none() && base_url.is_none() && !providers::configured_in_env())
}

/// The scripted provider playing the demo.
pub fn provider(model: Option<&str>) -> Result<Chosen, Failure> {
    // Tool call ids must be unique within a chat, and a continued chat
    // plays the demo again.
    let script = SCRIPT.replace(
        "toolu_demo_1",
        &agentloop_runtime::ids::new_id("toolu_demo"),
    );
    providers::scripted(&script, "examples/demo.json", model.map(str::to_owned))
}
