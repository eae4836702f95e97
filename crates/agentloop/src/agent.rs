//! The agent builder: a provider, tools and options, run with one call.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use agentloop_engine::{AgentProfile, Handoffs, RunDeps, RunStream, collect, decide, run};
use agentloop_types::{
    ApprovalPolicy, CancellationToken, DecisionError, Decisions, Guardrail, HandoffError,
    HandoffHistory, Hook, Hooks, LoopEvent, LoopOptions, LoopResult, LoopStatus, Message,
    ModelProvider, OutputGuardrail, Tool, ToolGuardrail, output_guardrail_hook,
    tool_guardrail_hook,
};
use futures::Stream;

use crate::handoffs::{Member, Target, Team};
use crate::into::{IntoProvider, IntoTool};
use crate::text::TextDeltas;

/// Why [`AgentBuilder::build`] failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// No model provider was given.
    #[error("an agent needs a model provider: call `.provider(..)` before `.build()`")]
    MissingProvider,
    /// No model id was given (or only a blank one). There is no default: a
    /// provider's servers decide which ids exist, and a model chosen by the
    /// library would change cost and answers when the library changes.
    #[error(
        "an agent needs a model id: call `.model(..)` with one your provider serves \
         (e.g. \"claude-sonnet-4-5\" on Anthropic, \"gpt-4.1\" on OpenAI) before `.build()`"
    )]
    MissingModel,
    /// Two tools share a name, so the model could not tell them apart.
    #[error("two tools are named {0:?}")]
    DuplicateTool(String),
    /// The agents it hands off to do not fit together (a bad or repeated
    /// name, a handoff to an agent not given).
    #[error(transparent)]
    Handoffs(#[from] HandoffError),
}

/// An agent: a model provider, the tools it may call and the options of
/// its runs. Each [`stream`](Self::stream) or [`run`](Self::run) is a new
/// run; cloning is cheap and clones share the provider and tools.
#[derive(Clone)]
pub struct Agent {
    provider: Arc<dyn ModelProvider>,
    tools: Vec<Arc<dyn Tool>>,
    options: LoopOptions,
    cancel: CancellationToken,
    hooks: Hooks,
    guardrails: Vec<Arc<dyn Guardrail>>,
    pub(crate) team: Team,
    /// The agents its runs hand off between, when it hands off.
    handoffs: Option<Arc<Handoffs>>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tools: Vec<&str> = self.tools.iter().map(|t| t.name()).collect();
        f.debug_struct("Agent")
            .field("tools", &tools)
            .field("options", &self.options)
            .field("hooks", &self.hooks)
            .field("name", &self.team.name)
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// A builder; the provider and the model are required.
    pub fn builder() -> AgentBuilder {
        AgentBuilder::default()
    }

    /// Starts a run on `prompt` and streams its events; the last is the
    /// terminal `finished` event. Dropping the stream cancels the run.
    pub fn stream(&self, prompt: impl Into<String>) -> AgentStream {
        let run_id = next_run_id();
        let prompt = Message::user_text(format!("{run_id}-prompt"), prompt);
        self.stream_with_id(run_id, vec![prompt])
    }

    /// Starts a run that continues `history` (ending with the user's message,
    /// or with tool results that resume a suspended run).
    pub fn stream_messages(&self, history: Vec<Message>) -> AgentStream {
        self.stream_with_id(next_run_id(), history)
    }

    /// Runs `prompt` to the end and returns the result: its status, every
    /// message and the token totals.
    pub async fn run(&self, prompt: impl Into<String>) -> LoopResult {
        collect(self.stream(prompt).inner).await
    }

    /// Goes on with a run that ended `suspended` (waiting for a person),
    /// in place: `decisions` holds one [`Decision`](crate::Decision) per
    /// pending call, by call id. Decisions that do not fit are refused
    /// before anything runs.
    ///
    /// ```
    /// # use agentloop::prelude::*;
    /// # use agentloop::{Decision, Decisions};
    /// # async fn example(agent: agentloop::Agent) -> Result<(), agentloop::DecisionError> {
    /// let mut result = agent.run("Tidy the notes folder").await;
    /// while let LoopStatus::Suspended { pending, .. } = &result.status {
    ///     let decisions: Decisions = pending
    ///         .iter()
    ///         .map(|p| (p.call.id.clone(), Decision::Approve { arguments: None }))
    ///         .collect();
    ///     result = agent.resume(&result, decisions)?.result().await;
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn resume(
        &self,
        suspended: &LoopResult,
        decisions: Decisions,
    ) -> Result<AgentStream, DecisionError> {
        let LoopStatus::Suspended {
            state: Some(state), ..
        } = &suspended.status
        else {
            return Err(DecisionError::NotWaiting);
        };
        let deps = self.deps();
        let inner = decide(self.options.clone(), (**state).clone(), decisions, deps)?;
        Ok(AgentStream { inner })
    }

    /// What every run of this agent calls out to.
    fn deps(&self) -> RunDeps {
        let mut deps = RunDeps::new(self.provider.clone())
            .with_tools(self.tools.iter().cloned())
            .with_cancel(self.cancel.clone());
        deps.hooks = self.hooks.clone();
        deps.guardrails = self.guardrails.clone();
        deps.handoffs = self.handoffs.clone();
        deps
    }

    /// Its name (as agents that hand off to it know it).
    pub fn name(&self) -> &str {
        &self.team.name
    }

    /// What it answers as an agent handed to: its name, description,
    /// instructions, model, provider, tools and handoffs.
    pub(crate) fn profile(&self) -> AgentProfile {
        AgentProfile {
            name: self.team.name.clone(),
            description: self.team.description.clone(),
            instructions: self.options.request.system_prompt.clone(),
            model: Some(self.options.request.model.clone()),
            provider: Some(self.provider.clone()),
            tools: self.tools.clone(),
            handoffs: self.team.handoff_names(),
            history: self.team.history,
        }
    }

    /// The options every run of this agent uses.
    pub fn options(&self) -> &LoopOptions {
        &self.options
    }

    fn stream_with_id(&self, run_id: String, history: Vec<Message>) -> AgentStream {
        self.stream_with(self.options.clone(), run_id, history)
    }

    /// Runs `prompt` to the end under `options` instead of the agent's.
    #[cfg_attr(not(feature = "tools"), allow(dead_code))]
    pub(crate) async fn run_with_options(
        &self,
        options: LoopOptions,
        prompt: impl Into<String>,
    ) -> LoopResult {
        let run_id = next_run_id();
        let prompt = Message::user_text(format!("{run_id}-prompt"), prompt);
        collect(self.stream_with(options, run_id, vec![prompt]).inner).await
    }

    fn stream_with(
        &self,
        options: LoopOptions,
        run_id: String,
        history: Vec<Message>,
    ) -> AgentStream {
        let deps = self.deps().with_run_id(run_id);
        AgentStream {
            inner: run(options, history, deps),
        }
    }
}

/// Run ids unique within the process and across restarts; the engine derives
/// message ids from them (`{run_id}-{n}`), and the prompt takes
/// `{run_id}-prompt`, which that scheme never produces.
fn next_run_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!(
        "agent-{nanos:x}-{}",
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// Builds an [`Agent`].
#[derive(Default)]
#[must_use = "a builder does nothing until `.build()`"]
pub struct AgentBuilder {
    provider: Option<Arc<dyn ModelProvider>>,
    tools: Vec<Arc<dyn Tool>>,
    options: LoopOptions,
    cancel: Option<CancellationToken>,
    hooks: Hooks,
    guardrails: Vec<Arc<dyn Guardrail>>,
    team: Team,
}

impl AgentBuilder {
    /// Its name: how agents that hand off to it call it (their tool is
    /// `transfer_to_{name}`); `[A-Za-z0-9_-]{1,48}`, `agent` unless set.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.team.name = name.into();
        self
    }

    /// What it is for, as a model that may hand off to it reads it.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.team.description = description.into();
        self
    }

    /// Lets it hand the conversation to `agent`: the model sees a
    /// `transfer_to_{name}` tool; calling it ends this agent's turn and the
    /// same run goes on with `agent`'s instructions (system prompt), model,
    /// provider and tools, and with the handoffs `agent` declares in turn.
    /// The run's options, hooks and guardrails stay this agent's.
    ///
    /// ```
    /// use agentloop::Agent;
    /// use agentloop::engine::scripted::{ScriptedProvider, ScriptedTurn};
    /// use serde_json::json;
    ///
    /// # futures::executor::block_on(async {
    /// let provider = ScriptedProvider::new([
    ///     ScriptedTurn::new().tool_call("h1", "transfer_to_billing", json!({})),
    ///     ScriptedTurn::new().text("Your invoice is paid."),
    /// ]);
    /// let billing = Agent::builder()
    ///     .name("billing")
    ///     .description("Invoices and payments.")
    ///     .provider(provider.clone())
    ///     .model("m")
    ///     .system("You answer billing questions.")
    ///     .build()
    ///     .unwrap();
    /// let triage = Agent::builder()
    ///     .name("triage")
    ///     .provider(provider)
    ///     .model("m")
    ///     .handoff(billing)
    ///     .build()
    ///     .unwrap();
    /// let result = triage.run("Is my invoice paid?").await;
    /// assert_eq!(result.final_text().as_deref(), Some("Your invoice is paid."));
    /// # });
    /// ```
    pub fn handoff(mut self, agent: Agent) -> Self {
        let member = Member {
            profile: agent.profile(),
            team: agent.team,
        };
        self.team.targets.push(Target::Agent(Box::new(member)));
        self
    }

    /// Lets it hand the conversation to the agent named `name`, given
    /// whole elsewhere in the same set of agents (to hand back to the agent
    /// that handed to it, say). The name resolves where the set is put
    /// together — in the agent whose runs start there — and is left out of
    /// a set that holds no agent of that name.
    pub fn handoff_to_name(mut self, name: impl Into<String>) -> Self {
        self.team.targets.push(Target::Name(name.into()));
        self
    }

    /// What of the history before a handoff to it this agent sees (all of
    /// it unless set).
    pub fn handoff_history(mut self, history: HandoffHistory) -> Self {
        self.team.history = history;
        self
    }

    /// How many handoffs one run takes before it ends `limit_exceeded`
    /// (limit `handoffs`); 8 unless set.
    pub fn max_handoffs(mut self, max: u32) -> Self {
        self.team.max_handoffs = Some(max);
        self
    }

    /// The model provider: a provider value, an `Arc` of one or an
    /// `Arc<dyn ModelProvider>`.
    pub fn provider<M>(mut self, provider: impl IntoProvider<M>) -> Self {
        self.provider = Some(provider.into_provider());
        self
    }

    /// The model id, as the provider knows it; required.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.options.request.model = model.into();
        self
    }

    /// The system prompt.
    pub fn system(mut self, prompt: impl Into<String>) -> Self {
        self.options.request.system_prompt = Some(prompt.into());
        self
    }

    /// Offers a tool: a [`Tool`] value, an `Arc` of one, an
    /// `Arc<dyn Tool>` or a [`TypedTool`](crate::TypedTool).
    pub fn tool<M>(mut self, tool: impl IntoTool<M>) -> Self {
        self.tools.push(tool.into_tool());
        self
    }

    /// Offers several shared tools (e.g. `agentloop::tools::standard_tools`).
    pub fn tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Offers every tool the started MCP servers list now, each named
    /// `<server>__<tool>` (feature `mcp`). The tools hold their servers, so
    /// the servers run as long as the agent or a clone of it does.
    #[cfg(feature = "mcp")]
    pub fn mcp_servers(mut self, servers: &agentloop_mcp::McpServers) -> Self {
        self.tools.extend(servers.tools());
        self
    }

    /// Which calls of `tool` wait for a person's approval, over the tool's
    /// own default; `"*"` sets it for every tool without its own. A run
    /// with calls that wait ends `suspended`; see [`Agent::resume`].
    pub fn approval(mut self, tool: impl Into<String>, policy: ApprovalPolicy) -> Self {
        self.options.approvals.insert(tool.into(), policy);
        self
    }

    /// Model turns before a run ends with `max_iterations`.
    pub fn max_iterations(mut self, max_iterations: u32) -> Self {
        self.options.max_iterations = max_iterations;
        self
    }

    /// Replaces all options; builder calls after this one adjust them.
    pub fn options(mut self, options: LoopOptions) -> Self {
        self.options = options;
        self
    }

    /// Adjusts any option the builder has no method for.
    pub fn configure(mut self, adjust: impl FnOnce(&mut LoopOptions)) -> Self {
        adjust(&mut self.options);
        self
    }

    /// Adds a lifecycle hook (after the ones added before): asked at the
    /// moments it names, its decisions recorded as `hook` events and in
    /// the run's state. See [`agentloop_types::hook`] for what each
    /// decision does where.
    ///
    /// ```
    /// use agentloop::Agent;
    /// use agentloop::types::{HookDecision, HookInput, HookPoint, hook_fn};
    ///
    /// let no_delete = hook_fn("no-delete", [HookPoint::BeforeToolCall], |input: HookInput| async move {
    ///     Ok(match input {
    ///         HookInput::BeforeToolCall { arguments, .. } if arguments["command"] == "delete" => {
    ///             HookDecision::Block { reason: "deleting is not allowed".into() }
    ///         }
    ///         _ => HookDecision::Pass,
    ///     })
    /// });
    /// let builder = Agent::builder().model("m").hook(no_delete);
    /// # let _ = builder;
    /// ```
    pub fn hook(mut self, hook: Arc<dyn Hook>) -> Self {
        self.hooks.push(hook);
        self
    }

    /// Adds an input guardrail: checked beside each run's first model
    /// call; one that trips cancels the turn and ends the run `error`
    /// (`blocked`, naming it). See [`agentloop_types::guardrail`].
    pub fn guardrail(mut self, guardrail: Arc<dyn Guardrail>) -> Self {
        self.guardrails.push(guardrail);
        self
    }

    /// Adds an output guardrail: asked about the final answer (and its
    /// validated structured output) before a run completes; one that trips
    /// ends the run `error` (`blocked`, `by: "guardrail"`, naming it). See
    /// [`agentloop_types::guardrail`].
    pub fn output_guardrail(mut self, guardrail: Arc<dyn OutputGuardrail>) -> Self {
        self.hooks.push(output_guardrail_hook(guardrail));
        self
    }

    /// Adds a tool guardrail: asked about each call before it runs (a trip
    /// answers the call with the reason, unrun) and about its result after
    /// (a trip withholds it). See [`agentloop_types::guardrail`].
    pub fn tool_guardrail(mut self, guardrail: Arc<dyn ToolGuardrail>) -> Self {
        self.hooks.push(tool_guardrail_hook(guardrail));
        self
    }

    /// How many times `run_end` hooks may send a finishing run back to
    /// the model (3 unless set).
    pub fn max_hook_continues(mut self, max: u32) -> Self {
        self.hooks.max_continues = max;
        self
    }

    /// A token that cancels every run of the agent when cancelled.
    pub fn cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// The agent; fails without a provider, without a model id, with two
    /// tools of one name, or with handoffs that do not fit together.
    pub fn build(self) -> Result<Agent, BuildError> {
        let provider = self.provider.ok_or(BuildError::MissingProvider)?;
        if self.options.request.model.trim().is_empty() {
            return Err(BuildError::MissingModel);
        }
        let mut names = std::collections::BTreeSet::new();
        for tool in &self.tools {
            if !names.insert(tool.name()) {
                return Err(BuildError::DuplicateTool(tool.name().to_owned()));
            }
        }
        let mut agent = Agent {
            provider,
            tools: self.tools,
            options: self.options,
            cancel: self.cancel.unwrap_or_default(),
            hooks: self.hooks,
            guardrails: self.guardrails,
            team: self.team,
            handoffs: None,
        };
        agent.handoffs = agent.team.handoffs()?.map(Arc::new);
        Ok(agent)
    }
}

/// An agent is the subject of an eval as it is: each case's messages go to
/// [`Agent::stream_messages`]. Its tools are the ones it was built with, so
/// a case's files and folder are not theirs; for tools rooted in each
/// case's folder, use `eval::EngineSubject` with a tool factory.
#[cfg(feature = "eval")]
#[async_trait::async_trait]
impl agentloop_eval::Subject for Agent {
    async fn run(
        &self,
        input: agentloop_eval::CaseInput<'_>,
    ) -> Result<LoopResult, agentloop_eval::SubjectError> {
        Ok(collect(self.stream_messages(input.context).inner).await)
    }
}

/// A running agent: a stream of [`LoopEvent`]s ending with the terminal
/// `finished` event. Dropping it cancels the run.
#[must_use = "a run does nothing unless its stream is polled"]
pub struct AgentStream {
    inner: RunStream,
}

impl AgentStream {
    /// Only the answer's text, one delta per item; the result is kept for
    /// [`TextDeltas::result`] once the stream ends.
    pub fn text(self) -> TextDeltas<Self> {
        TextDeltas::new(self)
    }

    /// Drains the run and returns its result.
    pub async fn result(self) -> LoopResult {
        collect(self.inner).await
    }

    /// The engine's stream, for APIs that take it.
    pub fn into_inner(self) -> RunStream {
        self.inner
    }
}

impl Stream for AgentStream {
    type Item = LoopEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<LoopEvent>> {
        Pin::new(&mut self.inner).poll_next(cx)
    }
}
