//! Plan-and-execute: a planning call writes the steps (control tool
//! `agent_plan`, JSON or list fallback), each step runs as a native loop
//! over the shared history, and a failed step (error, turn or usage limit)
//! triggers a re-plan of what remains, up to `max_replans` times.
//!
//! Events: `agent_start`; `agent_reason` with the plan (and each re-plan);
//! per step `agent_turn_start`, a committed user message `Step N: ...`, the
//! native loop's own events, then `agent_observe` with the step's answer or
//! `agent_error` when it failed; finally a plain answer call and
//! `agent_completion`. A step that waits for a person suspends the run,
//! and the decisions resume that step in place; a cancelled step ends the
//! run the same way; a return-tool value completes it.

use agentloop_types::ContextCompactedEvent;
use agentloop_types::{
    AgentCompletionEvent, AgentErrorEvent, AgentObserveEvent, AgentReasonEvent,
    AgentRequestInputEvent, AgentStartEvent, AgentToolCompleteEvent, AgentToolStartEvent,
    AgentTurnStartEvent, FinishedEvent, MessageCreatedEvent, PendingToolResultEvent,
    StreamingChunkEvent, StreamingEndEvent, StreamingStartEvent, TokensConsumedEvent,
    ToolBlockUpdateEvent, ToolEndEvent, ToolStartEvent,
};
use std::collections::VecDeque;

use agentloop_types::{ContentBlock, EventKind, LoopResult, LoopStatus, Role, RunState};
use serde::{Deserialize, Serialize};

use super::act::{final_call, prompt};
use super::control::{plan_tool, read_plan};
use super::native::NativeMachine;
use crate::machine::passages::last_user_text;
use crate::machine::protocol::{Input, Step};
use crate::machine::run::{Decider, Nested, Run};
use crate::machine::run_core::{Env, RunCore, ToolOffer};

/// Sent (not committed) before the planning call.
pub const PLAN_PROMPT: &str = "Write a short plan for the task: call agent_plan with the steps \
to take, in order, each one sentence. If you cannot call tools, reply with a JSON array of \
strings.";
/// Sent (not committed) before the last, plain model call.
pub const SUMMARY_PROMPT: &str =
    "All steps are done. Give the user the final answer to the task, using the results above.";

/// Where a plan-and-execute run is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub(crate) enum PlanPhase {
    /// Not started.
    Starting,
    /// A planning call is in flight.
    Planning { step: u32 },
    /// A plan step runs as a nested native run.
    Executing {
        item: String,
        run: Box<Run<StepMachine>>,
    },
    /// The summary call is in flight.
    Summarizing { step: u32 },
}

/// The machine of a plan step's nested run: always the native loop. Stored
/// with the same `strategy` tag as a top-level run's machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "strategy", rename_all = "kebab-case")]
pub(crate) enum StepMachine {
    Native(NativeMachine),
}

impl Decider for StepMachine {
    fn start(&mut self, core: &mut RunCore, env: &Env) -> Step {
        let StepMachine::Native(machine) = self;
        machine.start(core, env)
    }

    fn step(&mut self, core: &mut RunCore, env: &Env, input: Input) -> Step {
        let StepMachine::Native(machine) = self;
        machine.step(core, env, input)
    }
}

/// The plan-and-execute machine; see the module docs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PlanMachine {
    max_steps: u32,
    max_replans: u32,
    max_retries: u32,
    /// Plan steps not started yet.
    queue: VecDeque<String>,
    /// Steps started.
    step: u32,
    replans: u32,
    phase: PlanPhase,
}

impl PlanMachine {
    /// A plan of at most `max_steps` steps, re-planned at most
    /// `max_replans` times, each planning or answer call retried
    /// `max_retries` times.
    pub(crate) fn new(max_steps: u32, max_replans: u32, max_retries: u32) -> Self {
        Self {
            max_steps,
            max_replans,
            max_retries,
            queue: VecDeque::new(),
            step: 0,
            replans: 0,
            phase: PlanPhase::Starting,
        }
    }

    pub(crate) fn start(&mut self, core: &mut RunCore, env: &Env) -> Step {
        if let PlanPhase::Executing { run, .. } = &mut self.phase {
            // A stored run stopped inside a step: the nested run resumes.
            run.core.state.interrupted_calls = std::mem::take(&mut core.state.interrupted_calls);
            let next = run.start(env);
            return self.forward(core, env, next);
        }
        core.emit(EventKind::AgentStart(AgentStartEvent {
            max_steps: self.max_steps,
        }));
        self.make_plan(core, env, 1, PLAN_PROMPT.to_owned())
    }

    /// The nested run of the step executing.
    fn nested_run(&self) -> Option<&Run<StepMachine>> {
        match &self.phase {
            PlanPhase::Executing { run, .. } => Some(run),
            PlanPhase::Starting | PlanPhase::Planning { .. } | PlanPhase::Summarizing { .. } => {
                None
            }
        }
    }

    pub(crate) fn step(&mut self, core: &mut RunCore, env: &Env, input: Input) -> Step {
        if let PlanPhase::Executing { run, .. } = &mut self.phase {
            let next = run.step(env, input);
            return self.forward(core, env, next);
        }
        match input {
            Input::ModelTurn { content, usage, .. } => {
                core.take_call();
                core.consume(usage);
                match self.phase {
                    PlanPhase::Planning { step } => self.planned(core, env, step, &content),
                    PlanPhase::Summarizing { step } => {
                        let answer = core.commit_answer_turn(content);
                        core.complete(step, answer)
                    }
                    PlanPhase::Starting | PlanPhase::Executing { .. } => {
                        core.invalid("a model turn outside a model step")
                    }
                }
            }
            Input::ModelFailed { error } => {
                let step = match self.phase {
                    PlanPhase::Planning { step } | PlanPhase::Summarizing { step } => step,
                    PlanPhase::Starting | PlanPhase::Executing { .. } => self.step.max(1),
                };
                core.retry_or_fail(env, error, step, self.max_retries)
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
            Input::Start
            | Input::Decisions { .. }
            | Input::Hooked { .. }
            | Input::Steer { .. }
            | Input::GuardrailTripped { .. }
            | Input::ToolsDone { .. }
            | Input::Retrieved { .. }
            | Input::Summary { .. }
            | Input::SummaryFailed { .. } => {
                core.invalid("an input plan-and-execute does not await")
            }
        }
    }

    /// Asks for a plan; the answer is reported as `agent_reason`.
    fn make_plan(&mut self, core: &mut RunCore, env: &Env, step: u32, text: String) -> Step {
        self.phase = PlanPhase::Planning { step };
        let prompt = prompt(core, "plan", &text);
        let offer = ToolOffer::Control { tool: plan_tool() };
        core.call_model(env, vec![prompt], offer, false)
    }

    /// The plan is in: an empty plan becomes one step, the task itself.
    fn planned(
        &mut self,
        core: &mut RunCore,
        env: &Env,
        step: u32,
        content: &[ContentBlock],
    ) -> Step {
        let mut steps = read_plan(content).steps;
        if steps.is_empty() {
            steps
                .push(last_user_text(core.messages()).unwrap_or_else(|| "Do the task.".to_owned()));
        }
        core.emit(EventKind::AgentReason(AgentReasonEvent {
            message: format!("Plan:\n{}", numbered(&steps)),
            step,
        }));
        self.queue = steps.into();
        self.next_item(core, env)
    }

    /// Starts the next plan step as a nested native run over the history,
    /// or asks for the summary when none is left.
    fn next_item(&mut self, core: &mut RunCore, env: &Env) -> Step {
        let item = match self.queue.pop_front() {
            Some(item) if self.step < self.max_steps => item,
            _ => {
                let step = self.step.max(1);
                self.phase = PlanPhase::Summarizing { step };
                return final_call(core, env, SUMMARY_PROMPT);
            }
        };
        self.step += 1;
        let step = self.step;
        core.emit(EventKind::AgentTurnStart(AgentTurnStartEvent { step }));
        core.commit(
            Role::User,
            vec![ContentBlock::text(format!("Step {step}: {item}"))],
        );
        let state = RunState::new(
            format!("{}-step{step}", core.run_id()),
            core.messages().to_vec(),
        );
        let mut run = Run::new(state, StepMachine::Native(NativeMachine::default()));
        run.core.nested = true;
        // The step sends the history as this run does, compacted alike.
        run.core.compaction = core.compaction.clone();
        let next = run.start(env);
        self.phase = PlanPhase::Executing {
            item,
            run: Box::new(run),
        };
        self.forward(core, env, next)
    }

    /// Passes the nested run's events on (its `finished` excepted); when
    /// it has finished, goes on from its result.
    fn forward(&mut self, core: &mut RunCore, env: &Env, next: Step) -> Step {
        let PlanPhase::Executing { run, .. } = &mut self.phase else {
            return next;
        };
        let mut result = None;
        for event in run.core.take_events() {
            match event {
                EventKind::Finished(FinishedEvent { result: found }) => result = Some(found),
                kind @ (EventKind::StreamingStart(StreamingStartEvent { .. })
                | EventKind::FirstChunk
                | EventKind::StreamingChunk(StreamingChunkEvent { .. })
                | EventKind::StreamingEnd(StreamingEndEvent { .. })
                | EventKind::MessageCreated(MessageCreatedEvent { .. })
                | EventKind::TokensConsumed(TokensConsumedEvent { .. })
                | EventKind::PendingToolResult(PendingToolResultEvent { .. })
                | EventKind::ToolStart(ToolStartEvent { .. })
                | EventKind::ToolBlockUpdate(ToolBlockUpdateEvent { .. })
                | EventKind::ToolEnd(ToolEndEvent { .. })
                | EventKind::AgentStart(AgentStartEvent { .. })
                | EventKind::AgentTurnStart(AgentTurnStartEvent { .. })
                | EventKind::AgentReason(AgentReasonEvent { .. })
                | EventKind::AgentRequestInput(AgentRequestInputEvent { .. })
                | EventKind::AgentToolStart(AgentToolStartEvent { .. })
                | EventKind::AgentToolComplete(AgentToolCompleteEvent { .. })
                | EventKind::AgentObserve(AgentObserveEvent { .. })
                | EventKind::Hook(_)
                | EventKind::Handoff(_)
                | EventKind::AgentCompletion(AgentCompletionEvent { .. })
                | EventKind::AgentError(AgentErrorEvent { .. })
                | EventKind::ContextCompacted(ContextCompactedEvent { .. })
                | EventKind::ContextEdited(_)
                | EventKind::ApprovalRequested(_)) => core.emit(kind),
            }
        }
        match (next, result) {
            // The step waits for a person: so does this run, and the
            // decisions go to the step's run, in place.
            (Step::Done, Some(result)) if run.pending().is_some() => {
                let LoopStatus::Suspended { pending, .. } = result.status else {
                    return core.invalid("a waiting plan step that did not suspend");
                };
                let tokens = core.state.totals + result.tokens;
                core.suspend(pending, result.messages, tokens)
            }
            (Step::Done, Some(result)) => self.step_finished(core, env, *result),
            (Step::Done, None) => core.invalid("a plan step ended without a result"),
            (next, _) => next,
        }
    }

    fn step_finished(&mut self, core: &mut RunCore, env: &Env, result: LoopResult) -> Step {
        let PlanPhase::Executing { item, run } =
            std::mem::replace(&mut self.phase, PlanPhase::Starting)
        else {
            return core.invalid("a plan step finished outside a step");
        };
        // Its history becomes this run's, and so does how it is sent.
        core.compaction = run.core.compaction;
        let step = self.step;
        let answer = result.final_text().unwrap_or_default();
        core.add_tokens(result.tokens);
        core.adopt_history(result.messages);
        let failure = match result.status {
            LoopStatus::Complete {
                return_value: Some(value),
                ..
            } => {
                core.emit(EventKind::AgentCompletion(AgentCompletionEvent {
                    steps: step,
                    final_answer: answer,
                }));
                return core.finish(LoopStatus::Complete {
                    return_value: Some(value),
                    output: None,
                });
            }
            LoopStatus::Complete {
                return_value: None, ..
            } => {
                core.emit(EventKind::AgentObserve(AgentObserveEvent {
                    message: answer,
                    step,
                }));
                return self.next_item(core, env);
            }
            // A waiting step is handled in `forward`; a step's run never
            // finishes suspended otherwise.
            status @ (LoopStatus::Suspended { .. } | LoopStatus::Cancelled) => {
                return core.finish(status);
            }
            failure @ (LoopStatus::Error { .. }
            | LoopStatus::MaxIterations
            | LoopStatus::LimitExceeded { .. }) => failure,
        };
        let message = match &failure {
            LoopStatus::Error { error } => format!("Step {step} failed: {error}"),
            other => format!("Step {step} failed: it ended with {}", other.name()),
        };
        core.emit(EventKind::AgentError(AgentErrorEvent {
            message: message.clone(),
            step,
        }));
        if self.replans >= self.max_replans {
            return core.finish(failure);
        }
        self.replans += 1;
        let remaining: Vec<String> = std::iter::once(item)
            .chain(std::mem::take(&mut self.queue))
            .collect();
        let text = format!(
            "{message}. Steps not done yet:\n{}\n\n{PLAN_PROMPT}",
            numbered(&remaining)
        );
        self.make_plan(core, env, step + 1, text)
    }
}

impl Decider for PlanMachine {
    fn start(&mut self, core: &mut RunCore, env: &Env) -> Step {
        PlanMachine::start(self, core, env)
    }

    fn step(&mut self, core: &mut RunCore, env: &Env, input: Input) -> Step {
        PlanMachine::step(self, core, env, input)
    }

    fn nested(&self) -> Option<&dyn Nested> {
        self.nested_run().map(|run| run as &dyn Nested)
    }
}

fn numbered(steps: &[String]) -> String {
    steps
        .iter()
        .enumerate()
        .map(|(i, s)| format!("{}. {s}", i + 1))
        .collect::<Vec<_>>()
        .join("\n")
}
