//! The native strategy: the engine's own loop. Every call of a turn runs,
//! results go back to the model, until it answers without a call, a tool
//! suspends or returns, a limit is reached or the caller cancels. With a
//! retriever, the cited passages for the user's latest message are
//! inserted before it first.

use agentloop_types::{AgentErrorEvent, TokensConsumedEvent};
use agentloop_types::{ContentBlock, EventKind, LoopStatus, Role, StopReason, TokenTotals};
use serde::{Deserialize, Serialize};

use crate::machine::answers::{committed_block, text_of, tool_calls};
use crate::machine::protocol::{Input, Step};
use crate::machine::run::Decider;
use crate::machine::run_core::{Env, RunCore, ToolOffer, return_value};

/// The native loop's decisions. Between steps its only state beyond the
/// core is whether passages are still to be retrieved.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct NativeMachine {
    /// Passages to retrieve before the first call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) retrieve: Option<usize>,
}

impl NativeMachine {
    /// A native loop that first retrieves up to `retrieve` passages, if
    /// given.
    pub(crate) fn new(retrieve: Option<usize>) -> Self {
        Self { retrieve }
    }
}

impl Decider for NativeMachine {
    fn start(&mut self, core: &mut RunCore, env: &Env) -> Step {
        if let Some(limit) = self.retrieve.take()
            && let Some(step) = core.retrieve(limit)
        {
            return step;
        }
        call(core, env)
    }

    fn step(&mut self, core: &mut RunCore, env: &Env, input: Input) -> Step {
        match input {
            Input::Start => core.invalid("a second start"),
            // The run core takes decisions before they reach a strategy.
            Input::Decisions { .. } => core.invalid("decisions outside a suspended step"),
            // The run core takes hook answers before they reach a strategy.
            Input::Hooked { .. } => core.invalid("hook answers outside a hook step"),
            Input::Steer { .. } => core.invalid("messages to steer outside a model step"),
            Input::GuardrailTripped { .. } => core.invalid("a guardrail outside a model step"),
            // The run core answers summaries before they reach a strategy.
            Input::Summary { .. } | Input::SummaryFailed { .. } => {
                core.invalid("a summary outside a summarising step")
            }
            Input::Retrieved { passages } => {
                core.take_retrieval(passages.as_deref().unwrap_or_default());
                match passages {
                    Ok(passages) => core.inject_passages(&passages),
                    Err(message) => {
                        core.emit(EventKind::AgentError(AgentErrorEvent { message, step: 1 }))
                    }
                }
                call(core, env)
            }
            Input::ModelTurn {
                content,
                stop_reason,
                usage,
            } => {
                core.take_call();
                model_turn(core, env, content, stop_reason, usage)
            }
            Input::ModelFailed { error } => {
                core.take_call();
                core.finish(LoopStatus::Error { error })
            }
            Input::ToolsDone {
                results,
                child_tokens,
            } => {
                let Some((id, ordered)) = core.tools_done(results, child_tokens) else {
                    return core.invalid("tool results with no calls pending");
                };
                let value = return_value(&ordered);
                let blocks = ordered
                    .into_iter()
                    .map(|(call, result)| committed_block(&call.id, result))
                    .collect();
                core.commit_tool_results(id, blocks);
                match value {
                    Some(value) => core.finish(LoopStatus::Complete {
                        return_value: Some(value),
                        output: None,
                    }),
                    None => call(core, env),
                }
            }
            // The machine hands a passed deadline on as a cancel; the
            // arm takes both so the match stays exhaustive.
            Input::Cancelled {
                partial_turn,
                finished_tools,
                child_tokens,
            }
            | Input::TimedOut {
                partial_turn,
                finished_tools,
                child_tokens,
            } => core.cancel(partial_turn, finished_tools, child_tokens, Vec::new()),
            // So is a refused budget (the call was never made).
            Input::BudgetRefused { .. } => {
                core.cancel(None, Vec::new(), Default::default(), Vec::new())
            }
        }
    }
}

fn call(core: &mut RunCore, env: &Env) -> Step {
    core.call_model(env, Vec::new(), ToolOffer::RunTools, true)
}

fn model_turn(
    core: &mut RunCore,
    env: &Env,
    content: Vec<ContentBlock>,
    stop_reason: StopReason,
    usage: TokenTotals,
) -> Step {
    let calls = tool_calls(&content);
    let text = text_of(&content);
    core.add_tokens(usage);
    if !content.is_empty() {
        core.commit(Role::Assistant, content);
    }
    core.emit(EventKind::TokensConsumed(TokensConsumedEvent {
        tokens: usage,
    }));
    if calls.is_empty() {
        return match stop_reason {
            // The provider paused a long server-side turn: send the
            // history back unchanged to let it continue.
            StopReason::PauseTurn => call(core, env),
            _ => core.finish_answer(env, &text, &stop_reason, ToolOffer::RunTools),
        };
    }
    if let Some(step) = core.final_output_called(env, &calls, &stop_reason) {
        return step;
    }
    if let Some(step) = core.count_tool_calls(env, &calls) {
        return step;
    }
    core.begin_all_tools(env, calls)
}
