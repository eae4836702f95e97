//! ReAct (seed 001): each step reasons, acts with one tool, and observes.
//!
//! - **Reason**: a model call offering only `agent_decide_next` (JSON
//!   fallback for text answers) → `agent_reason`. The decision may finish
//!   (`final_answer`, or `finish: true`), or ask the user (`request_input`:
//!   `agent_request_input`, and the run suspends on a synthetic
//!   `agent_request_input` call; the answer, given as a decision, is its
//!   result and the next step reasons with it).
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

use agentloop_types::{
    AgentObserveEvent, AgentReasonEvent, AgentRequestInputEvent, AgentStartEvent,
    AgentTurnStartEvent,
};

use agentloop_types::{ContentBlock, EventKind, Passage, Role, ToolUseBlock};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::act::{self, ActStart, Acting, cited, final_call, non_empty, prompt, retrieved};
use super::control::{
    REQUEST_INPUT, decide_next_tool, observe_decide_tool, read_decision, read_observation,
};
use crate::machine::answers::committed_block;
use crate::machine::protocol::{Input, Step};
use crate::machine::run::Decider;
use crate::machine::run_core::{Env, RunCore, ToolOffer};

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

/// Where a ReAct run is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub(crate) enum ReactPhase {
    /// Not started.
    Starting,
    /// Retrieving passages.
    Retrieving,
    /// The reason call of a step is in flight.
    Reason { step: u32 },
    /// The act call of a step is in flight.
    Act { step: u32 },
    /// The act step's call runs.
    Acting(Acting),
    /// The run asked the user (`agent_request_input`) at this step and
    /// waits for the answer.
    Asking { step: u32 },
    /// The observe call of a step is in flight.
    Observe { step: u32 },
    /// The plain answer call is in flight.
    Answer { step: u32 },
}

/// The ReAct machine; see the module docs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ReactMachine {
    max_steps: u32,
    max_retries: u32,
    /// Passages to retrieve before the first step.
    retrieve: Option<usize>,
    /// Retrieved passages, sent with every act call.
    passages: Vec<Passage>,
    phase: ReactPhase,
}

impl ReactMachine {
    /// A run of at most `max_steps` steps, each model call retried
    /// `max_retries` times, after retrieving up to `retrieve` passages, if
    /// given.
    pub(crate) fn new(max_steps: u32, max_retries: u32, retrieve: Option<usize>) -> Self {
        Self {
            max_steps,
            max_retries,
            retrieve,
            passages: Vec::new(),
            phase: ReactPhase::Starting,
        }
    }

    pub(crate) fn start(&mut self, core: &mut RunCore, env: &Env) -> Step {
        core.emit(EventKind::AgentStart(AgentStartEvent {
            max_steps: self.max_steps,
        }));
        if let Some(limit) = self.retrieve.take()
            && let Some(step) = core.retrieve(limit)
        {
            self.phase = ReactPhase::Retrieving;
            return step;
        }
        self.begin_step(core, env, 1)
    }

    pub(crate) fn step(&mut self, core: &mut RunCore, env: &Env, input: Input) -> Step {
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
                self.passages = retrieved(core, passages);
                self.begin_step(core, env, 1)
            }
            Input::ModelTurn { content, usage, .. } => {
                core.take_call();
                core.consume(usage);
                self.turn(core, env, content)
            }
            Input::ModelFailed { error } => {
                let step = self.step_number();
                core.retry_or_fail(env, error, step, self.max_retries)
            }
            Input::ToolsDone {
                results,
                child_tokens,
            } if matches!(self.phase, ReactPhase::Asking { .. }) => {
                // The answer to the run's own question: the next step
                // reasons with it.
                let step = self.step_number();
                let Some((id, ordered)) = core.tools_done(results, child_tokens) else {
                    return core.invalid("an answer with no question pending");
                };
                let blocks = ordered
                    .into_iter()
                    .map(|(call, result)| committed_block(&call.id, result))
                    .collect();
                core.commit_tool_results(id, blocks);
                self.begin_step(core, env, step + 1)
            }
            Input::ToolsDone {
                results,
                child_tokens,
            } => {
                let ReactPhase::Acting(acting) =
                    std::mem::replace(&mut self.phase, ReactPhase::Starting)
                else {
                    return core.invalid("tool results outside an act step");
                };
                let step = acting.step;
                match act::done(core, acting, results, child_tokens) {
                    Err(end) => end,
                    Ok(_) => {
                        self.phase = ReactPhase::Observe { step };
                        let observe = prompt(core, "observe", OBSERVE_PROMPT);
                        let offer = ToolOffer::Control {
                            tool: observe_decide_tool(),
                        };
                        core.call_model(env, vec![observe], offer, false)
                    }
                }
            }
            // The machine hands a refused budget on as a cancel (the
            // call was never made).
            Input::BudgetRefused { .. } => {
                let extra = match &self.phase {
                    ReactPhase::Acting(acting) => acting.not_run.clone(),
                    _ => Vec::new(),
                };
                core.cancel(None, Vec::new(), Default::default(), extra)
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
            } => {
                let extra = match &self.phase {
                    ReactPhase::Acting(acting) => acting.not_run.clone(),
                    _ => Vec::new(),
                };
                core.cancel(partial_turn, finished_tools, child_tokens, extra)
            }
        }
    }

    fn step_number(&self) -> u32 {
        match &self.phase {
            ReactPhase::Starting | ReactPhase::Retrieving => 1,
            ReactPhase::Reason { step }
            | ReactPhase::Act { step }
            | ReactPhase::Asking { step }
            | ReactPhase::Observe { step }
            | ReactPhase::Answer { step } => *step,
            ReactPhase::Acting(acting) => acting.step,
        }
    }

    fn begin_step(&mut self, core: &mut RunCore, env: &Env, step: u32) -> Step {
        core.emit(EventKind::AgentTurnStart(AgentTurnStartEvent { step }));
        self.phase = ReactPhase::Reason { step };
        let reason = prompt(core, "reason", REASON_PROMPT);
        let offer = ToolOffer::Control {
            tool: decide_next_tool(),
        };
        core.call_model(env, vec![reason], offer, false)
    }

    fn answer(&mut self, core: &mut RunCore, env: &Env, step: u32) -> Step {
        self.phase = ReactPhase::Answer { step };
        final_call(core, env, FINAL_PROMPT)
    }

    fn turn(&mut self, core: &mut RunCore, env: &Env, content: Vec<ContentBlock>) -> Step {
        match self.phase.clone() {
            ReactPhase::Reason { step } => self.reasoned(core, env, step, &content),
            ReactPhase::Act { step } => match act::begin(core, env, step, content) {
                ActStart::NoCall(text) => match non_empty(Some(text)) {
                    Some(answer) => core.complete(step, answer),
                    None => self.answer(core, env, step),
                },
                ActStart::Running(next, acting) => {
                    self.phase = ReactPhase::Acting(acting);
                    next
                }
            },
            ReactPhase::Observe { step } => {
                let observation = read_observation(&content);
                core.emit(EventKind::AgentObserve(AgentObserveEvent {
                    message: observation.message.clone(),
                    step,
                }));
                if let Some(answer) = non_empty(observation.final_answer) {
                    core.commit_answer(&answer);
                    return core.complete(step, answer);
                }
                if !observation.should_continue {
                    return self.answer(core, env, step);
                }
                if step < self.max_steps {
                    self.begin_step(core, env, step + 1)
                } else {
                    self.answer(core, env, self.max_steps)
                }
            }
            ReactPhase::Answer { step } => {
                let answer = core.commit_answer_turn(content);
                core.complete(step, answer)
            }
            ReactPhase::Starting
            | ReactPhase::Retrieving
            | ReactPhase::Acting(_)
            | ReactPhase::Asking { .. } => core.invalid("a model turn outside a model step"),
        }
    }

    fn reasoned(
        &mut self,
        core: &mut RunCore,
        env: &Env,
        step: u32,
        content: &[ContentBlock],
    ) -> Step {
        let decision = read_decision(content);
        core.emit(EventKind::AgentReason(AgentReasonEvent {
            message: decision.message.clone(),
            step,
        }));
        if let Some(question) = non_empty(decision.request_input) {
            self.phase = ReactPhase::Asking { step };
            return request_input(core, step, question);
        }
        if let Some(answer) = non_empty(decision.final_answer) {
            core.commit_answer(&answer);
            return core.complete(step, answer);
        }
        if decision.finish || env.tools.is_empty() {
            return self.answer(core, env, step);
        }
        let mut extra = cited(&self.passages);
        let act = if decision.message.trim().is_empty() {
            ACT_PROMPT.to_owned()
        } else {
            format!(
                "{ACT_PROMPT}\n\nYour reasoning: {}",
                decision.message.trim()
            )
        };
        extra.push(prompt(core, "act", &act));
        self.phase = ReactPhase::Act { step };
        core.call_model(env, extra, ToolOffer::RunTools, true)
    }
}

impl Decider for ReactMachine {
    fn start(&mut self, core: &mut RunCore, env: &Env) -> Step {
        ReactMachine::start(self, core, env)
    }

    fn step(&mut self, core: &mut RunCore, env: &Env, input: Input) -> Step {
        ReactMachine::step(self, core, env, input)
    }
}

/// Suspends on a synthetic call carrying the question.
fn request_input(core: &mut RunCore, step: u32, question: String) -> Step {
    let call = ToolUseBlock {
        id: format!("{}-input-{step}", core.run_id()),
        name: REQUEST_INPUT.to_owned(),
        input: json!({ "question": question }).into(),
    };
    core.commit(Role::Assistant, vec![ContentBlock::ToolUse(call.clone())]);
    core.emit(EventKind::AgentRequestInput(AgentRequestInputEvent {
        question: question.clone(),
        step,
    }));
    core.ask(call, question)
}
