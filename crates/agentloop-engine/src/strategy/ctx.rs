//! What strategies share: one run's history, totals and emitter, and the
//! steps every strategy is made of (a model call with retries, a one-tool
//! act step, a final plain call, forwarding a nested native run).
//!
//! Every helper that ends the run emits the terminal `finished` event itself
//! and returns [`Ended`], so strategy code propagates it with `?` and a run
//! always ends with exactly one terminal event.

use std::sync::Arc;

use agentloop_types::{
    BreakLoop, ContentBlock, EventKind, LoopError, LoopOptions, LoopResult, LoopStatus, Message,
    ModelRequest, Role, TokenTotals, Tool, ToolDefinition, ToolResult, ToolResultBlock,
    ToolUseBlock, validate_history,
};
use futures::StreamExt;

use crate::RunDeps;
use crate::driver::{generate_run_id, offered_tools};
use crate::machine::{Input, committed_block, exceeded_limit, running_block, tool_calls};
use crate::model_turn::model_turn;
use crate::run_stream::{Emitter, RunStream};
use crate::tool_exec::ToolRun;

/// The run has emitted its terminal event.
pub(crate) struct Ended;

/// A step that may end the run.
pub(crate) type Flow<T> = Result<T, Ended>;

/// One strategy run in progress.
pub(crate) struct Ctx {
    emitter: Emitter,
    pub(crate) options: LoopOptions,
    pub(crate) deps: RunDeps,
    /// Tools offered, narrowed by `enabled_tools`.
    pub(crate) tools: Vec<Arc<dyn Tool>>,
    /// The history: the context, then every committed message.
    pub(crate) messages: Vec<Message>,
    pub(crate) totals: TokenTotals,
    pub(crate) run_id: String,
    /// Retries of a failed model call before the run ends with `error`.
    pub(crate) max_retries: u32,
    iteration: u32,
    created: u32,
}

impl Ctx {
    pub(crate) fn new(
        emitter: Emitter,
        options: LoopOptions,
        context: Vec<Message>,
        deps: RunDeps,
        max_retries: u32,
    ) -> Self {
        let tools = offered_tools(&deps, &options);
        let run_id = deps.run_id.clone().unwrap_or_else(generate_run_id);
        Self {
            emitter,
            options,
            deps,
            tools,
            messages: context,
            totals: TokenTotals::default(),
            run_id,
            max_retries,
            iteration: 0,
            created: 0,
        }
    }

    pub(crate) async fn emit(&mut self, kind: EventKind) {
        self.emitter.emit(kind).await;
    }

    pub(crate) fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools.iter().map(|t| t.definition()).collect()
    }

    fn next_id(&mut self) -> String {
        self.created += 1;
        format!("{}-{}", self.run_id, self.created)
    }

    /// Appends a message to the history and reports it.
    pub(crate) async fn commit(&mut self, role: Role, content: Vec<ContentBlock>) -> Message {
        let message = Message::new(self.next_id(), role, content);
        self.messages.push(message.clone());
        self.emit(EventKind::MessageCreated {
            message: message.clone(),
        })
        .await;
        message
    }

    /// Emits the terminal event.
    pub(crate) async fn finish(&mut self, status: LoopStatus) -> Ended {
        let result = LoopResult {
            status,
            messages: self.messages.clone(),
            tokens: self.totals,
        };
        self.emit(EventKind::Finished { result }).await;
        Ended
    }

    /// Reports the answer and completes the run.
    pub(crate) async fn complete(&mut self, steps: u32, final_answer: String) -> Ended {
        self.emit(EventKind::AgentCompletion {
            steps,
            final_answer,
        })
        .await;
        self.finish(LoopStatus::Complete { return_value: None })
            .await
    }

    /// One model call over the history plus `extra` (sent, not committed),
    /// offering `tools`. A failed call is reported as `agent_error` and
    /// retried up to `max_retries` times.
    pub(crate) async fn model(
        &mut self,
        step: u32,
        extra: Vec<Message>,
        tools: Vec<ToolDefinition>,
    ) -> Flow<Vec<ContentBlock>> {
        let mut messages = self.messages.clone();
        messages.extend(extra);
        if let Err(error) = validate_history(&messages, false) {
            let error = LoopError::InvalidHistory { error };
            return Err(self.finish(LoopStatus::Error { error }).await);
        }
        let mut failures = 0;
        loop {
            if self.deps.cancel.is_cancelled() {
                return Err(self.finish(LoopStatus::Cancelled).await);
            }
            if let Some(status) = self.over_limit() {
                return Err(self.finish(status).await);
            }
            self.iteration += 1;
            let request = ModelRequest {
                options: self.options.clone(),
                messages: messages.clone(),
                tools: tools.clone(),
                attachments: self.deps.attachments.clone(),
            };
            let provider = self.deps.provider.clone();
            let cancel = self.deps.cancel.clone();
            let input = model_turn(
                provider.as_ref(),
                request,
                self.iteration,
                &cancel,
                &mut self.emitter,
            )
            .await;
            let error = match input {
                Input::ModelTurn { content, usage, .. } => {
                    self.totals += usage;
                    self.emit(EventKind::TokensConsumed { tokens: usage }).await;
                    return Ok(content);
                }
                Input::ModelFailed { error } => error,
                Input::Cancelled { .. } | Input::Start | Input::ToolsDone { .. } => {
                    return Err(self.finish(LoopStatus::Cancelled).await);
                }
            };
            if failures < self.max_retries {
                failures += 1;
                let message = format!("{error} (retry {failures} of {})", self.max_retries);
                self.emit(EventKind::AgentError { message, step }).await;
                continue;
            }
            self.emit(EventKind::AgentError {
                message: error.to_string(),
                step,
            })
            .await;
            return Err(self.finish(LoopStatus::Error { error }).await);
        }
    }

    /// The status that ends the run before another model call, if a limit
    /// of the options is reached: `max_iterations` counts every model call
    /// of the strategy; `limits` apply as in the native loop.
    fn over_limit(&self) -> Option<LoopStatus> {
        if self.iteration >= self.options.max_iterations {
            return Some(LoopStatus::MaxIterations);
        }
        exceeded_limit(&self.options.limits, self.iteration, &self.totals)
            .map(|limit| LoopStatus::LimitExceeded { limit })
    }

    /// Commits an act turn and runs its first tool call only; later calls
    /// get an error result saying they did not run. `None` when the turn
    /// called no tool.
    pub(crate) async fn act(
        &mut self,
        step: u32,
        content: Vec<ContentBlock>,
    ) -> Flow<Option<(ToolUseBlock, ToolResult)>> {
        let calls = tool_calls(&content);
        if !content.is_empty() {
            self.commit(Role::Assistant, content).await;
        }
        let Some(first) = calls.first().cloned() else {
            return Ok(None);
        };
        let not_run: Vec<ToolResultBlock> = calls[1..]
            .iter()
            .map(|c| {
                ToolResultBlock::error(
                    &c.id,
                    "Not run: one tool runs per step. Call it again in a later step.",
                )
            })
            .collect();
        let result_id = format!("{}-{}", self.run_id, self.created + 1);
        let blocks = calls
            .iter()
            .map(|call| running_block(call, Vec::new()))
            .collect();
        self.emit(EventKind::PendingToolResult {
            message_id: result_id,
            blocks,
        })
        .await;
        self.emit(EventKind::AgentToolStart {
            tool: first.name.clone(),
            step,
        })
        .await;
        let tools = self.tools.clone();
        let options = self.options.clone();
        let run_id = self.run_id.clone();
        let cancel = self.deps.cancel.clone();
        let run = ToolRun {
            tools: &tools,
            options: &options,
            run_id: &run_id,
            cancel: &cancel,
        };
        let (mut results, child_tokens, cancelled) =
            match run.run(vec![first.clone()], &mut self.emitter).await {
                Input::ToolsDone {
                    results,
                    child_tokens,
                } => (results, child_tokens, false),
                Input::Cancelled {
                    finished_tools,
                    child_tokens,
                    ..
                } => (finished_tools, child_tokens, true),
                _ => (Vec::new(), TokenTotals::default(), true),
            };
        self.totals += child_tokens;
        let result = match results.iter().position(|(id, _)| *id == first.id) {
            Some(pos) => results.swap_remove(pos).1,
            None if cancelled => ToolResult::error("Cancelled while running."),
            None => ToolResult::error("The tool ended without a result."),
        };
        if !cancelled && matches!(result.break_loop, Some(BreakLoop::Suspend)) {
            let status = LoopStatus::Suspended {
                pending_tool_call: first,
                reason: result.content,
                other_tool_results: not_run,
            };
            return Err(self.finish(status).await);
        }
        let mut blocks = vec![ContentBlock::ToolResult(committed_block(
            &first.id,
            result.clone(),
        ))];
        blocks.extend(not_run.into_iter().map(ContentBlock::ToolResult));
        self.commit(Role::User, blocks).await;
        if cancelled {
            return Err(self.finish(LoopStatus::Cancelled).await);
        }
        self.emit(EventKind::AgentToolComplete {
            tool: first.name.clone(),
            result: result.content.clone(),
            step,
        })
        .await;
        if let Some(BreakLoop::Return { value }) = &result.break_loop {
            let status = LoopStatus::Complete {
                return_value: Some(value.clone()),
            };
            self.emit(EventKind::AgentCompletion {
                steps: step,
                final_answer: result.content.clone(),
            })
            .await;
            return Err(self.finish(status).await);
        }
        Ok(Some((first, result)))
    }

    /// A plain model call (no tools) after `prompt`; its text is the answer.
    pub(crate) async fn final_answer(&mut self, step: u32, prompt: &str) -> Flow<String> {
        let prompt = Message::user_text(format!("{}-final-prompt", self.run_id), prompt);
        let content = self.model(step, vec![prompt], Vec::new()).await?;
        Ok(self.commit_answer_turn(content).await)
    }

    /// Commits a turn made with no tools offered and returns its text. Tool
    /// calls the model made anyway are answered with an error result, so
    /// every call keeps its result.
    pub(crate) async fn commit_answer_turn(&mut self, content: Vec<ContentBlock>) -> String {
        let message = self.commit(Role::Assistant, content).await;
        let results: Vec<ContentBlock> = message
            .tool_uses()
            .map(|call| {
                ContentBlock::ToolResult(ToolResultBlock::error(
                    &call.id,
                    "Not run: no tools are offered in this step.",
                ))
            })
            .collect();
        if !results.is_empty() {
            self.commit(Role::User, results).await;
        }
        message.text()
    }

    /// Commits an answer the model gave through a control tool.
    pub(crate) async fn commit_answer(&mut self, answer: &str) {
        self.commit(Role::Assistant, vec![ContentBlock::text(answer)])
            .await;
    }

    /// Forwards a nested run's events (its root `finished` excepted) and
    /// returns its result; its tokens join this run's totals.
    pub(crate) async fn forward(&mut self, mut inner: RunStream) -> LoopResult {
        let mut result = None;
        while let Some(event) = inner.next().await {
            if let Some(found) = event.root_result() {
                result = Some(found.clone());
                continue;
            }
            self.emitter.emit_at(event.path, event.kind).await;
        }
        let result = result.unwrap_or_else(|| LoopResult {
            status: LoopStatus::Error {
                error: LoopError::IncompleteStream,
            },
            messages: self.messages.clone(),
            tokens: TokenTotals::default(),
        });
        self.totals += result.tokens;
        result
    }
}
