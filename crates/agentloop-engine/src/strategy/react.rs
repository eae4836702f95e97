//! ReAct (seed 001): each step reasons, acts with one tool, and observes.
//!
//! - **Reason**: a model call offering only `agent_decide_next` (JSON
//!   fallback for text answers) → `agent_reason`. The decision may finish
//!   (`final_answer`, or `finish: true`), or ask the user (`request_input`:
//!   `agent_request_input`, and the run suspends on a synthetic
//!   `agent_request_input` call; answering it with
//!   [`LoopResult::resume_message`](agentloop_types::LoopResult::resume_message)
//!   and running again resumes).
//! - **Act**: a model call offering the run's tools, with retrieved passages
//!   in cited form; only the first tool call runs (`agent_tool_start`,
//!   `agent_tool_complete`), later calls get a "not run" error result. A turn
//!   with no call is the answer.
//! - **Observe**: a model call offering only `agent_observe_decide` →
//!   `agent_observe`; `final_answer` finishes, `should_continue: false`
//!   finishes with a plain answer call.
//! - With no tools, the first reason step is followed by the answer call.
//!   After `max_steps` steps, one last plain model call answers.
//!
//! Reason and observe turns stream like any turn but are not committed to
//! the history; act turns, tool results and answers are.

use std::sync::Arc;

use agentloop_types::{
    ContentBlock, EventKind, LoopOptions, LoopStatus, Message, Passage, Retriever, Role,
    ToolUseBlock,
};
use serde_json::json;

use super::LoopStrategy;
use super::control::{
    REQUEST_INPUT, decide_next_tool, observe_decide_tool, read_decision, read_observation,
};
use super::ctx::{Ctx, Ended, Flow};
use crate::RunDeps;
use crate::retrieval::{RETRIEVED_MESSAGE_ID, cite_passages, last_user_text};
use crate::run_stream::RunStream;

/// Sent (not committed) before the reason step's model call.
pub const REASON_PROMPT: &str = "Think about the task and the results so far, then call \
agent_decide_next. Set `finish` and `final_answer` when you can answer now, or \
`request_input` to a question when only the user can tell you what you need. If you cannot \
call tools, reply with the same fields as a JSON object.";
/// Sent (not committed) before the act step's model call.
pub const ACT_PROMPT: &str = "Act on your reasoning: call the one tool that moves the task \
forward. If no tool helps, answer the user directly.";
/// Sent (not committed) before the observe step's model call.
pub const OBSERVE_PROMPT: &str = "Look at the last tool result, then call agent_observe_decide: \
say what it shows, set `should_continue` to false when no more steps are needed, and give \
`final_answer` when you have it. If you cannot call tools, reply with the same fields as a JSON \
object.";
/// Sent (not committed) before the last, plain model call.
pub const FINAL_PROMPT: &str = "Give your final answer to the user now, using what you found.";

/// The ReAct strategy; see the module docs.
#[derive(Clone)]
pub struct ReactStrategy {
    /// Reason–act–observe steps before the final plain call.
    pub max_steps: u32,
    /// Retries of a failed model call.
    pub max_retries: u32,
    /// Passages for the act step, if any.
    pub retriever: Option<Arc<dyn Retriever>>,
    /// How many passages to retrieve.
    pub passages: usize,
}

impl Default for ReactStrategy {
    fn default() -> Self {
        Self {
            max_steps: 10,
            max_retries: 2,
            retriever: None,
            passages: 4,
        }
    }
}

impl LoopStrategy for ReactStrategy {
    fn name(&self) -> &str {
        super::REACT
    }

    fn run(&self, options: LoopOptions, context: Vec<Message>, deps: RunDeps) -> RunStream {
        let config = self.clone();
        RunStream::new(move |emitter| async move {
            let mut ctx = Ctx::new(emitter, options, context, deps, config.max_retries);
            let _ = react(&mut ctx, &config).await;
        })
    }
}

async fn react(ctx: &mut Ctx, config: &ReactStrategy) -> Flow<Ended> {
    let max_steps = config.max_steps.max(1);
    ctx.emit(EventKind::AgentStart { max_steps }).await;
    let passages = retrieve(ctx, config.retriever.as_deref(), config.passages).await;
    let has_tools = !ctx.tools.is_empty();
    for step in 1..=max_steps {
        ctx.emit(EventKind::AgentTurnStart { step }).await;
        let reason = prompt(ctx, "reason", REASON_PROMPT);
        let content = ctx
            .model(step, vec![reason], vec![decide_next_tool()])
            .await?;
        let decision = read_decision(&content);
        ctx.emit(EventKind::AgentReason {
            message: decision.message.clone(),
            step,
        })
        .await;
        if let Some(question) = non_empty(decision.request_input) {
            return Ok(request_input(ctx, step, question).await);
        }
        if let Some(answer) = non_empty(decision.final_answer) {
            ctx.commit_answer(&answer).await;
            return Ok(ctx.complete(step, answer).await);
        }
        if decision.finish || !has_tools {
            let answer = ctx.final_answer(step, FINAL_PROMPT).await?;
            return Ok(ctx.complete(step, answer).await);
        }

        let mut extra = Vec::new();
        if let Some(cited) = cite_passages(&passages) {
            extra.push(Message::system_text(RETRIEVED_MESSAGE_ID, cited));
        }
        let act = if decision.message.trim().is_empty() {
            ACT_PROMPT.to_owned()
        } else {
            format!(
                "{ACT_PROMPT}\n\nYour reasoning: {}",
                decision.message.trim()
            )
        };
        extra.push(prompt(ctx, "act", &act));
        let tools = ctx.definitions();
        let content = ctx.model(step, extra, tools).await?;
        let text = text_of(&content);
        if ctx.act(step, content).await?.is_none() {
            let answer = match non_empty(Some(text)) {
                Some(text) => text,
                None => ctx.final_answer(step, FINAL_PROMPT).await?,
            };
            return Ok(ctx.complete(step, answer).await);
        }

        let observe = prompt(ctx, "observe", OBSERVE_PROMPT);
        let content = ctx
            .model(step, vec![observe], vec![observe_decide_tool()])
            .await?;
        let observation = read_observation(&content);
        ctx.emit(EventKind::AgentObserve {
            message: observation.message.clone(),
            step,
        })
        .await;
        if let Some(answer) = non_empty(observation.final_answer) {
            ctx.commit_answer(&answer).await;
            return Ok(ctx.complete(step, answer).await);
        }
        if !observation.should_continue {
            let answer = ctx.final_answer(step, FINAL_PROMPT).await?;
            return Ok(ctx.complete(step, answer).await);
        }
    }
    let answer = ctx.final_answer(max_steps, FINAL_PROMPT).await?;
    Ok(ctx.complete(max_steps, answer).await)
}

/// Suspends on a synthetic call carrying the question.
async fn request_input(ctx: &mut Ctx, step: u32, question: String) -> Ended {
    let call = ToolUseBlock {
        id: format!("{}-input-{step}", ctx.run_id),
        name: REQUEST_INPUT.to_owned(),
        input: json!({ "question": question }),
    };
    ctx.commit(Role::Assistant, vec![ContentBlock::ToolUse(call.clone())])
        .await;
    ctx.emit(EventKind::AgentRequestInput {
        question: question.clone(),
        step,
    })
    .await;
    ctx.finish(LoopStatus::Suspended {
        pending_tool_call: call,
        reason: question,
        other_tool_results: Vec::new(),
    })
    .await
}

/// Passages for the user's latest message; a failure is reported as
/// `agent_error` and the run goes on without them.
pub(crate) async fn retrieve(
    ctx: &mut Ctx,
    retriever: Option<&dyn Retriever>,
    limit: usize,
) -> Vec<Passage> {
    let (Some(retriever), Some(query)) = (retriever, last_user_text(&ctx.messages)) else {
        return Vec::new();
    };
    match retriever.retrieve(&query, limit).await {
        Ok(passages) => passages,
        Err(error) => {
            ctx.emit(EventKind::AgentError {
                message: error.to_string(),
                step: 1,
            })
            .await;
            Vec::new()
        }
    }
}

fn prompt(ctx: &Ctx, kind: &str, text: &str) -> Message {
    Message::user_text(format!("{}-{kind}-prompt", ctx.run_id), text)
}

fn non_empty(text: Option<String>) -> Option<String> {
    text.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty())
}

pub(crate) fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}
