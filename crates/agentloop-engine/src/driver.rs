//! The one async driver: performs what a [`Machine`] decides — model
//! turns, tool calls, retrieval — and turns it into events. It holds no
//! decisions of its own: every strategy runs on it.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use agentloop_types::{
    AttachmentLoader, Budget, BudgetCall, BudgetHold, CancellationToken, DecisionError, Decisions,
    EventKind, Guardrail, Hook, Hooks, Inbox, LoopOptions, Message, ModelProvider, ModelRequest,
    OutputGuardrail, Retriever, RunState, Spend, Tool, ToolGuardrail, output_guardrail_hook,
    tool_guardrail_hook,
};

use crate::cancel::or_cancelled;
use crate::clock::{Clock, SystemClock};
use crate::handoff::Handoffs;
use crate::interrupt::Interrupt;
use crate::machine::{
    Input, Machine, OfferedTool, Step, StepError, StrategyMachine, ToolCall, ToolOutcome,
};
use crate::model_turn::{ModelTurn, summary_request, summary_turn};
use crate::run_stream::{Emitter, RunStream};
use crate::sent_request::SentRequests;
use crate::tool_exec::ToolRun;
use tracing::Instrument;

/// What a run calls out to.
#[derive(Clone)]
pub struct RunDeps {
    /// The model.
    pub provider: Arc<dyn ModelProvider>,
    /// Tools the run may offer (narrowed by `LoopOptions::enabled_tools`).
    pub tools: Vec<Arc<dyn Tool>>,
    /// Resolves stored attachments for provider requests.
    pub attachments: Option<Arc<dyn AttachmentLoader>>,
    /// Cancels the run when cancelled.
    pub cancel: CancellationToken,
    /// Run id; message ids derive from it. Generated when `None`.
    pub run_id: Option<String>,
    /// Answers the retrieval steps of strategies that use passages; with
    /// none, a retrieval finds nothing.
    pub retriever: Option<Arc<dyn Retriever>>,
    /// The wall clock the run reads (to name a run given no id).
    pub clock: Arc<dyn Clock>,
    /// Lifecycle hooks, asked at the moments they want; their answers are
    /// the machine's inputs.
    pub hooks: Hooks,
    /// Input guardrails, run beside the run's first model call (see
    /// [`agentloop_types::guardrail`]).
    pub guardrails: Vec<Arc<dyn Guardrail>>,
    /// The agents the run hands the conversation between (see
    /// [`agentloop_types::handoff`]); none by default.
    pub handoffs: Option<Arc<Handoffs>>,
    /// Where messages sent to the run while it goes on wait: asked before
    /// each model call (see [`Inbox`]); none by default.
    pub inbox: Option<Arc<dyn Inbox>>,
    /// Stops the model call or tool step in flight without ending the run
    /// (see [`Interrupt`]); none by default.
    pub interrupt: Option<Interrupt>,
    /// Spend above the run, reserved before each model call and settled
    /// after it (see [`Budget`]); none by default.
    pub budget: Option<Arc<dyn Budget>>,
}

impl RunDeps {
    /// Deps with a provider and nothing else.
    pub fn new(provider: Arc<dyn ModelProvider>) -> Self {
        Self {
            provider,
            tools: Vec::new(),
            attachments: None,
            cancel: CancellationToken::new(),
            run_id: None,
            retriever: None,
            clock: Arc::new(SystemClock),
            hooks: Hooks::default(),
            guardrails: Vec::new(),
            handoffs: None,
            inbox: None,
            interrupt: None,
            budget: None,
        }
    }

    /// Reserves each model call's spend with `budget` first: a refusal
    /// ends the run `limit_exceeded` (limit `budget`).
    pub fn with_budget(mut self, budget: Arc<dyn Budget>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Lets `interrupt` stop the step in flight (see [`Interrupt`]).
    pub fn with_interrupt(mut self, interrupt: Interrupt) -> Self {
        self.interrupt = Some(interrupt);
        self
    }

    /// Delivers the messages `inbox` holds at each step boundary.
    pub fn with_inbox(mut self, inbox: Arc<dyn Inbox>) -> Self {
        self.inbox = Some(inbox);
        self
    }

    /// Lets the run's agent hand the conversation to the agents of
    /// `handoffs` (the run's provider, options and tools are its root
    /// agent's).
    pub fn with_handoffs(mut self, handoffs: Handoffs) -> Self {
        self.handoffs = Some(Arc::new(handoffs));
        self
    }

    /// Adds an input guardrail.
    pub fn with_guardrail(mut self, guardrail: Arc<dyn Guardrail>) -> Self {
        self.guardrails.push(guardrail);
        self
    }

    /// Adds an output guardrail: asked about the final answer (and its
    /// structured output) before the run completes, as a `run_end` hook.
    pub fn with_output_guardrail(mut self, guardrail: Arc<dyn OutputGuardrail>) -> Self {
        self.hooks.push(output_guardrail_hook(guardrail));
        self
    }

    /// Adds a tool guardrail: asked about each call before it runs and
    /// its result after, as `before_tool_call` and `after_tool_call` hooks.
    pub fn with_tool_guardrail(mut self, guardrail: Arc<dyn ToolGuardrail>) -> Self {
        self.hooks.push(tool_guardrail_hook(guardrail));
        self
    }

    /// Adds a lifecycle hook after the others.
    pub fn with_hook(mut self, hook: Arc<dyn Hook>) -> Self {
        self.hooks.push(hook);
        self
    }

    /// Adds tools.
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Sets the cancellation token.
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Sets the clock.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Sets the run id.
    pub fn with_run_id(mut self, run_id: impl Into<String>) -> Self {
        self.run_id = Some(run_id.into());
        self
    }
}

/// Starts a native run over `context` (the history so far, ending with the
/// user's message or with the tool results that resume a suspended run).
pub fn run(options: LoopOptions, context: Vec<Message>, deps: RunDeps) -> RunStream {
    start(
        options,
        context,
        deps,
        StrategyMachine::Native(Default::default()),
    )
}

/// Starts `strategy` over `context`.
pub(crate) fn start(
    options: LoopOptions,
    context: Vec<Message>,
    deps: RunDeps,
    strategy: StrategyMachine,
) -> RunStream {
    let run_id = deps
        .run_id
        .clone()
        .unwrap_or_else(|| generate_run_id(deps.clock.as_ref()));
    let machine = Machine::with_strategy(RunState::new(run_id, context), options, strategy);
    drive_machine(machine, deps, Input::Start)
}

/// Continues a run from a stored [`RunState`] (see
/// [`RunStream::with_checkpoints`]), whatever strategy it was running: the
/// state names it. What was in flight when it was stored is done again;
/// calls in [`RunState::interrupted_calls`] are answered as interrupted.
/// A state that has finished, or that cannot be read, ends the stream with
/// an `error` result.
///
/// ```
/// use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
/// use agentloop_engine::strategy::ReactStrategy;
/// use agentloop_engine::{LoopStrategy, RunDeps, RunItem, collect, resume};
/// use agentloop_types::{LoopOptions, Message};
/// use futures::StreamExt;
/// use serde_json::json;
///
/// # futures::executor::block_on(async {
/// let reason = ScriptedTurn::new().tool_call(
///     "r1",
///     "agent_decide_next",
///     json!({"message": "I know it.", "final_answer": "42"}),
/// );
/// let run = ReactStrategy::default().run(
///     LoopOptions::default(),
///     vec![Message::user_text("u1", "The answer?")],
///     RunDeps::new(ScriptedProvider::new([reason.clone()])),
/// );
/// // Store the first checkpoint and stop, as a crashing process would.
/// let mut items = run.with_checkpoints();
/// let stored = loop {
///     if let Some(RunItem::Checkpoint(state)) = items.next().await {
///         break serde_json::to_string(&state).unwrap();
///     }
/// };
/// drop(items);
///
/// // Elsewhere: the stored react run goes on with its reason call.
/// let state = serde_json::from_str(&stored).unwrap();
/// let deps = RunDeps::new(ScriptedProvider::new([reason]));
/// let result = collect(resume(LoopOptions::default(), state, deps)).await;
/// assert_eq!(result.final_text().as_deref(), Some("42"));
/// # });
/// ```
pub fn resume(options: LoopOptions, state: RunState, deps: RunDeps) -> RunStream {
    drive_machine(Machine::new(state, options), deps, Input::Start)
}

/// Resumes a run that ended `suspended` (the state its result carries)
/// with a person's decisions, one per pending call: approved calls run,
/// rejected ones and answers become results, and the run goes on in place.
/// Decisions that do not fit what it waits for are refused before anything
/// runs.
///
/// ```
/// use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
/// use agentloop_engine::{RunDeps, collect, decide, run};
/// use agentloop_types::{Decision, LoopOptions, LoopStatus, Message};
/// use serde_json::json;
///
/// # futures::executor::block_on(async {
/// let ask = ScriptedTurn::new().tool_call("q1", "ask_user", json!({"question": "Colour?"}));
/// let answer = ScriptedTurn::new().text("Blue it is.");
/// let provider = ScriptedProvider::new([ask, answer]);
/// let tools = vec![std::sync::Arc::new(AskUser) as _];
/// let deps = RunDeps::new(provider.clone()).with_tools(tools.clone());
/// let first = collect(run(LoopOptions::default(), vec![Message::user_text("u1", "Paint it")], deps)).await;
/// let LoopStatus::Suspended { pending, state: Some(state) } = first.status else { panic!() };
/// assert_eq!(pending[0].call.id, "q1");
///
/// let decisions = [("q1".to_owned(), Decision::Answer { text: "blue".into() })].into();
/// let deps = RunDeps::new(provider).with_tools(tools);
/// let done = collect(decide(LoopOptions::default(), *state, decisions, deps).unwrap()).await;
/// assert_eq!(done.final_text().as_deref(), Some("Blue it is."));
/// # });
/// # struct AskUser;
/// # impl agentloop_types::Tool for AskUser {
/// #     fn name(&self) -> &str { "ask_user" }
/// #     fn description(&self) -> &str { "Asks." }
/// #     fn input_schema(&self) -> serde_json::Value { json!({"type": "object"}) }
/// #     fn execute(self: std::sync::Arc<Self>, input: serde_json::Value, _: agentloop_types::ToolContext) -> agentloop_types::ToolStream {
/// #         agentloop_types::single_result(async move { agentloop_types::ToolResult::suspend(input["question"].as_str().unwrap_or_default()) })
/// #     }
/// # }
/// ```
pub fn decide(
    options: LoopOptions,
    state: RunState,
    decisions: Decisions,
    deps: RunDeps,
) -> Result<RunStream, DecisionError> {
    let machine = Machine::new(state, options);
    machine.check_decisions(&decisions)?;
    Ok(drive_machine(machine, deps, Input::Decisions { decisions }))
}

/// Cancels a run that ended `suspended`: every call it waits on is
/// answered as cancelled, and the stream ends with its `cancelled` result.
pub fn cancel_waiting(
    options: LoopOptions,
    state: RunState,
    deps: RunDeps,
) -> Result<RunStream, DecisionError> {
    let machine = Machine::new(state, options);
    if machine.pending().is_empty() {
        return Err(DecisionError::NotWaiting);
    }
    Ok(drive_machine(machine, deps, cancelled()))
}

/// How far [`settle`] took a stored run.
#[derive(Debug, Clone)]
pub struct Settled {
    /// The events of the steps taken, in order.
    pub events: Vec<EventKind>,
    /// The state after them, for storing.
    pub state: RunState,
    /// Why the machine refused to start (a finished run, or one that waits
    /// for decisions): nothing was stepped.
    pub refused: Option<StepError>,
}

/// Continues a stored run as far as it goes without I/O, and stops at the
/// first step that needs the model, a tool, the retriever or a person
/// (or at its end). Calls the core answers itself — those in
/// [`RunState::interrupted_calls`] among them — get their answers straight
/// back, with no tool events: nothing runs. A crashed run is repaired this
/// way (its started calls closed and committed) before it is continued
/// with [`resume`].
pub fn settle<T: Into<OfferedTool>>(
    options: LoopOptions,
    state: RunState,
    tools: impl IntoIterator<Item = T>,
) -> Settled {
    settle_handing_off(options, state, tools, None)
}

/// [`settle`] for a run whose agents hand off to each other as `handoffs`
/// says (the tools given are its root agent's): a run stored while
/// another agent spoke goes on with that agent.
pub fn settle_handing_off<T: Into<OfferedTool>>(
    options: LoopOptions,
    state: RunState,
    tools: impl IntoIterator<Item = T>,
    handoffs: Option<&Handoffs>,
) -> Settled {
    let mut machine = Machine::new(state, options)
        .with_tools(tools)
        .with_handoffs(handoffs.and_then(|h| h.plan().ok()));
    let mut events = Vec::new();
    let mut input = Input::Start;
    let refused = loop {
        let output = match machine.step(input) {
            Ok(output) => output,
            Err(error) => break Some(error),
        };
        events.extend(output.events);
        input = match output.next {
            Step::RunTools { calls } if calls.iter().all(|c| c.answer.is_some()) => {
                Input::ToolsDone {
                    results: calls
                        .into_iter()
                        .filter_map(|c| Some((c.call.id, ToolOutcome::Finished(c.answer?))))
                        .collect(),
                    child_tokens: Default::default(),
                }
            }
            Step::CallModel { .. }
            | Step::RunTools { .. }
            | Step::Retrieve { .. }
            | Step::Summarise { .. }
            | Step::Hook { .. }
            | Step::Done => break None,
        };
    };
    Settled {
        events,
        state: machine.state().clone(),
        refused,
    }
}

fn drive_machine(machine: Machine, mut deps: RunDeps, first: Input) -> RunStream {
    // The run's own token: cancelled with the caller's, and by dropping the
    // stream, without touching other runs that share the caller's token.
    let cancel = deps.cancel.child_token();
    deps.cancel = cancel.clone();
    // How an output schema is asked for follows from the API the provider
    // speaks, decided here once for the run.
    let machine = machine
        .with_api(deps.provider.api())
        .with_tools(deps.tools.iter().map(|t| OfferedTool::of(t.as_ref())))
        .with_hooks(deps.hooks.points(), deps.hooks.max_continues)
        .with_input_guardrails(!deps.guardrails.is_empty())
        .with_handoffs(deps.handoffs.as_deref().and_then(|h| h.plan().ok()));
    // Child runs (a minion's, a skill's) are started inside their tool
    // call's span, so this span nests under it.
    let span = tracing::info_span!(
        "invoke_agent",
        otel.name = "invoke_agent",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.request.model = %machine.options().request.model,
        agentloop.run_id = %machine.run_id(),
        agentloop.project_id = %machine.options().project_id,
        agentloop.chat_id = machine.options().chat_id.as_deref(),
    );
    let limit = machine.options().timeout_ms.map(Duration::from_millis);
    let deadline = Deadline::default();
    let on_drop = cancel.clone();
    RunStream::new(move |emitter| {
        let run = Box::new(Driven {
            machine,
            deps,
            deadline: deadline.clone(),
            emitter,
            first,
        });
        async move {
            let Some(limit) = limit else {
                return drive(run).await;
            };
            // The timer runs beside the drive and only cancels the run's
            // token: the drive then reports the cancel as a passed deadline.
            let timer = Box::pin(async move {
                tokio::time::sleep(limit).await;
                deadline.pass();
                cancel.cancel();
                std::future::pending::<()>().await;
            });
            let driving = Box::pin(drive(run));
            futures::future::select(driving, timer).await;
        }
        .instrument(span)
    })
    .cancel_on_drop(on_drop)
}

/// Whether the run's wall-clock limit has passed: set by the timer, read by
/// the drive when it reports a cancel.
#[derive(Clone, Default)]
struct Deadline(Arc<AtomicBool>);

impl Deadline {
    fn pass(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// `input` as the machine must see it: a cancel after the deadline
    /// passed is [`Input::TimedOut`].
    fn report(&self, input: Input) -> Input {
        match input {
            Input::Cancelled {
                partial_turn,
                finished_tools,
                child_tokens,
            } if self.0.load(Ordering::Acquire) => Input::TimedOut {
                partial_turn,
                finished_tools,
                child_tokens,
            },
            other => other,
        }
    }
}

/// What a run's driver owns, boxed: an async fn holds each by-value
/// argument twice in its future (the argument and its binding), and so
/// does each async block around it; a server keeps one such future per
/// run it executes.
struct Driven {
    /// Also what the run was given as options (`Machine::options`).
    machine: Machine,
    deps: RunDeps,
    deadline: Deadline,
    emitter: Emitter,
    /// What the machine's first step is given; taken when the drive starts.
    first: Input,
}

async fn drive(mut run: Box<Driven>) {
    let Driven {
        machine,
        deps,
        deadline,
        emitter,
        first,
    } = &mut *run;
    let mut input = std::mem::replace(first, Input::Start);
    // Interrupt requests the run has answered: those before it started,
    // and those before it last took its inbox's messages.
    let mut seen = deps.interrupt.as_ref().map_or(0, Interrupt::mark);
    // The largest spend of one model call so far: the next call's
    // estimate for the run's budget.
    let mut largest: Option<Spend> = None;
    let mut sent = SentRequests::default();
    loop {
        let output = match machine.step(deadline.report(input)) {
            Ok(output) => output,
            Err(error) => {
                emitter.emit(machine.refusal(&error)).await;
                return;
            }
        };
        for event in output.events {
            emitter.emit(event).await;
        }
        if matches!(output.next, Step::Done) {
            // A suspended run's state is stored like any step's.
            if !machine.pending().is_empty() {
                emitter.checkpoint(|| machine.state().clone()).await;
            }
            return;
        }
        // Before hooks that may be asked again (or none at all), no step is
        // stored: a run resumed there asks them again.
        let hooks_only = matches!(&output.next,
            Step::Hook { requests } if !deps.hooks.store_before_asking(requests));
        if !hooks_only {
            emitter.checkpoint(|| machine.state().clone()).await;
        }
        if deps.cancel.is_cancelled() {
            input = cancelled();
            continue;
        }
        // A step boundary: messages sent to the run join its history
        // before the model call goes out.
        if matches!(output.next, Step::CallModel { .. }) {
            let mark = deps.interrupt.as_ref().map_or(0, Interrupt::mark);
            if let Some(messages) = queued(machine, deps, &deps.cancel).await {
                seen = mark;
                input = Input::Steer {
                    messages,
                    interrupted: None,
                };
                continue;
            }
        }
        // The step runs under a token of its own, which an interrupt
        // cancels; the run's token still cancels it too.
        let run_cancel = deps.cancel.clone();
        let step_cancel = run_cancel.child_token();
        deps.cancel = step_cancel.clone();
        // The agent the step is for, in a run that hands off.
        let speaker = machine.speaker();
        let agent = speaker
            .as_deref()
            .zip(deps.handoffs.as_deref())
            .and_then(|(name, handoffs)| handoffs.agent(name));
        input = match output.next {
            Step::Done => return,
            Step::CallModel {
                iteration,
                messages,
                tools,
                response_format,
                guard_input,
            } => {
                let hold = match reserve(machine, deps, iteration, largest).await {
                    Ok(hold) => hold,
                    Err(refused) => {
                        deps.cancel = run_cancel;
                        input = refused;
                        continue;
                    }
                };
                let span = tracing::info_span!(
                    "agentloop.model_turn",
                    iteration,
                    gen_ai.input.messages = tracing::field::Empty,
                    gen_ai.output.messages = tracing::field::Empty,
                );
                let capture = crate::telemetry::capture_content();
                // The request becomes the provider's stream here, before
                // any await, so the turn's future does not hold it.
                // What the input guardrails check: the same shared history.
                let guarded = messages.clone();
                let turn = {
                    let mut request_options = machine.options().request.clone();
                    if let Some(agent) = agent {
                        request_options.system_prompt = agent.instructions.clone();
                        if let Some(model) = &agent.model {
                            request_options.model = model.clone();
                        }
                    }
                    let provider = agent
                        .and_then(|a| a.provider.as_deref())
                        .unwrap_or(deps.provider.as_ref());
                    let request = ModelRequest {
                        options: request_options,
                        response_format,
                        messages,
                        tools,
                        attachments: deps.attachments.clone(),
                    };
                    let record = sent.record(&request, machine.history());
                    if capture {
                        span.record(
                            "gen_ai.input.messages",
                            json_text(&request.messages).as_str(),
                        );
                    }
                    // In the turn's span: a provider's own spans nest
                    // under it.
                    span.in_scope(|| {
                        ModelTurn::start(provider, request, iteration, speaker, record)
                    })
                };
                // The rare futures (a guarded turn, a summary) are boxed:
                // inline, they would enlarge the drive future, which every
                // run holds for its whole life.
                let input = if guard_input && !deps.guardrails.is_empty() {
                    Box::pin(guarded_turn(turn, guarded, deps, emitter))
                        .instrument(span.clone())
                        .await
                } else {
                    let turn = Box::pin(turn.run(&deps.cancel, emitter).instrument(span.clone()));
                    let (input, interrupted) =
                        interruptible(turn, &step_cancel, deps.interrupt.as_ref(), seen).await;
                    match input {
                        Input::Cancelled { partial_turn, .. }
                            if interrupted && !run_cancel.is_cancelled() =>
                        {
                            seen = deps.interrupt.as_ref().map_or(seen, Interrupt::mark);
                            let messages =
                                queued(machine, deps, &run_cancel).await.unwrap_or_default();
                            Input::Steer {
                                messages,
                                interrupted: Some(partial_turn.unwrap_or_default()),
                            }
                        }
                        other => other,
                    }
                };
                if capture && let Input::ModelTurn { content, .. } = &input {
                    span.record("gen_ai.output.messages", json_text(content).as_str());
                }
                account(deps, hold, turn_spend(&input), &mut largest).await;
                input
            }
            Step::Summarise { messages } => {
                // A summary is a model call the run pays for: reserved
                // like the call it makes room for.
                let iteration = machine.state().iteration + 1;
                let hold = match reserve(machine, deps, iteration, largest).await {
                    Ok(hold) => hold,
                    Err(refused) => {
                        deps.cancel = run_cancel;
                        input = refused;
                        continue;
                    }
                };
                let request = summary_request(machine.options(), messages);
                let input =
                    Box::pin(summary_turn(deps.provider.as_ref(), request, &deps.cancel)).await;
                account(deps, hold, turn_spend(&input), &mut largest).await;
                input
            }
            Step::RunTools { calls } => {
                let ids: Vec<String> = calls.iter().map(|c: &ToolCall| c.call.id.clone()).collect();
                let run = ToolRun {
                    tools: agent.map_or(&deps.tools, |a| &a.tools),
                    options: machine.options(),
                    run_id: machine.run_id(),
                    cancel: &deps.cancel,
                    budget: deps.budget.as_ref(),
                    clock: deps.clock.as_ref(),
                };
                let (input, interrupted) = interruptible(
                    Box::pin(run.run(calls, emitter)),
                    &step_cancel,
                    deps.interrupt.as_ref(),
                    seen,
                )
                .await;
                match input {
                    Input::Cancelled {
                        finished_tools,
                        child_tokens,
                        ..
                    } if interrupted && !run_cancel.is_cancelled() => {
                        seen = deps.interrupt.as_ref().map_or(seen, Interrupt::mark);
                        Input::ToolsDone {
                            results: interrupted_results(ids, finished_tools),
                            child_tokens,
                        }
                    }
                    other => other,
                }
            }
            Step::Hook { requests } => {
                let hooks = &deps.hooks;
                let asked = futures::future::join_all(requests.iter().map(|r| hooks.answer(r)));
                match or_cancelled(&deps.cancel, asked).await {
                    None => cancelled(),
                    Some(answers) => Input::Hooked {
                        answers: answers.into_iter().flatten().collect(),
                    },
                }
            }
            Step::Retrieve { query, limit } => match &deps.retriever {
                None => Input::Retrieved {
                    passages: Ok(Vec::new()),
                },
                Some(retriever) => {
                    match or_cancelled(&deps.cancel, retriever.retrieve(&query, limit)).await {
                        None => cancelled(),
                        Some(found) => Input::Retrieved {
                            passages: found.map_err(|e| e.to_string()),
                        },
                    }
                }
            },
        };
        deps.cancel = run_cancel;
    }
}

/// Runs a step's `work` until it ends; when `interrupt` asks (after
/// `seen`) first, cancels the step's token and waits for the work to
/// report its cancel. Says whether it was interrupted. The work comes
/// boxed: an async fn holds a future it is given by value up to three
/// times in its own (the argument, the pinned binding, the awaited one),
/// and the drive future that awaits this one is held by every run for its
/// whole life.
async fn interruptible<F: Future<Output = Input>>(
    mut work: Pin<Box<F>>,
    step: &CancellationToken,
    interrupt: Option<&Interrupt>,
    seen: u64,
) -> (Input, bool) {
    let Some(interrupt) = interrupt else {
        return (work.await, false);
    };
    let asked = std::pin::pin!(interrupt.after(seen));
    match futures::future::select(work.as_mut(), asked).await {
        futures::future::Either::Left((input, _)) => (input, false),
        futures::future::Either::Right(((), work)) => {
            step.cancel();
            (work.await, true)
        }
    }
}

/// The outcomes of an interrupted tool step's calls, in call order: those
/// that finished, and for the others an error saying the interrupt stopped
/// them.
fn interrupted_results(
    ids: Vec<String>,
    mut finished: Vec<(String, ToolOutcome)>,
) -> Vec<(String, ToolOutcome)> {
    ids.into_iter()
        .map(
            |id| match finished.iter().position(|(done, _)| *done == id) {
                Some(pos) => finished.swap_remove(pos),
                None => (
                    id,
                    ToolOutcome::Finished(agentloop_types::ToolResult::error(
                        crate::machine::INTERRUPTED_RUNNING,
                    )),
                ),
            },
        )
        .collect()
}

/// The messages the run's inbox holds that its history does not, when
/// there are some and the machine takes them now (`cancel`: the run's
/// token).
async fn queued(
    machine: &Machine,
    deps: &RunDeps,
    cancel: &CancellationToken,
) -> Option<Vec<Message>> {
    let inbox = deps.inbox.as_ref()?;
    if !machine.steerable() {
        return None;
    }
    let found = match or_cancelled(cancel, inbox.queued()).await? {
        Ok(found) => found,
        Err(error) => {
            tracing::warn!(run_id = %machine.run_id(), %error,
                           "the run's inbox could not be read; asked again at the next step");
            return None;
        }
    };
    let fresh: Vec<Message> = found
        .into_iter()
        .filter(|m| !machine.holds_message(&m.id))
        .collect();
    (!fresh.is_empty()).then_some(fresh)
}

/// A turn with the run's input guardrails beside it: a trip cancels the
/// turn at once (through a child of the run's token) and is reported in
/// place of its answer, which is reported only once every guardrail passed.
async fn guarded_turn(
    turn: ModelTurn,
    messages: agentloop_types::History,
    deps: &RunDeps,
    emitter: &mut Emitter,
) -> Input {
    let turn_cancel = deps.cancel.child_token();
    let checks = async {
        let trip = or_cancelled(
            &deps.cancel,
            Box::pin(agentloop_types::first_trip(&deps.guardrails, &messages)),
        )
        .await
        .flatten();
        if trip.is_some() {
            turn_cancel.cancel();
        }
        trip
    };
    let (input, trip) = futures::join!(turn.run(&turn_cancel, emitter), checks);
    match trip {
        Some((guardrail, reason)) => Input::GuardrailTripped {
            guardrail,
            reason,
            usage: match &input {
                Input::ModelTurn { usage, .. } => Some(*usage),
                _ => None,
            },
        },
        None => input,
    }
}

/// What a model call's answer says it spent: its usage, when it came
/// (a failed turn's too, when its usage arrived before the failure).
fn turn_spend(input: &Input) -> Option<Spend> {
    match input {
        Input::ModelTurn { usage, .. } | Input::Summary { usage, .. } => Some(Spend::of(usage)),
        Input::GuardrailTripped { usage, .. } => usage.as_ref().map(Spend::of),
        Input::ModelFailed {
            error: agentloop_types::LoopError::Provider { error },
        } => error
            .partial
            .as_ref()
            .and_then(|p| p.usage.as_ref())
            .map(Spend::of),
        _ => None,
    }
}

/// Reserves the run's next model call (its turn `iteration`) with the
/// run's budget, if it has one: the hold to settle once the call is made,
/// or the input to go on with instead (the budget refused, or the run was
/// cancelled while it asked).
async fn reserve(
    machine: &Machine,
    deps: &RunDeps,
    iteration: u32,
    largest: Option<Spend>,
) -> Result<Option<BudgetHold>, Input> {
    let Some(budget) = &deps.budget else {
        return Ok(None);
    };
    let call = BudgetCall {
        run_id: machine.run_id().to_owned(),
        iteration,
        largest_earlier: largest,
        max_output_tokens: Some(machine.options().request.max_tokens).filter(|max| *max > 0),
    };
    match or_cancelled(&deps.cancel, budget.reserve(&call)).await {
        None => Err(cancelled()),
        Some(Err(refusal)) => Err(Input::BudgetRefused {
            budget: refusal.budget,
        }),
        Some(Ok(hold)) => Ok(hold),
    }
}

/// Accounts for a model call made: what it spent (when known) becomes
/// the run's `largest` if it is, and its hold is settled with it. Not
/// cancelled with the run: a reservation left open would hold the budget
/// until cleared.
async fn account(
    deps: &RunDeps,
    hold: Option<BudgetHold>,
    spent: Option<Spend>,
    largest: &mut Option<Spend>,
) {
    if let Some(spent) = spent {
        *largest = Some(largest.map_or(spent, |l| l.max(spent)));
    }
    if let (Some(budget), Some(hold)) = (&deps.budget, hold) {
        budget.settle(hold, spent.unwrap_or_default()).await;
    }
}

/// Content as JSON text for a span attribute.
fn json_text<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

fn cancelled() -> Input {
    Input::Cancelled {
        partial_turn: None,
        finished_tools: Vec::new(),
        child_tokens: Default::default(),
    }
}

/// A process-unique run id from the run's clock. Not random: ids only need
/// to be unique among the runs one store holds, and callers that need more
/// pass their own.
fn generate_run_id(clock: &dyn Clock) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = clock.since_epoch().as_nanos();
    format!("run-{nanos:x}-{}", COUNTER.fetch_add(1, Ordering::Relaxed))
}
