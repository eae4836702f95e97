//! The small strategies: `native` (the engine loop, optionally with
//! retrieved passages), `llm-only` and `tool-first`.

use std::sync::Arc;

use agentloop_types::{EventKind, LoopOptions, Message, Retriever};

use super::LoopStrategy;
use super::ctx::{Ctx, Ended, Flow};
use super::react::{FINAL_PROMPT, retrieve, text_of};
use crate::retrieval::{RETRIEVED_MESSAGE_ID, cite_passages, inject_passages};
use crate::{RunDeps, RunStream, run};

/// The engine's own loop. Without a retriever it is exactly
/// [`run`](crate::run); with one, the cited passages for the user's latest
/// message are inserted before it (so they reach the first model step) and
/// the loop runs as usual.
#[derive(Clone)]
pub struct NativeStrategy {
    /// Passages for the first step, if any.
    pub retriever: Option<Arc<dyn Retriever>>,
    /// How many passages to retrieve.
    pub passages: usize,
}

impl Default for NativeStrategy {
    fn default() -> Self {
        Self {
            retriever: None,
            passages: 4,
        }
    }
}

impl LoopStrategy for NativeStrategy {
    fn name(&self) -> &str {
        super::NATIVE
    }

    fn run(&self, options: LoopOptions, context: Vec<Message>, deps: RunDeps) -> RunStream {
        let Some(retriever) = self.retriever.clone() else {
            return run(options, context, deps);
        };
        let limit = self.passages;
        RunStream::new(move |emitter| async move {
            let mut ctx = Ctx::new(emitter, options.clone(), context, deps.clone(), 0);
            let passages = retrieve(&mut ctx, Some(retriever.as_ref()), limit).await;
            let context = inject_passages(ctx.messages.clone(), &passages);
            let result = ctx.forward(run(options, context, deps)).await;
            ctx.messages = result.messages;
            ctx.finish(result.status).await;
        })
    }
}

/// One plain model call, no tools: `agent_start`, `agent_turn_start`, the
/// turn, `agent_completion`.
#[derive(Clone)]
pub struct LlmOnlyStrategy {
    /// Passages for the call, if any.
    pub retriever: Option<Arc<dyn Retriever>>,
    /// How many passages to retrieve.
    pub passages: usize,
    /// Retries of a failed model call.
    pub max_retries: u32,
}

impl Default for LlmOnlyStrategy {
    fn default() -> Self {
        Self {
            retriever: None,
            passages: 4,
            max_retries: 2,
        }
    }
}

impl LoopStrategy for LlmOnlyStrategy {
    fn name(&self) -> &str {
        super::LLM_ONLY
    }

    fn run(&self, options: LoopOptions, context: Vec<Message>, deps: RunDeps) -> RunStream {
        let config = self.clone();
        RunStream::new(move |emitter| async move {
            let mut ctx = Ctx::new(emitter, options, context, deps, config.max_retries);
            let _ = llm_only(&mut ctx, &config).await;
        })
    }
}

async fn llm_only(ctx: &mut Ctx, config: &LlmOnlyStrategy) -> Flow<Ended> {
    ctx.emit(EventKind::AgentStart { max_steps: 1 }).await;
    let extra = cited(ctx, config.retriever.as_deref(), config.passages).await;
    ctx.emit(EventKind::AgentTurnStart { step: 1 }).await;
    let content = ctx.model(1, extra, Vec::new()).await?;
    let answer = ctx.commit_answer_turn(content).await;
    Ok(ctx.complete(1, answer).await)
}

/// One act step whose first tool call runs, then a plain answer call
/// (two steps). A first turn with no call is the answer.
#[derive(Clone)]
pub struct ToolFirstStrategy {
    /// Passages for the act step, if any.
    pub retriever: Option<Arc<dyn Retriever>>,
    /// How many passages to retrieve.
    pub passages: usize,
    /// Retries of a failed model call.
    pub max_retries: u32,
}

impl Default for ToolFirstStrategy {
    fn default() -> Self {
        Self {
            retriever: None,
            passages: 4,
            max_retries: 2,
        }
    }
}

impl LoopStrategy for ToolFirstStrategy {
    fn name(&self) -> &str {
        super::TOOL_FIRST
    }

    fn run(&self, options: LoopOptions, context: Vec<Message>, deps: RunDeps) -> RunStream {
        let config = self.clone();
        RunStream::new(move |emitter| async move {
            let mut ctx = Ctx::new(emitter, options, context, deps, config.max_retries);
            let _ = tool_first(&mut ctx, &config).await;
        })
    }
}

async fn tool_first(ctx: &mut Ctx, config: &ToolFirstStrategy) -> Flow<Ended> {
    ctx.emit(EventKind::AgentStart { max_steps: 2 }).await;
    let extra = cited(ctx, config.retriever.as_deref(), config.passages).await;
    ctx.emit(EventKind::AgentTurnStart { step: 1 }).await;
    let tools = ctx.definitions();
    let content = ctx.model(1, extra, tools).await?;
    let text = text_of(&content);
    if ctx.act(1, content).await?.is_none() {
        let answer = if text.trim().is_empty() {
            ctx.final_answer(1, FINAL_PROMPT).await?
        } else {
            text
        };
        return Ok(ctx.complete(1, answer).await);
    }
    ctx.emit(EventKind::AgentTurnStart { step: 2 }).await;
    let answer = ctx.final_answer(2, FINAL_PROMPT).await?;
    Ok(ctx.complete(2, answer).await)
}

/// The cited passages as a system message to send with a call.
async fn cited(ctx: &mut Ctx, retriever: Option<&dyn Retriever>, limit: usize) -> Vec<Message> {
    let passages = retrieve(ctx, retriever, limit).await;
    cite_passages(&passages)
        .map(|text| Message::system_text(RETRIEVED_MESSAGE_ID, text))
        .into_iter()
        .collect()
}
