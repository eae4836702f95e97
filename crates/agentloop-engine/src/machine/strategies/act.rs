//! Steps the strategies other than native share: the one-tool act step,
//! the plain answer call, prompts sent and not committed, retrieval.

use agentloop_types::{
    AgentCompletionEvent, AgentErrorEvent, AgentToolCompleteEvent, AgentToolStartEvent,
};
use agentloop_types::{
    BreakLoop, ContentBlock, EventKind, LoopStatus, Message, Passage, ToolResult, ToolResultBlock,
    ToolUseBlock,
};
use serde::{Deserialize, Serialize};

use crate::machine::answers::{ToolOutcome, committed_block, text_of, tool_calls};
use crate::machine::passages::{RETRIEVED_MESSAGE_ID, cite_passages};
use crate::machine::protocol::Step;
use crate::machine::run_core::{Env, RunCore, ToolOffer};

/// An act step whose call is running.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Acting {
    /// The strategy's step.
    pub(crate) step: u32,
    /// The call that runs.
    pub(crate) call: ToolUseBlock,
    /// Results of the turn's later calls, which do not run.
    pub(crate) not_run: Vec<ToolResultBlock>,
}

/// How an act turn went on.
// Returned once per act turn and matched at once: boxing saves nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum ActStart {
    /// The turn called no tool; its text.
    NoCall(String),
    /// Its first call runs.
    Running(Step, Acting),
}

/// Commits an act turn and runs its first call only; later calls get an
/// error result saying they did not run.
pub(crate) fn begin(
    core: &mut RunCore,
    env: &Env,
    step: u32,
    content: Vec<ContentBlock>,
) -> ActStart {
    let text = text_of(&content);
    let calls = tool_calls(&content);
    if !content.is_empty() {
        core.commit(agentloop_types::Role::Assistant, content);
    }
    let Some(first) = calls.first().cloned() else {
        return ActStart::NoCall(text);
    };
    let not_run = calls[1..]
        .iter()
        .map(|c| {
            ToolResultBlock::error(
                &c.id,
                "Not run: one tool runs per step. Call it again in a later step.",
            )
        })
        .collect();
    let next = core.begin_tools(env, &calls, vec![first.clone()]);
    core.emit(EventKind::AgentToolStart(AgentToolStartEvent {
        tool: first.name.clone(),
        step,
    }));
    ActStart::Running(
        next,
        Acting {
            step,
            call: first,
            not_run,
        },
    )
}

/// Commits the act step's result. `Err`: the run ended (the call returned
/// a value).
pub(crate) fn done(
    core: &mut RunCore,
    acting: Acting,
    results: Vec<(String, ToolOutcome)>,
    child_tokens: agentloop_types::TokenTotals,
) -> Result<ToolResult, Step> {
    let Some((id, ordered)) = core.tools_done(results, child_tokens) else {
        return Err(core.invalid("tool results with no calls pending"));
    };
    let Some((call, result)) = ordered.into_iter().next() else {
        return Err(core.invalid("an act step with no call"));
    };
    let mut blocks = vec![committed_block(&call.id, result.clone())];
    blocks.extend(acting.not_run);
    core.commit_tool_results(id, blocks);
    core.emit(EventKind::AgentToolComplete(AgentToolCompleteEvent {
        tool: call.name.clone(),
        result: result.content.clone(),
        step: acting.step,
    }));
    if let Some(BreakLoop::Return { value }) = &result.break_loop {
        core.emit(EventKind::AgentCompletion(AgentCompletionEvent {
            steps: acting.step,
            final_answer: result.content.clone(),
        }));
        return Err(core.finish(LoopStatus::Complete {
            return_value: Some(value.clone()),
            output: None,
        }));
    }
    Ok(result)
}

/// A prompt sent with one call and not committed: `{run_id}-{kind}-prompt`.
pub(crate) fn prompt(core: &RunCore, kind: &str, text: &str) -> Message {
    Message::user_text(format!("{}-{kind}-prompt", core.run_id()), text)
}

/// A plain model call (no tools) after `text`; its turn is the answer.
pub(crate) fn final_call(core: &mut RunCore, env: &Env, text: &str) -> Step {
    let prompt = prompt(core, "final", text);
    core.call_model(env, vec![prompt], ToolOffer::Nothing, true)
}

/// The cited passages as a system message to send with a call.
pub(crate) fn cited(passages: &[Passage]) -> Vec<Message> {
    cite_passages(passages)
        .map(|text| Message::system_text(RETRIEVED_MESSAGE_ID, text))
        .into_iter()
        .collect()
}

/// The passages a retrieval answered with; a failure is reported as
/// `agent_error` and the run goes on without them.
pub(crate) fn retrieved(
    core: &mut RunCore,
    passages: Result<Vec<Passage>, String>,
) -> Vec<Passage> {
    core.take_retrieval(passages.as_deref().unwrap_or_default());
    match passages {
        Ok(passages) => passages,
        Err(message) => {
            core.emit(EventKind::AgentError(AgentErrorEvent { message, step: 1 }));
            Vec::new()
        }
    }
}

/// Trimmed, non-empty text.
pub(crate) fn non_empty(text: Option<String>) -> Option<String> {
    text.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty())
}
