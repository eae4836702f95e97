//! Plan-and-execute: a planning call writes the steps (control tool
//! `agent_plan`, JSON or list fallback), each step runs as a native loop
//! over the shared history, and a failed step (error, turn or usage limit)
//! triggers a re-plan of what remains, up to `max_replans` times.
//!
//! Events: `agent_start`; `agent_reason` with the plan (and each re-plan);
//! per step `agent_turn_start`, a committed user message `Step N: ...`, the
//! native loop's own events, then `agent_observe` with the step's answer or
//! `agent_error` when it failed; finally a plain answer call and
//! `agent_completion`. A suspended or cancelled step ends the run the same
//! way; a return-tool value completes it.

use std::collections::VecDeque;

use agentloop_types::{ContentBlock, EventKind, LoopOptions, LoopStatus, Message, Role};

use super::LoopStrategy;
use super::control::{plan_tool, read_plan};
use super::ctx::{Ctx, Ended, Flow};
use crate::retrieval::last_user_text;
use crate::{RunDeps, RunStream, run};

/// Sent (not committed) before the planning call.
pub const PLAN_PROMPT: &str = "Write a short plan for the task: call agent_plan with the steps \
to take, in order, each one sentence. If you cannot call tools, reply with a JSON array of \
strings.";
/// Sent (not committed) before the last, plain model call.
pub const SUMMARY_PROMPT: &str =
    "All steps are done. Give the user the final answer to the task, using the results above.";

/// The plan-and-execute strategy; see the module docs.
#[derive(Debug, Clone)]
pub struct PlanExecuteStrategy {
    /// Steps run at most (re-planned ones included).
    pub max_steps: u32,
    /// Re-plans allowed after failed steps.
    pub max_replans: u32,
    /// Retries of a failed planning or answer call.
    pub max_retries: u32,
}

impl Default for PlanExecuteStrategy {
    fn default() -> Self {
        Self {
            max_steps: 8,
            max_replans: 1,
            max_retries: 2,
        }
    }
}

impl LoopStrategy for PlanExecuteStrategy {
    fn name(&self) -> &str {
        super::PLAN_AND_EXECUTE
    }

    fn run(&self, options: LoopOptions, context: Vec<Message>, deps: RunDeps) -> RunStream {
        let config = self.clone();
        RunStream::new(move |emitter| async move {
            let mut ctx = Ctx::new(emitter, options, context, deps, config.max_retries);
            let _ = plan_execute(&mut ctx, &config).await;
        })
    }
}

async fn plan_execute(ctx: &mut Ctx, config: &PlanExecuteStrategy) -> Flow<Ended> {
    let max_steps = config.max_steps.max(1);
    ctx.emit(EventKind::AgentStart { max_steps }).await;
    let mut queue = make_plan(ctx, 1, PLAN_PROMPT.to_owned()).await?;
    let mut step = 0;
    let mut replans = 0;
    while let Some(item) = queue.pop_front() {
        if step >= max_steps {
            break;
        }
        step += 1;
        ctx.emit(EventKind::AgentTurnStart { step }).await;
        ctx.commit(
            Role::User,
            vec![ContentBlock::text(format!("Step {step}: {item}"))],
        )
        .await;
        let mut deps = ctx.deps.clone();
        deps.tools = ctx.tools.clone();
        deps.run_id = Some(format!("{}-step{step}", ctx.run_id));
        let inner = run(ctx.options.clone(), ctx.messages.clone(), deps);
        let result = ctx.forward(inner).await;
        let answer = result.final_text().unwrap_or_default();
        ctx.messages = result.messages;
        let failure = match result.status {
            LoopStatus::Complete {
                return_value: Some(value),
            } => {
                ctx.emit(EventKind::AgentCompletion {
                    steps: step,
                    final_answer: answer,
                })
                .await;
                let status = LoopStatus::Complete {
                    return_value: Some(value),
                };
                return Err(ctx.finish(status).await);
            }
            LoopStatus::Complete { return_value: None } => {
                ctx.emit(EventKind::AgentObserve {
                    message: answer,
                    step,
                })
                .await;
                continue;
            }
            status @ (LoopStatus::Suspended { .. } | LoopStatus::Cancelled) => {
                return Err(ctx.finish(status).await);
            }
            failure => failure,
        };
        let message = match &failure {
            LoopStatus::Error { error } => format!("Step {step} failed: {error}"),
            other => format!("Step {step} failed: it ended with {}", other.name()),
        };
        ctx.emit(EventKind::AgentError {
            message: message.clone(),
            step,
        })
        .await;
        if replans >= config.max_replans {
            return Err(ctx.finish(failure).await);
        }
        replans += 1;
        let remaining: Vec<String> = std::iter::once(item).chain(queue).collect();
        let prompt = format!(
            "{message}. Steps not done yet:\n{}\n\n{PLAN_PROMPT}",
            numbered(&remaining)
        );
        queue = make_plan(ctx, step + 1, prompt).await?;
    }
    let answer = ctx.final_answer(step.max(1), SUMMARY_PROMPT).await?;
    Ok(ctx.complete(step.max(1), answer).await)
}

/// Asks for a plan and reports it as `agent_reason`. An empty plan becomes
/// one step: the task itself.
async fn make_plan(ctx: &mut Ctx, step: u32, prompt: String) -> Flow<VecDeque<String>> {
    let prompt = Message::user_text(format!("{}-plan-prompt", ctx.run_id), prompt);
    let content = ctx.model(step, vec![prompt], vec![plan_tool()]).await?;
    let mut steps = read_plan(&content).steps;
    if steps.is_empty() {
        steps.push(last_user_text(&ctx.messages).unwrap_or_else(|| "Do the task.".to_owned()));
    }
    ctx.emit(EventKind::AgentReason {
        message: format!("Plan:\n{}", numbered(&steps)),
        step,
    })
    .await;
    Ok(steps.into())
}

fn numbered(steps: &[String]) -> String {
    steps
        .iter()
        .enumerate()
        .map(|(i, s)| format!("{}. {s}", i + 1))
        .collect::<Vec<_>>()
        .join("\n")
}
