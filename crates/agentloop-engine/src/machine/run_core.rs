//! The run core: the one place that commits messages, assigns their ids,
//! accounts tokens, checks limits, validates the history, plans and closes
//! tool calls and emits the terminal event. Strategies decide *what* to do;
//! they do it only through these methods.

use std::sync::Arc;

use agentloop_types::{
    AgentCompletionEvent, AgentErrorEvent, ContextEdit, ContextEditedEvent, FinishedEvent,
    MessageCreatedEvent, PendingToolResultEvent, TokensConsumedEvent,
};
use agentloop_types::{
    BreakLoop, ContentBlock, EventKind, HandoffHistory, History, HistoryCheck, LimitKind,
    LoopError, LoopOptions, LoopResult, LoopStatus, Message, Passage, Role, RunPhase, RunState,
    TokenTotals, ToolResult, ToolResultBlock, ToolUseBlock, handoff_tool_name,
};
use serde::{Deserialize, Serialize};

use super::answers::{
    CANCELLED_NOT_RUN, CANCELLED_RUNNING, CANCELLED_WAITING, INTERRUPTED_NOT_RUN, NO_RESULT,
    ToolOutcome, committed_block, exceeded_limit, interrupted, refusal, resolve_options,
    running_block,
};
use super::compaction::{Compaction, PendingSummary};
use super::context_edits::ContextEdits;
use super::output::OutputRules;
use super::passages::{inject_passages, last_user_text};
use super::protocol::{OfferedTool, Step, ToolCall};
use super::waits::Waiting;

mod call_ids;
mod compact;
mod context;
mod final_answer;
mod handoff;
mod hooks;
mod waiting;

pub(crate) use super::handoffs::TakenHandoff;
use super::handoffs::{AgentTools, HandoffPlan, handoff_answer};
pub(crate) use super::hook_steps::{AfterHooks, HookConfig, PendingHook};
pub(crate) use super::offer::ToolOffer;

/// What a run is given and never stores: its options and the tools it may
/// offer.
#[derive(Debug, Clone)]
pub(crate) struct Env {
    pub(crate) options: LoopOptions,
    /// The offered tools: every tool given, narrowed by
    /// `LoopOptions::enabled_tools`.
    pub(crate) tools: Vec<OfferedTool>,
    /// What the final answer is held to, when the run has an output schema
    /// and its strategy honours it (boxed: most runs have none).
    pub(crate) output: Option<Box<OutputRules>>,
    /// Where the run asks its hooks.
    pub(crate) hooks: HookConfig,
    /// Whether input guardrails run beside the run's first model call.
    pub(crate) input_guardrails: bool,
    /// The agents the run hands off between, when it does.
    pub(crate) handoffs: Option<Arc<HandoffPlan>>,
    /// What the root agent offers (with the `final_output` tool when the
    /// run asks through it), built once and shared by every request.
    root: AgentTools,
    /// What each other agent of the plan offers, in the plan's order.
    agents: Vec<AgentTools>,
}

impl Env {
    pub(crate) fn new(
        options: LoopOptions,
        available: Vec<OfferedTool>,
        output: Option<Box<OutputRules>>,
    ) -> Self {
        let tools: Vec<OfferedTool> = available
            .into_iter()
            .filter(|t| {
                options.enabled_tools.is_empty()
                    || options.enabled_tools.contains(&t.definition.name)
            })
            .collect();
        let mut env = Self {
            options,
            tools,
            output,
            hooks: HookConfig::default(),
            input_guardrails: false,
            handoffs: None,
            root: AgentTools::new(Vec::new(), Vec::new(), None, HandoffHistory::Full),
            agents: Vec::new(),
        };
        env.build();
        env
    }

    /// Builds what each agent offers from the tools, the output rules and
    /// the handoff plan.
    fn build(&mut self) {
        let output_tool = self.output.as_deref().and_then(OutputRules::tool);
        let plan = self.handoffs.as_deref();
        let root_targets = plan
            .map(|p| p.targets(&p.root_handoffs))
            .unwrap_or_default();
        self.root = AgentTools::new(
            self.tools.clone(),
            root_targets,
            output_tool,
            HandoffHistory::Full,
        );
        self.agents = plan
            .map(|p| {
                p.agents
                    .iter()
                    .map(|a| {
                        AgentTools::new(
                            a.tools.clone(),
                            p.targets(&a.handoffs),
                            output_tool,
                            a.history,
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
    }

    /// The same env holding the answer to `output` instead.
    pub(crate) fn with_output(mut self, output: Option<OutputRules>) -> Self {
        self.output = output.map(Box::new);
        self.build();
        self
    }

    /// The same env offering `tools` (narrowed by `enabled_tools`).
    pub(crate) fn with_tools(self, tools: Vec<OfferedTool>) -> Self {
        let Self {
            options,
            output,
            hooks,
            input_guardrails,
            handoffs,
            ..
        } = self;
        let mut env = Self::new(options, tools, output);
        env.hooks = hooks;
        env.input_guardrails = input_guardrails;
        env.handoffs = handoffs;
        env.build();
        env
    }

    /// The same env handing off between the agents of `plan`.
    pub(crate) fn with_handoffs(mut self, plan: Option<HandoffPlan>) -> Self {
        self.handoffs = plan.map(Arc::new);
        self.build();
        self
    }

    /// What `agent` offers: the root's when it is `None` (or not in the
    /// plan, which a resumed run refuses before its first step).
    pub(crate) fn agent(&self, agent: Option<&str>) -> &AgentTools {
        let found = agent
            .zip(self.handoffs.as_deref())
            .and_then(|(name, plan)| {
                let at = plan.agents.iter().position(|a| a.name == name)?;
                self.agents.get(at)
            });
        found.unwrap_or(&self.root)
    }
}

/// A model call decided and not yet answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ModelCall {
    /// Its 1-based number among the run's model calls.
    pub(crate) iteration: u32,
    /// Messages sent after the history and not committed (prompts,
    /// passages).
    pub(crate) extra: Vec<Message>,
    /// The tools offered.
    pub(crate) offer: ToolOffer,
    /// Whether the turn joins the history: a cancel mid-turn then commits
    /// what streamed.
    pub(crate) commit_turn: bool,
    /// Failed attempts so far.
    pub(crate) failures: u32,
}

/// A retrieval decided and not yet answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Retrieval {
    pub(crate) query: String,
    pub(crate) limit: usize,
}

/// The shared, serialisable core of a run; see the module docs. Phases
/// most runs never enter (a retrieval, a compaction, a summary, a handoff,
/// a wait, a hook) are boxed: every run in flight holds this struct.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunCore {
    pub(crate) state: RunState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) model_call: Option<ModelCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) retrieval: Option<Box<Retrieval>>,
    /// Answers sent back for not fitting the output schema.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) output_retries: u32,
    /// What requests send in place of the older history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) compaction: Option<Box<Compaction>>,
    /// A summarising call in flight, made before the model call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) summary: Option<Box<PendingSummary>>,
    /// The tool step's calls that wait for a person, and what it has so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) waiting: Option<Box<Waiting>>,
    /// A hook step in flight, and what comes after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) hook: Option<Box<PendingHook>>,
    /// Whether the start hooks were asked (or had nothing to ask).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) hooks_started: bool,
    /// Times `run_end` hooks sent the run back to the model.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) continues: u32,
    /// A plan step's run inside another: no `run_end` hooks.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) nested: bool,
    /// The agent speaking, when the root handed the conversation off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) agent: Option<String>,
    /// Handoffs taken so far.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) handoffs: u32,
    /// The id of the last message before the speaking agent took over:
    /// what its history filter cuts at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) handoff_point: Option<String>,
    /// A handoff the tool step in flight takes, made before the next model
    /// call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) handoff_to: Option<Box<TakenHandoff>>,
    /// Tools loaded by tool search, results shortened and cleared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) context: Option<Box<ContextEdits>>,
    /// Events of the step in progress.
    #[serde(skip)]
    events: Vec<EventKind>,
    /// The pairing rules, checked over what was appended since the last
    /// model call (a restored run checks its history once, in full).
    #[serde(skip)]
    history_check: CheckedPrefix,
}

/// A cache of what the pairing rules already passed: not part of the
/// run's value, so two cores differing only in it are equal.
#[derive(Debug, Clone, Default)]
struct CheckedPrefix(HistoryCheck);

impl PartialEq for CheckedPrefix {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl RunCore {
    pub(crate) fn new(state: RunState) -> Self {
        Self {
            state,
            model_call: None,
            retrieval: None,
            output_retries: 0,
            compaction: None,
            summary: None,
            waiting: None,
            hook: None,
            hooks_started: false,
            continues: 0,
            nested: false,
            agent: None,
            handoffs: 0,
            handoff_point: None,
            handoff_to: None,
            context: None,
            events: Vec::new(),
            history_check: CheckedPrefix::default(),
        }
    }

    pub(crate) fn emit(&mut self, kind: EventKind) {
        self.events.push(kind);
    }

    pub(crate) fn take_events(&mut self) -> Vec<EventKind> {
        std::mem::take(&mut self.events)
    }

    pub(crate) fn run_id(&self) -> &str {
        &self.state.run_id
    }

    pub(crate) fn messages(&self) -> &[Message] {
        &self.state.messages
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.state.phase == RunPhase::Finished
    }

    /// A message id of this run: `{run_id}-{n}`.
    pub(crate) fn next_id(&mut self) -> String {
        use std::fmt::Write as _;
        self.state.created_messages += 1;
        // Sized up front: `format!` guesses too small and grows once more.
        let mut id = String::with_capacity(self.state.run_id.len() + 11);
        let _ = write!(id, "{}-{}", self.state.run_id, self.state.created_messages);
        id
    }

    /// Appends a message to the history and reports it.
    pub(crate) fn commit(&mut self, role: Role, content: Vec<ContentBlock>) {
        let id = self.next_id();
        self.commit_as(Message::new(id, role, content));
    }

    fn commit_as(&mut self, message: Message) {
        self.emit(EventKind::MessageCreated(MessageCreatedEvent {
            message: message.clone(),
        }));
        self.state.messages.push(message);
    }

    /// The message committed last.
    fn last_committed(&self) -> Option<Message> {
        self.state.messages.last().cloned()
    }

    /// Commits tool results as the user message `id`.
    pub(crate) fn commit_results(&mut self, id: String, results: Vec<ToolResultBlock>) {
        let content = results.into_iter().map(ContentBlock::ToolResult).collect();
        self.commit_as(Message::new(id, Role::User, content));
    }

    /// Adds a model turn's usage and reports it.
    pub(crate) fn consume(&mut self, usage: TokenTotals) {
        self.state.totals += usage;
        self.emit(EventKind::TokensConsumed(TokensConsumedEvent {
            tokens: usage,
        }));
    }

    /// Adds tokens a nested run reported itself.
    pub(crate) fn add_tokens(&mut self, tokens: TokenTotals) {
        self.state.totals += tokens;
    }

    /// Replaces the history with the one a nested run ended with (it began
    /// from this run's history and committed under its own ids).
    pub(crate) fn adopt_history(&mut self, messages: History) {
        self.state.messages = messages;
    }

    /// Inserts cited passages before the last message (sent with every
    /// later call, never reported as created).
    pub(crate) fn inject_passages(&mut self, passages: &[Passage]) {
        let messages = std::mem::take(&mut self.state.messages).into_vec();
        self.state.messages = inject_passages(messages, passages).into();
    }

    /// Retrieval for the latest user text, if there is any.
    pub(crate) fn retrieve(&mut self, limit: usize) -> Option<Step> {
        let query = last_user_text(&self.state.messages)?;
        let retrieval = Retrieval { query, limit };
        let step = Step::Retrieve {
            query: retrieval.query.clone(),
            limit,
        };
        self.retrieval = Some(Box::new(retrieval));
        Some(step)
    }

    /// Clears the retrieval in flight, which `found` answered (nothing when
    /// it failed), and says what is sent for it: a `context_edited` event
    /// naming the passages' sources, when it found any. False when no
    /// retrieval was in flight.
    pub(crate) fn take_retrieval(&mut self, found: &[Passage]) -> bool {
        let Some(retrieval) = self.retrieval.take() else {
            return false;
        };
        if !found.is_empty() {
            let edit = ContextEdit::PassagesRecalled {
                query: retrieval.query,
                sources: found.iter().map(|p| p.source.clone()).collect(),
            };
            self.emit(EventKind::ContextEdited(Box::new(ContextEditedEvent {
                edit,
            })));
        }
        true
    }

    /// Decides a model call over the history plus `extra`, unless a limit
    /// is reached or the history is invalid (then the run finishes).
    pub(crate) fn call_model(
        &mut self,
        env: &Env,
        extra: Vec<Message>,
        offer: ToolOffer,
        commit_turn: bool,
    ) -> Step {
        self.state.phase = RunPhase::CallModel;
        if let Some(step) = self.hand_off(env) {
            return step;
        }
        let options = &env.options;
        if self.state.iteration >= options.max_iterations {
            return self.finish(LoopStatus::MaxIterations);
        }
        if let Some(limit) =
            exceeded_limit(&options.limits, self.state.iteration, &self.state.totals)
        {
            return self.finish(LoopStatus::LimitExceeded {
                limit,
                budget: None,
            });
        }
        if let Err(error) = self
            .history_check
            .0
            .check(&self.state.messages, &extra, false)
        {
            let error = LoopError::InvalidHistory { error };
            return self.finish(LoopStatus::Error { error });
        }
        self.state.iteration += 1;
        let call = ModelCall {
            iteration: self.state.iteration,
            extra,
            offer,
            commit_turn,
            failures: 0,
        };
        if let Some(step) = self.model_call_hooks(env, call.iteration) {
            self.model_call = Some(call);
            return step;
        }
        self.send(env, call)
    }

    /// Messages sent to the run join the history before the model call in
    /// flight, which is sent again over it (compacted anew when needed);
    /// a call that was interrupted keeps what it streamed, when its turn
    /// would have joined the history, and is made again as the next model
    /// call. A message that is not a person's (it holds tool calls or
    /// results) ends the run with an invalid history.
    pub(crate) fn steer(
        &mut self,
        env: &Env,
        messages: Vec<Message>,
        interrupted: Option<Vec<ContentBlock>>,
    ) -> Step {
        let Some(call) = self.model_call.take() else {
            return self.invalid("messages to steer with no model call in flight");
        };
        let again = interrupted.is_some();
        if let Some(partial) = interrupted
            && call.commit_turn
            && !partial.is_empty()
        {
            self.commit(Role::Assistant, partial);
            if let Some(message) = self.last_committed() {
                self.close_calls(&message, INTERRUPTED_NOT_RUN);
            }
        }
        for message in messages {
            if message.role != Role::User
                || message.tool_uses().next().is_some()
                || message.tool_results().next().is_some()
            {
                return self.invalid("a message sent to the run is not a person's message");
            }
            self.commit_as(message);
        }
        if again {
            return self.call_model(env, call.extra, call.offer, call.commit_turn);
        }
        if let Err(error) = self
            .history_check
            .0
            .check(&self.state.messages, &call.extra, false)
        {
            let error = LoopError::InvalidHistory { error };
            return self.finish(LoopStatus::Error { error });
        }
        self.send(env, call)
    }

    /// Sends `call` (after compacting what it sends, when needed).
    fn send(&mut self, env: &Env, call: ModelCall) -> Step {
        self.edit_context(env, &call);
        let step = match self.compact(env, &call) {
            Some(summarise) => summarise,
            None => self.request(env, &call),
        };
        self.model_call = Some(call);
        step
    }

    fn request(&self, env: &Env, call: &ModelCall) -> Step {
        Step::CallModel {
            iteration: call.iteration,
            messages: self.sent_messages(env, call, self.compaction.as_deref()),
            tools: self.offered_tools(env, &call.offer),
            response_format: env.output.as_deref().and_then(OutputRules::native).cloned(),
            guard_input: env.input_guardrails && call.iteration == 1 && !self.nested,
        }
    }

    /// An input guardrail tripped during the first model call: the turn
    /// is dropped (its tokens counted when it had finished) and the run
    /// ends `error`, naming the guardrail.
    pub(crate) fn guardrail_tripped(
        &mut self,
        guardrail: String,
        reason: String,
        usage: Option<TokenTotals>,
    ) -> Step {
        self.model_call = None;
        if let Some(usage) = usage {
            self.consume(usage);
        }
        let error = LoopError::Blocked {
            by: "guardrail".to_owned(),
            name: guardrail,
            reason,
        };
        self.finish(LoopStatus::Error { error })
    }

    /// Takes the model call a turn answers.
    pub(crate) fn take_call(&mut self) -> Option<ModelCall> {
        self.model_call.take()
    }

    /// After a failed model call: reports it as `agent_error` and calls
    /// again while retries remain, else finishes with the error.
    pub(crate) fn retry_or_fail(
        &mut self,
        env: &Env,
        error: LoopError,
        step: u32,
        max_retries: u32,
    ) -> Step {
        let Some(call) = self.model_call.take() else {
            return self.invalid("a model failure with no model call in flight");
        };
        if call.failures < max_retries {
            let failures = call.failures + 1;
            self.emit(EventKind::AgentError(AgentErrorEvent {
                message: format!("{error} (retry {failures} of {max_retries})"),
                step,
            }));
            let next = self.call_model(env, call.extra, call.offer, call.commit_turn);
            if let Some(call) = self.model_call.as_mut() {
                call.failures = failures;
            }
            return next;
        }
        self.emit(EventKind::AgentError(AgentErrorEvent {
            message: error.to_string(),
            step,
        }));
        self.finish(LoopStatus::Error { error })
    }

    /// Tool calls of the last assistant turn: `shown` are reported pending,
    /// `run` are the ones that run; their results go into one message.
    pub(crate) fn begin_tools(
        &mut self,
        env: &Env,
        shown: &[ToolUseBlock],
        run: Vec<ToolUseBlock>,
    ) -> Step {
        let result_message_id = self.next_id();
        self.emit_pending(&result_message_id, shown);
        self.run_calls(env, result_message_id, run)
    }

    /// [`begin_tools`](Self::begin_tools) where every call shown runs.
    pub(crate) fn begin_all_tools(&mut self, env: &Env, calls: Vec<ToolUseBlock>) -> Step {
        let result_message_id = self.next_id();
        self.emit_pending(&result_message_id, &calls);
        self.run_calls(env, result_message_id, calls)
    }

    fn emit_pending(&mut self, message_id: &str, shown: &[ToolUseBlock]) {
        self.emit(EventKind::PendingToolResult(PendingToolResultEvent {
            message_id: message_id.to_owned(),
            blocks: shown.iter().map(|c| running_block(c, Vec::new())).collect(),
        }));
    }

    fn run_calls(&mut self, env: &Env, result_message_id: String, run: Vec<ToolUseBlock>) -> Step {
        self.waiting = None;
        self.note_handoff(env, &run);
        self.load_found_tools(env, &run);
        let step = self.plan_step(env, &run);
        self.state.phase = RunPhase::RunTools {
            result_message_id,
            calls: run,
        };
        step
    }

    /// Which calls run, with which option values, and alone or not; which
    /// the core answers instead: calls interrupted in a stopped process,
    /// unknown tools, bad arguments, configured options that do not fit.
    fn plan_calls(&self, env: &Env, calls: Vec<ToolUseBlock>) -> Vec<ToolCall> {
        let agent = self.speaking(env);
        let handoff_tools: Vec<String> = agent
            .handoffs
            .iter()
            .map(|t| handoff_tool_name(&t.agent))
            .collect();
        // Not collected: read only when a call names a tool not offered.
        let offered = agent
            .tools
            .iter()
            .map(|t| t.definition.name.as_str())
            .chain(handoff_tools.iter().map(String::as_str));
        let mut handed = None;
        calls
            .into_iter()
            .map(|call| {
                let tool = agent.find(&call.name);
                let mut options = serde_json::Map::new();
                let answer = if self.state.interrupted_calls.contains(&call.id) {
                    Some(interrupted(&call.name))
                } else if let Some(to) = agent.handoff(&call.name) {
                    // The first handoff of a turn is taken; the others
                    // are answered as not taken.
                    Some(handoff_answer(to, &mut handed))
                } else if let Some(answer) = self.context_answer(env, &call) {
                    Some(answer)
                } else if let Some(refused) = refusal(&call, offered.clone()) {
                    Some(refused)
                } else {
                    let specs = tool.map(|t| t.options.as_slice()).unwrap_or_default();
                    let configured = env.options.tool_options.get(&call.name);
                    match resolve_options(&call.name, specs, configured) {
                        Ok(resolved) => {
                            options = resolved;
                            None
                        }
                        Err(message) => Some(ToolResult::error(message)),
                    }
                };
                let alone = tool.is_some_and(|t| t.runs_alone);
                ToolCall {
                    call,
                    answer,
                    alone,
                    options,
                    resume: None,
                }
            })
            .collect()
    }

    /// The step in flight when a stored run is resumed: the same model
    /// call, retrieval or tool calls (calls that may have started are
    /// answered, not run again). `None` when nothing was in flight.
    pub(crate) fn resume_pending(&mut self, env: &Env) -> Option<Step> {
        if let Some(step) = self.resume_hook() {
            return Some(step);
        }
        if self.summary.is_some() {
            return self.summary_step();
        }
        if let Some(call) = &self.model_call {
            return Some(self.request(env, call));
        }
        if let Some(retrieval) = &self.retrieval {
            return Some(Step::Retrieve {
                query: retrieval.query.clone(),
                limit: retrieval.limit,
            });
        }
        let RunPhase::RunTools {
            result_message_id,
            calls,
        } = &self.state.phase
        else {
            return None;
        };
        let (id, calls) = (result_message_id.clone(), calls.clone());
        self.emit(EventKind::PendingToolResult(PendingToolResultEvent {
            message_id: id,
            blocks: calls.iter().map(|c| running_block(c, Vec::new())).collect(),
        }));
        Some(self.plan_step(env, &calls))
    }

    /// The results of the pending calls, in call order, and the id of the
    /// message they go into; `None` when no calls were pending.
    pub(crate) fn tools_done(
        &mut self,
        mut results: Vec<(String, ToolOutcome)>,
        child_tokens: TokenTotals,
    ) -> Option<(String, Vec<(ToolUseBlock, ToolResult)>)> {
        let RunPhase::RunTools {
            result_message_id,
            calls,
        } = std::mem::replace(&mut self.state.phase, RunPhase::CallModel)
        else {
            return None;
        };
        self.state.totals += child_tokens;
        self.state.interrupted_calls.clear();
        let ordered = calls
            .into_iter()
            .map(|call| {
                let result = match results.iter().position(|(id, _)| *id == call.id) {
                    Some(pos) => results.swap_remove(pos).1.into_result(&call.name),
                    None => ToolResult::error(NO_RESULT),
                };
                (call, result)
            })
            .collect();
        Some((result_message_id, ordered))
    }

    /// Commits the results of a tool step under its reserved id.
    pub(crate) fn commit_tool_results(&mut self, id: String, blocks: Vec<ToolResultBlock>) {
        self.commit_results(id, blocks);
    }

    /// Accounts for a limit on tool calls: `None` when `count` more calls
    /// are allowed (and counts them), else the run finishes after every
    /// call is answered as not run.
    pub(crate) fn count_tool_calls(&mut self, env: &Env, calls: &[ToolUseBlock]) -> Option<Step> {
        let allowed = env
            .options
            .limits
            .max_tool_calls
            .map(|max| max.saturating_sub(self.state.tool_calls));
        if allowed.is_some_and(|allowed| (calls.len() as u64) > u64::from(allowed)) {
            let results = calls
                .iter()
                .map(|call| {
                    ToolResultBlock::error(
                        &call.id,
                        "Not run: the run reached its tool call limit.",
                    )
                })
                .collect();
            let id = self.next_id();
            self.commit_results(id, results);
            return Some(self.finish(LoopStatus::LimitExceeded {
                limit: LimitKind::ToolCalls,
                budget: None,
            }));
        }
        self.state.tool_calls += calls.len() as u32;
        None
    }

    /// The caller cancelled: pending calls get their result (or a
    /// cancelled one) followed by `extra`; a partial turn that joins the
    /// history is committed with its calls closed. Then the run finishes.
    pub(crate) fn cancel(
        &mut self,
        partial_turn: Option<Vec<ContentBlock>>,
        mut finished_tools: Vec<(String, ToolOutcome)>,
        child_tokens: TokenTotals,
        extra: Vec<ToolResultBlock>,
    ) -> Step {
        self.state.totals += child_tokens;
        self.retrieval = None;
        self.summary = None;
        self.hook = None;
        self.handoff_to = None;
        let call = self.model_call.take();
        let waiting = self.take_waiting();
        match std::mem::replace(&mut self.state.phase, RunPhase::CallModel) {
            RunPhase::RunTools {
                result_message_id,
                calls,
            } => {
                let mut blocks: Vec<ToolResultBlock> = calls
                    .iter()
                    .map(
                        |call| match finished_tools.iter().position(|(id, _)| *id == call.id) {
                            Some(pos) => committed_block(
                                &call.id,
                                finished_tools.swap_remove(pos).1.into_result(&call.name),
                            ),
                            None => match waiting.result(&call.id) {
                                Some(result) => committed_block(&call.id, result.clone()),
                                None if waiting.waits(&call.id) => {
                                    ToolResultBlock::error(&call.id, CANCELLED_WAITING)
                                }
                                None => ToolResultBlock::error(&call.id, CANCELLED_RUNNING),
                            },
                        },
                    )
                    .collect();
                blocks.extend(extra);
                self.commit_results(result_message_id, blocks);
            }
            RunPhase::CallModel | RunPhase::Finished => {
                let commits = call.is_some_and(|c| c.commit_turn);
                if let Some(content) = partial_turn.filter(|c| commits && !c.is_empty()) {
                    self.commit(Role::Assistant, content);
                    if let Some(message) = self.last_committed() {
                        self.close_calls(&message, CANCELLED_NOT_RUN);
                    }
                }
            }
        }
        self.finish(LoopStatus::Cancelled)
    }

    /// Answers every call of `message` with an error saying why it did not
    /// run, so each call keeps its result.
    fn close_calls(&mut self, message: &Message, why: &str) {
        let results: Vec<ToolResultBlock> = message
            .tool_uses()
            .map(|call| ToolResultBlock::error(&call.id, why))
            .collect();
        if !results.is_empty() {
            let id = self.next_id();
            self.commit_results(id, results);
        }
    }

    /// The run ends with `status`: the one terminal event.
    pub(crate) fn finish(&mut self, status: LoopStatus) -> Step {
        self.state.phase = RunPhase::Finished;
        self.model_call = None;
        self.retrieval = None;
        self.summary = None;
        self.waiting = None;
        self.hook = None;
        self.handoff_to = None;
        self.emit(EventKind::Finished(FinishedEvent {
            result: Box::new(LoopResult {
                status,
                messages: self.state.messages.clone(),
                tokens: self.state.totals,
                stop: None,
            }),
        }));
        Step::Done
    }

    /// The terminal event for a run whose machine refused its input (a
    /// stored state that had finished, or a driver bug); the state is left
    /// as it is.
    pub(crate) fn refused(&self, reason: String) -> EventKind {
        self.refused_with(LoopError::InvalidState { reason })
    }

    /// The terminal event for a run refused with `error` before its first
    /// step; the state is left as it is.
    pub(crate) fn refused_with(&self, error: LoopError) -> EventKind {
        EventKind::Finished(FinishedEvent {
            result: Box::new(LoopResult {
                status: LoopStatus::Error { error },
                messages: self.state.messages.clone(),
                tokens: self.state.totals,
                stop: None,
            }),
        })
    }

    /// A state whose parts disagree (a corrupt store): the run ends with
    /// an error rather than guess.
    pub(crate) fn invalid(&mut self, reason: &str) -> Step {
        let error = LoopError::InvalidState {
            reason: reason.to_owned(),
        };
        self.finish(LoopStatus::Error { error })
    }

    /// Reports the answer and completes the run.
    pub(crate) fn complete(&mut self, steps: u32, final_answer: String) -> Step {
        self.emit(EventKind::AgentCompletion(AgentCompletionEvent {
            steps,
            final_answer,
        }));
        self.finish(LoopStatus::Complete {
            return_value: None,
            output: None,
        })
    }

    /// Commits a turn made with no tools offered and returns its text.
    /// Calls the model made anyway are answered as not run.
    pub(crate) fn commit_answer_turn(&mut self, content: Vec<ContentBlock>) -> String {
        self.commit(Role::Assistant, content);
        let Some(message) = self.last_committed() else {
            return String::new();
        };
        self.close_calls(&message, "Not run: no tools are offered in this step.");
        message.text()
    }

    /// Commits an answer the model gave through a control tool.
    pub(crate) fn commit_answer(&mut self, answer: &str) {
        self.commit(Role::Assistant, vec![ContentBlock::text(answer)]);
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The return value of the first call that ended the loop with one.
pub(crate) fn return_value(ordered: &[(ToolUseBlock, ToolResult)]) -> Option<serde_json::Value> {
    let first = ordered.iter().find(|(_, r)| r.break_loop.is_some())?;
    match &first.1.break_loop {
        Some(BreakLoop::Return { value }) => Some(value.clone()),
        _ => None,
    }
}
