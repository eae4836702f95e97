//! The shipped demo conversation (`examples/demo.json`), played by
//! `agentloop run --demo` and by `run` when no provider is configured: a
//! scripted model that thinks, streams text, lists the tool root with the
//! fs tool and answers, with its token counts (no cost: no model is
//! called), without a key or a network.
//! `serve --demo` plays the agents' conversations (`examples/demo-agents.json`).

use std::sync::Arc;

use crate::demo_model::DemoModel;
use crate::out::Failure;
use crate::providers::{self, Chosen};

/// The scripts, built into the binary so the demo runs from any folder
/// (links to `examples/`, inside the package).
const SCRIPT: &str = include_str!("../demo.json");
const AGENT_SCRIPTS: &str = include_str!("../demo-agents.json");

/// The question the demo answers when none is given.
pub const PROMPT: &str = "What is in this folder?";

/// The tools the demo offers when `--tools` names none.
pub const TOOLS: &[&str] = &["fs"];

/// What stderr says before a demo plays.
pub const NOTICE: &str = "this is a demo: a scripted conversation (examples/demo.json), no model \
is called. To use a real model, set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY (or \
OPENAI_BASE_URL for a local server), or pass --local for a small model on this machine with no key \
(built once by `bash scripts/local-model.sh build`), and run: agentloop run \"your question\" \
--tools fs";

/// What `serve --demo` logs when it starts.
#[cfg(feature = "server")]
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
        model: model.map_or_else(|| "scripted".to_owned(), str::to_owned),
        context_window: None,
        max_tokens: agentloop_providers::KNOWN_MODEL_MAX_TOKENS,
    })
}

/// What stderr says before the demo plays in place of a question, as
/// `run` does when no provider is configured.
pub const IN_PLACE_NOTICE: &str = "no model provider is configured, so your question goes to no \
model: the shipped demo (examples/demo.json, a scripted conversation) plays in its place";

/// What stderr says after the demo played in place of a question: the
/// next steps (the demo again, the local model, a key), and for a script
/// (`for_a_script`: stdout is not a terminal) why it exits 2.
pub fn after_question(for_a_script: bool) -> String {
    let keys = crate::keys::path().map_or_else(
        |_| "keys.env beside the configuration file".to_owned(),
        |path| path.display().to_string(),
    );
    let exit = if for_a_script {
        " (exit code 2: stdout is not a terminal, so a script does not take the demo for an \
         answer)"
    } else {
        ""
    };
    format!(
        "that was the demo, not an answer to your question{exit}. Next: `--demo` plays it \
         again, with no question; `--local` asks a small model on this machine with no key (build it \
         once with `bash scripts/local-model.sh build` in a clone of agentloop); or set \
         ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY (in the environment, or as \
         NAME=value in {keys}, mode 600), or point OPENAI_BASE_URL (or --base-url) at an \
         OpenAI-compatible server such as Ollama, then ask again (`agentloop info` shows the \
         provider found)"
    )
}

/// Refuses what a playing demo cannot honour: a model (`origin` says
/// where it was asked for), a strategy other than native, an output
/// schema. `asked`: the demo is played because `--demo` said so (clap
/// refuses `--model` and the like beside it; a model of the
/// configuration or the environment is then not for the demo).
pub fn refuse_unhonoured(
    asked: bool,
    model: Option<(&str, &str)>,
    strategy: &str,
    output_schema: bool,
) -> Result<(), Failure> {
    let (why, fix) = if asked {
        (
            "--demo plays a fixed script, which",
            "leave out --demo to use a configured provider",
        )
    } else {
        (
            "no model provider is configured, so the shipped demo would play, and it",
            "configure a provider (ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY, or \
             OPENAI_BASE_URL / --base-url for an OpenAI-compatible server)",
        )
    };
    if let Some((model, origin)) = model.filter(|_| !asked) {
        return Err(Failure::usage(format!(
            "{origin} asks for the model {:?}, but {why} calls no model; {fix}, or leave out \
             the model to watch the demo",
            crate::out::sanitize(model)
        )));
    }
    if strategy != agentloop_engine::strategy::NATIVE {
        return Err(Failure::usage(format!(
            "the {strategy} strategy is asked for, but {why} is scripted for the native one; \
             {fix}, or leave out the strategy to watch the demo"
        )));
    }
    if output_schema {
        return Err(Failure::usage(format!(
            "--output-schema asks for a value of its own shape, but {why} cannot give one; {fix}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_scripts_parse() {
        assert!(provider(None).is_ok());
    }
}
