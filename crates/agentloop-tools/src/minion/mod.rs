//! The minion tool: hands a task to a sub-agent, a child loop with its own
//! model, system prompt and tools (seeds 000 and 003).
//!
//! A call runs the child through [`agentloop_engine::run`] and streams two
//! things while it works:
//! - every child event as [`ToolStreamEvent::ChildEvent`]; the engine places
//!   them under the call's path, so consumers store the child's
//!   `message_created` events as the minion chat (the first is the task
//!   message, which the child run does not emit itself);
//! - the child's render groups as [`ToolStreamEvent::GroupsUpdate`]: a
//!   [`ToolInfoRenderBlock`](agentloop_types::ToolInfoRenderBlock) group with
//!   the task and chat id, then the child's groups marked
//!   `is_tool_generated`. Updates are rationed: one per committed message, and
//!   while a turn streams, one whenever the new bytes reach a quarter of
//!   what is shown, so their total cost stays linear in the run's size.
//!
//! The result's content is the child's return-tool value or its final text,
//! and its `rendering_groups` are the last update's. A child that waits for
//! a person (an approval, a question) suspends the parent with the child's
//! pending calls and state; once they are decided the call runs again with
//! `ToolContext::resume` and the child goes on in place. A child that
//! fails, hits a limit or is cancelled gives an `is_error` result. The
//! child's model calls are reserved with the parent run's budget
//! ([`ToolContext::budget`]), so a budget above the run bounds its
//! minions too.
//!
//! Chat ids: a new minion chat is `minion_<tool_use_id>`. Passing `chat_id`
//! continues that chat: its history is loaded through the [`MinionChats`]
//! port and the task is appended (or, when the chat ended suspended on a
//! question, given as the answer to it).
//!
//! Options (seed 003's tool options): `model` (model id; empty keeps the
//! base options' model), `system_prompt` (longtext; empty keeps the base
//! prompt) and `tools` (longtext: tool names separated by commas or
//! whitespace; empty offers every tool the minion was built with). The
//! enabled tools are an option rather than an input field so that the model
//! cannot widen its own minion's powers. Naming `minion` in `tools` lets the
//! child start minions of its own, up to [`MinionTool::with_max_depth`].

mod chats;
mod groups;

use agentloop_types::MessageCreatedEvent;
use std::collections::VecDeque;
use std::sync::Arc;

use agentloop_engine::{RunDeps, RunStream, decide, run};
use agentloop_types::{
    ChildResume, ChildSuspension, ContentBlock, EventKind, LoopEvent, LoopOptions, LoopResult,
    LoopStatus, Message, ModelProvider, RenderingBlockGroup, Role, RunPath, Tool, ToolContext,
    ToolDefinition, ToolOptionSpec, ToolOutput, ToolResult, ToolResultBlock, ToolStream,
    ToolStreamEvent,
};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

pub use chats::{MemoryMinionChats, MinionChatError, MinionChats};

use crate::options::{longtext_option, model_option};
use crate::schema::{definition_of, parse, shared_input_schema};
use groups::{ChildGroups, info_group};

/// Default for [`MinionTool::with_max_depth`].
pub const DEFAULT_MAX_DEPTH: usize = 3;

/// Option key of the child's model id.
pub const MODEL_OPTION: &str = "model";
/// Option key of the child's system prompt.
pub const SYSTEM_PROMPT_OPTION: &str = "system_prompt";
/// Option key of the child's enabled tools.
pub const TOOLS_OPTION: &str = "tools";

/// Input of the minion tool.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct MinionInput {
    /// The task for the sub-agent, with everything it needs to know: it does
    /// not see this conversation.
    pub task: String,
    /// Id of an earlier minion chat to continue (`minion_` followed by the id
    /// of the call that started it). Leave out to start a new one.
    #[serde(default)]
    pub chat_id: Option<String>,
}

/// Runs a task on a sub-agent and returns its answer.
#[derive(Clone)]
pub struct MinionTool {
    provider: Arc<dyn ModelProvider>,
    tools: Vec<Arc<dyn Tool>>,
    chats: Option<Arc<dyn MinionChats>>,
    base: LoopOptions,
    depth: usize,
    max_depth: usize,
}

impl MinionTool {
    /// A minion whose children call `provider` and may use `tools`
    /// (narrowed per call by the `tools` option).
    pub fn new(provider: Arc<dyn ModelProvider>, tools: Vec<Arc<dyn Tool>>) -> Self {
        Self {
            provider,
            tools,
            chats: None,
            base: LoopOptions::default(),
            depth: 1,
            max_depth: DEFAULT_MAX_DEPTH,
        }
    }

    /// Where earlier minion chats are read from; without it, calls that
    /// name a `chat_id` fail.
    pub fn with_chats(mut self, chats: Arc<dyn MinionChats>) -> Self {
        self.chats = Some(chats);
        self
    }

    /// The child's loop options before the tool options apply (model,
    /// limits, sampling). A child starts from
    /// [`LoopOptions::for_child`] of them (every tool it is given, no output
    /// schema); `chat_id` is replaced per call.
    pub fn with_options(mut self, options: LoopOptions) -> Self {
        self.base = options;
        self
    }

    /// Most minions nested inside each other; a call deeper than this gets
    /// an error result. A minion called by the root run is at depth 1.
    pub fn with_max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = max_depth;
        self
    }

    /// What child run `run_id` runs with: this minion's model, `tools`,
    /// the call's cancellation, and the parent run's budget, so the
    /// child's model calls spend against the same budgets.
    fn child_deps(
        &self,
        tools: Vec<Arc<dyn Tool>>,
        context: &ToolContext,
        run_id: String,
    ) -> RunDeps {
        let deps = RunDeps::new(Arc::clone(&self.provider))
            .with_tools(tools)
            .with_cancel(context.cancel.child_token())
            .with_run_id(run_id);
        match &context.budget {
            Some(budget) => deps.with_budget(Arc::clone(budget)),
            None => deps,
        }
    }

    fn nested(&self) -> Self {
        Self {
            depth: self.depth + 1,
            ..self.clone()
        }
    }

    /// The tools a child gets for the `tools` option value.
    fn child_tools(&self, enabled: &str) -> Result<Vec<Arc<dyn Tool>>, ToolResult> {
        let names: Vec<&str> = enabled
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|n| !n.is_empty())
            .collect();
        if names.is_empty() {
            return Ok(self.tools.clone());
        }
        let mut out: Vec<Arc<dyn Tool>> = Vec::with_capacity(names.len());
        for name in names {
            if name == "minion" {
                out.push(Arc::new(self.nested()));
            } else if let Some(tool) = self.tools.iter().find(|t| t.name() == name) {
                out.push(Arc::clone(tool));
            } else {
                let available: Vec<&str> = self
                    .tools
                    .iter()
                    .map(|t| t.name())
                    .chain(["minion"])
                    .collect();
                return Err(ToolResult::error(format!(
                    "Unknown tool `{name}` in the minion's `{TOOLS_OPTION}` option. Available: {}.",
                    available.join(", ")
                )));
            }
        }
        Ok(out)
    }

    fn child_options(&self, context: &ToolContext, chat_id: &str) -> LoopOptions {
        let text = |key: &str| {
            context
                .options
                .get(key)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let mut options = self.base.for_child();
        if let Some(model) = text(MODEL_OPTION) {
            options.request.model = model;
        }
        if let Some(prompt) = text(SYSTEM_PROMPT_OPTION) {
            options.request.system_prompt = Some(prompt);
        }
        options.chat_id = Some(chat_id.to_owned());
        if options.project_id.is_empty() {
            options.project_id = context.project_id.clone();
        }
        options
    }

    async fn start(&self, input: Value, context: ToolContext) -> Result<Runner, ToolResult> {
        let input: MinionInput = parse(input)?;
        if input.task.trim().is_empty() {
            return Err(ToolResult::error("Invalid input: `task` must not be empty"));
        }
        if self.depth > self.max_depth {
            return Err(ToolResult::error(format!(
                "Minion refused: minions may nest at most {} deep, and this call would be \
                 at depth {}. Do the task yourself.",
                self.max_depth, self.depth
            )));
        }
        let enabled = context
            .options
            .get(TOOLS_OPTION)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let tools = self.child_tools(&enabled)?;
        if let Some(resume) = context.resume.clone() {
            return self.resume(&input, &context, tools, resume);
        }
        let (chat_id, run_id, history) = match &input.chat_id {
            None => {
                let chat_id = format!("minion_{}", context.tool_use_id);
                (chat_id.clone(), chat_id, Vec::new())
            }
            Some(chat_id) => {
                let Some(chats) = &self.chats else {
                    return Err(ToolResult::error(format!(
                        "Cannot continue minion chat `{chat_id}`: no minion chat store is \
                         configured. Leave out `chat_id` to start a new minion."
                    )));
                };
                let history = chats
                    .load(chat_id)
                    .await
                    .map_err(|e| ToolResult::error(format!("Cannot continue: {e}")))?;
                let run_id = format!("{chat_id}-{}", context.tool_use_id);
                (chat_id.clone(), run_id, history)
            }
        };
        let task_message = task_message(&history, &run_id, &input.task);
        let options = self.child_options(&context, &chat_id);
        let mut messages = history;
        messages.push(task_message.clone());
        let deps = self.child_deps(tools, &context, run_id);
        let info = info_group(&input.task, &chat_id);
        let mut queue = VecDeque::new();
        queue.push_back(ToolOutput::Event(ToolStreamEvent::ChildEvent(Box::new(
            LoopEvent {
                seq: 0,
                path: RunPath::root(),
                kind: EventKind::MessageCreated(MessageCreatedEvent {
                    message: task_message,
                }),
            },
        ))));
        queue.push_back(ToolOutput::Event(ToolStreamEvent::GroupsUpdate {
            groups: vec![info.clone()],
        }));
        Ok(Runner {
            child: Some(run(options, messages, deps)),
            queue,
            groups: ChildGroups::default(),
            info,
            result: None,
            finished: false,
        })
    }
}

impl MinionTool {
    /// Goes on with a child run that waited for a person, in place.
    fn resume(
        &self,
        input: &MinionInput,
        context: &ToolContext,
        tools: Vec<Arc<dyn Tool>>,
        resume: ChildResume,
    ) -> Result<Runner, ToolResult> {
        let chat_id = input
            .chat_id
            .clone()
            .unwrap_or_else(|| format!("minion_{}", context.tool_use_id));
        let options = self.child_options(context, &chat_id);
        let deps = self.child_deps(tools, context, resume.state.run_id.clone());
        let groups = ChildGroups::resumed(&resume.state.messages);
        let child = decide(options, resume.state, resume.decisions, deps)
            .map_err(|e| ToolResult::error(format!("Minion cannot resume: {e}")))?;
        let info = info_group(&input.task, &chat_id);
        let mut shown = vec![info.clone()];
        shown.extend(groups.snapshot());
        Ok(Runner {
            child: Some(child),
            queue: VecDeque::from([ToolOutput::Event(ToolStreamEvent::GroupsUpdate {
                groups: shown,
            })]),
            groups,
            info,
            result: None,
            finished: false,
        })
    }
}

/// The message that hands the task to the child: a user message, or, when
/// the history ends with calls still waiting (a chat that suspended on a
/// question), the results of those calls with the task as the answer.
fn task_message(history: &[Message], run_id: &str, task: &str) -> Message {
    let id = format!("{run_id}-task");
    let dangling: Vec<String> = match history.last() {
        Some(last) if last.role == Role::Assistant => {
            last.tool_uses().map(|call| call.id.clone()).collect()
        }
        _ => Vec::new(),
    };
    if dangling.is_empty() {
        return Message::user_text(id, task);
    }
    let content = dangling
        .into_iter()
        .map(|call| ContentBlock::ToolResult(ToolResultBlock::ok(call, task)))
        .collect();
    Message::new(id, Role::User, content)
}

/// One call in progress: the child run and what is still to be reported.
struct Runner {
    child: Option<RunStream>,
    queue: VecDeque<ToolOutput>,
    groups: ChildGroups,
    info: RenderingBlockGroup,
    result: Option<LoopResult>,
    finished: bool,
}

impl Runner {
    fn into_stream(self) -> ToolStream {
        Box::pin(futures::stream::unfold(self, |mut runner| async move {
            let item = runner.next().await?;
            Some((item, runner))
        }))
    }

    async fn next(&mut self) -> Option<ToolOutput> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                return Some(item);
            }
            if self.finished {
                return None;
            }
            let Some(child) = self.child.as_mut() else {
                self.finished = true;
                return Some(ToolOutput::Done(self.final_result()));
            };
            match child.next().await {
                Some(event) => {
                    if let Some(result) = event.root_result() {
                        self.result = Some(result.clone());
                    }
                    let due = self.groups.observe(&event);
                    self.queue
                        .push_back(ToolOutput::Event(ToolStreamEvent::ChildEvent(Box::new(
                            event,
                        ))));
                    if due {
                        self.queue
                            .push_back(ToolOutput::Event(ToolStreamEvent::GroupsUpdate {
                                groups: self.display(),
                            }));
                    }
                }
                None => self.child = None,
            }
        }
    }

    fn display(&self) -> Vec<RenderingBlockGroup> {
        let mut groups = vec![self.info.clone()];
        groups.extend(self.groups.snapshot());
        groups
    }

    fn final_result(&mut self) -> ToolResult {
        let mut result = match self.result.take() {
            None => ToolResult::error("Minion failed: its run ended without a result"),
            Some(result) => outcome(result),
        };
        result.rendering_groups = self.display();
        result
    }
}

/// The tool result for the child's result.
fn outcome(result: LoopResult) -> ToolResult {
    let text = result.final_text().unwrap_or_default();
    match result.status {
        LoopStatus::Complete {
            return_value: Some(Value::String(value)),
            ..
        } => ToolResult::ok(value),
        LoopStatus::Complete {
            return_value: Some(value),
            ..
        } => ToolResult::ok(value.to_string()),
        LoopStatus::Complete {
            return_value: None, ..
        } => ToolResult::ok(text),
        LoopStatus::Suspended {
            pending,
            state: Some(state),
        } => ToolResult::child_suspended(
            "The minion waits for the user.",
            ChildSuspension {
                pending,
                state: *state,
            },
        ),
        LoopStatus::Suspended { state: None, .. } => {
            ToolResult::error("Minion failed: it suspended without its state")
        }
        LoopStatus::Error { error } => ToolResult::error(format!("Minion failed: {error}")),
        LoopStatus::MaxIterations => ToolResult::error(format!(
            "Minion stopped at its iteration limit before finishing. Its last text: {text}"
        )),
        LoopStatus::LimitExceeded { limit, budget } => {
            let which = budget.map_or_else(String::new, |budget| format!(" ({budget})"));
            ToolResult::error(format!(
                "Minion stopped: its {} limit was reached{which}. Its last text: {text}",
                limit.name()
            ))
        }
        LoopStatus::Cancelled => ToolResult::error("Minion cancelled"),
    }
}

impl Tool for MinionTool {
    fn name(&self) -> &str {
        "minion"
    }

    fn description(&self) -> &str {
        "Hand a self-contained task to a sub-agent (a minion) with its own model, instructions \
         and tools, and get its answer back. The minion does not see this conversation: put \
         everything it needs in `task`. To follow up on an earlier minion's work, pass its \
         `chat_id` (`minion_` followed by the id of the call that started it)."
    }

    fn input_schema(&self) -> Value {
        Value::clone(&shared_input_schema::<MinionInput>())
    }

    fn definition(&self) -> ToolDefinition {
        definition_of::<MinionInput>(self)
    }

    fn runs_subagent(&self) -> bool {
        true
    }

    /// Its child may call any of its tools with any input, which is not
    /// known before it runs.
    fn may_write(&self, _input: &Value) -> bool {
        !self.tools.is_empty()
    }

    fn options(&self) -> Vec<ToolOptionSpec> {
        vec![
            model_option(
                MODEL_OPTION,
                "",
                "Model the minion runs on; empty uses the configured default.",
            ),
            longtext_option(
                SYSTEM_PROMPT_OPTION,
                "",
                "System prompt of the minion; empty uses the configured default.",
            ),
            longtext_option(
                TOOLS_OPTION,
                "",
                "Tools the minion may use, separated by commas; empty allows all of them. \
                 Name `minion` to let it start minions of its own.",
            ),
        ]
    }

    fn execute(self: Arc<Self>, input: Value, context: ToolContext) -> ToolStream {
        Box::pin(
            futures::stream::once(async move { self.start(input, context).await }).flat_map(
                |started| match started {
                    Ok(runner) => runner.into_stream(),
                    Err(result) => Box::pin(futures::stream::iter([ToolOutput::Done(result)])),
                },
            ),
        )
    }
}
