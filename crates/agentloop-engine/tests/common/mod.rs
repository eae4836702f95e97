//! Tools and helpers shared by the engine's integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod routed;
pub mod spans;

use agentloop_types::{FinishedEvent, MessageCreatedEvent, TokensConsumedEvent};
use std::sync::Arc;
use std::time::Duration;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::{RunDeps, run};
use agentloop_types::{
    BlockCategory, CancellationToken, LoopEvent, LoopOptions, Message, RenderingBlockGroup,
    RenderingContentBlock, Tool, ToolContext, ToolOutput, ToolResult, ToolStream, ToolStreamEvent,
    single_result,
};
use futures::StreamExt;
use serde_json::{Value, json};

/// A tool defined by a closure over its input.
pub struct FnTool<F> {
    pub name: &'static str,
    pub alone: bool,
    pub f: F,
}

impl<F> Tool for FnTool<F>
where
    F: Fn(Value, ToolContext) -> ToolStream + Send + Sync + 'static,
{
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "test tool"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn runs_alone(&self) -> bool {
        self.alone
    }
    fn execute(self: Arc<Self>, input: Value, context: ToolContext) -> ToolStream {
        (self.f)(input, context)
    }
}

pub fn tool<F>(name: &'static str, f: F) -> Arc<dyn Tool>
where
    F: Fn(Value, ToolContext) -> ToolStream + Send + Sync + 'static,
{
    Arc::new(FnTool {
        name,
        alone: false,
        f,
    })
}

/// `echo {text}` → the text.
pub fn echo() -> Arc<dyn Tool> {
    tool("echo", |input, _| {
        let text = input["text"].as_str().unwrap_or_default().to_owned();
        single_result(async move { ToolResult::ok(text) })
    })
}

/// `slow {ms, steps}`: reports `steps` progress updates spread over `ms`.
pub fn slow(name: &'static str, alone: bool) -> Arc<dyn Tool> {
    Arc::new(FnTool {
        name,
        alone,
        f: |input: Value, _ctx: ToolContext| -> ToolStream {
            let ms = input["ms"].as_u64().unwrap_or(10);
            let steps = input["steps"].as_u64().unwrap_or(1).max(1);
            Box::pin(async_progress(ms, steps))
        },
    })
}

fn async_progress(ms: u64, steps: u64) -> impl futures::Stream<Item = ToolOutput> + Send {
    futures::stream::unfold(0u64, move |step| async move {
        if step > steps {
            return None;
        }
        if step == steps {
            return Some((
                ToolOutput::Done(ToolResult::ok(format!("done in {ms} ms"))),
                step + 1,
            ));
        }
        tokio::time::sleep(Duration::from_millis(ms / steps)).await;
        let groups = vec![RenderingBlockGroup {
            category: BlockCategory::Text,
            blocks: vec![RenderingContentBlock::Text {
                text: format!("step {}", step + 1),
            }],
            is_tool_generated: true,
        }];
        Some((
            ToolOutput::Event(ToolStreamEvent::GroupsUpdate { groups }),
            step + 1,
        ))
    })
}

pub fn failing() -> Arc<dyn Tool> {
    tool("fail", |_, _| {
        single_result(async { ToolResult::error("disk on fire") })
    })
}

pub fn panicking() -> Arc<dyn Tool> {
    tool("boom", |_, _| {
        single_result(async { panic!("tool exploded") })
    })
}

pub fn asking() -> Arc<dyn Tool> {
    tool("ask_user", |input, _| {
        let question = input["question"].as_str().unwrap_or("?").to_owned();
        single_result(async move { ToolResult::suspend(question) })
    })
}

pub fn returning() -> Arc<dyn Tool> {
    tool("return", |input, _| {
        let value = input["value"].clone();
        single_result(async move { ToolResult::return_value("Returned.", value) })
    })
}

/// Never finishes; hands its cancellation token to the test so the test
/// can check that cancelling the run reached the tool.
pub fn hanging(token_slot: Arc<std::sync::Mutex<Option<CancellationToken>>>) -> Arc<dyn Tool> {
    tool("hang", move |_, ctx| {
        *token_slot.lock().unwrap() = Some(ctx.cancel.clone());
        single_result(futures::future::pending())
    })
}

/// Runs a child loop on its own scripted provider and forwards its events.
pub fn child_agent(child_turns: Vec<ScriptedTurn>) -> Arc<dyn Tool> {
    let turns = Arc::new(child_turns);
    tool("agent", move |input, ctx| {
        let provider = ScriptedProvider::new(turns.as_ref().clone());
        let task = input["task"].as_str().unwrap_or_default().to_owned();
        let deps = RunDeps::new(provider)
            .with_tools([echo()])
            .with_cancel(ctx.cancel.clone())
            .with_run_id(format!("child-{}", ctx.tool_use_id));
        let child = run(
            LoopOptions::default(),
            vec![Message::user_text("task", task)],
            deps,
        );
        Box::pin(futures::stream::unfold(
            (Some(child), None::<String>),
            |(child, answer)| async move {
                let mut child = child?;
                match child.next().await {
                    Some(event) => {
                        let answer = event.root_result().and_then(|r| r.final_text()).or(answer);
                        Some((
                            ToolOutput::Event(ToolStreamEvent::ChildEvent(Box::new(event))),
                            (Some(child), answer),
                        ))
                    }
                    None => Some((
                        ToolOutput::Done(ToolResult::ok(answer.unwrap_or_default())),
                        (None, None),
                    )),
                }
            },
        ))
    })
}

/// Runs to the end and returns every event.
pub async fn run_events(
    provider: Arc<ScriptedProvider>,
    tools: Vec<Arc<dyn Tool>>,
    options: LoopOptions,
    context: Vec<Message>,
    cancel: CancellationToken,
) -> Vec<LoopEvent> {
    let deps = RunDeps::new(provider)
        .with_tools(tools)
        .with_cancel(cancel)
        .with_run_id("run");
    run(options, context, deps).collect().await
}

pub fn user(text: &str) -> Vec<Message> {
    vec![Message::user_text("u1", text)]
}

/// Cancels `token` after `ms` of (paused) time.
pub fn cancel_after(token: &CancellationToken, ms: u64) {
    let token = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        token.cancel();
    });
}

/// Checks the engine's invariants on a finished run's events and returns
/// the root result.
pub fn check_invariants(events: &[LoopEvent]) -> agentloop_types::LoopResult {
    check_resumed(Default::default(), events)
}

/// [`check_invariants`] for a run resumed after it spent `before`: its
/// result counts what the run spent before it suspended too.
pub fn check_resumed(
    before: agentloop_types::TokenTotals,
    events: &[LoopEvent],
) -> agentloop_types::LoopResult {
    use agentloop_types::{EventKind, LoopStatus, TokenTotals, validate_history};
    use std::collections::HashMap;

    for pair in events.windows(2) {
        assert!(
            pair[0].seq < pair[1].seq,
            "seq must increase: {} then {}",
            pair[0].seq,
            pair[1].seq
        );
    }
    let mut finished: HashMap<&agentloop_types::RunPath, usize> = HashMap::new();
    for event in events {
        if let EventKind::Finished(FinishedEvent { .. }) = event.kind {
            *finished.entry(&event.path).or_default() += 1;
        }
    }
    assert!(
        finished.values().all(|n| *n == 1),
        "one terminal event per run: {finished:?}"
    );
    let last = events.last().expect("a run emits events");
    let result = last
        .root_result()
        .expect("the last event is the root result")
        .clone();

    let suspended = matches!(result.status, LoopStatus::Suspended { .. });
    validate_history(&result.messages, suspended).expect("every tool_use has one result, in order");

    let consumed: TokenTotals = before
        + events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::TokensConsumed(TokensConsumedEvent { tokens }) => Some(*tokens),
                _ => None,
            })
            .sum();
    assert_eq!(consumed, result.tokens, "totals are the sum of the steps");

    let created: Vec<&Message> = events
        .iter()
        .filter(|e| e.path.is_root())
        .filter_map(|e| match &e.kind {
            EventKind::MessageCreated(MessageCreatedEvent { message }) => Some(message),
            _ => None,
        })
        .collect();
    let tail = &result.messages[result.messages.len() - created.len()..];
    assert_eq!(
        tail.iter().collect::<Vec<_>>(),
        created,
        "result holds every created message"
    );
    result
}

/// `tool` whose calls wait for approval as `policy` says.
pub fn guarded(tool: Arc<dyn Tool>, policy: agentloop_types::ApprovalPolicy) -> Arc<dyn Tool> {
    struct Guarded {
        inner: Arc<dyn Tool>,
        policy: agentloop_types::ApprovalPolicy,
    }
    impl Tool for Guarded {
        fn name(&self) -> &str {
            self.inner.name()
        }
        fn description(&self) -> &str {
            self.inner.description()
        }
        fn input_schema(&self) -> Value {
            self.inner.input_schema()
        }
        fn runs_alone(&self) -> bool {
            self.inner.runs_alone()
        }
        fn approval(&self) -> agentloop_types::ApprovalPolicy {
            self.policy.clone()
        }
        fn execute(self: Arc<Self>, input: Value, context: ToolContext) -> ToolStream {
            self.inner.clone().execute(input, context)
        }
    }
    Arc::new(Guarded {
        inner: tool,
        policy,
    })
}

/// `write {path}` → "wrote {path}", recording every input it ran with.
/// Every call waits for approval unless the run's options say otherwise.
pub fn writer() -> (Arc<dyn Tool>, Arc<std::sync::Mutex<Vec<Value>>>) {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let write = tool("write", move |input, _| {
        log.lock().unwrap().push(input.clone());
        let path = input["path"].as_str().unwrap_or_default().to_owned();
        single_result(async move { ToolResult::ok(format!("wrote {path}")) })
    });
    (
        guarded(write, agentloop_types::ApprovalPolicy::Always),
        seen,
    )
}

/// Resumes a suspended run with `decisions` and collects its events.
pub async fn decide_events(
    provider: Arc<ScriptedProvider>,
    tools: Vec<Arc<dyn Tool>>,
    options: LoopOptions,
    state: agentloop_types::RunState,
    decisions: agentloop_types::Decisions,
) -> Vec<LoopEvent> {
    let deps = RunDeps::new(provider).with_tools(tools);
    agentloop_engine::decide(options, state, decisions, deps)
        .expect("the decisions fit")
        .collect()
        .await
}

/// The pending calls and the state of a suspended result.
pub fn suspension(
    result: &agentloop_types::LoopResult,
) -> (Vec<agentloop_types::PendingCall>, agentloop_types::RunState) {
    match &result.status {
        agentloop_types::LoopStatus::Suspended {
            pending,
            state: Some(state),
        } => (pending.clone(), (**state).clone()),
        other => panic!("expected a suspension with its state, got {other:?}"),
    }
}

/// The scripted run's dependencies: `tools`, run id `run`, and `hooks`
/// registered in order.
pub fn deps_with_hooks(
    provider: &Arc<ScriptedProvider>,
    tools: Vec<Arc<dyn Tool>>,
    hooks: &[Arc<dyn agentloop_types::Hook>],
) -> RunDeps {
    hooks.iter().fold(
        RunDeps::new(provider.clone())
            .with_tools(tools)
            .with_run_id("run"),
        |deps, hook| deps.with_hook(hook.clone()),
    )
}

/// The text of every tool result the model was sent in request `n`.
pub fn results_sent(provider: &ScriptedProvider, n: usize) -> Vec<(String, bool)> {
    provider.requests()[n]
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .map(|r| (r.content.clone(), r.is_error))
        .collect()
}

/// The `hook` events of a run, in order.
pub fn hook_events(events: &[LoopEvent]) -> Vec<agentloop_types::HookEvent> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            agentloop_types::EventKind::Hook(event) => Some((**event).clone()),
            _ => None,
        })
        .collect()
}

/// Checks that the requests recorded in a run's root `streaming_start`
/// events, read against its final `history`, are exactly `requests`, the
/// ones its provider received (in order; summarising calls left out):
/// messages, options, tools and answer schema, with the options and tools
/// a record leaves out carried from the request before.
pub fn check_recorded_requests(
    events: &[LoopEvent],
    requests: &[agentloop_types::ModelRequest],
    history: &[Message],
) {
    use agentloop_types::{EventKind, SentMessages, StreamingStartEvent};
    let records: Vec<_> = events
        .iter()
        .filter(|e| e.path.is_root())
        .filter_map(|e| match &e.kind {
            EventKind::StreamingStart(StreamingStartEvent { request, .. }) => request.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(records.len(), requests.len(), "one record per request");
    let (mut options, mut tools) = (None, None);
    for (i, (record, request)) in records.iter().zip(requests).enumerate() {
        if let Some(recorded) = &record.options {
            options = Some(recorded.clone());
        }
        if let Some(recorded) = &record.tools {
            tools = Some(recorded.clone());
        }
        let messages = SentMessages::resolve(&record.messages, history).expect("in the history");
        assert_eq!(messages, request.messages[..], "request {i}'s messages");
        assert_eq!(
            options.as_ref(),
            Some(&request.options),
            "request {i}'s options"
        );
        assert_eq!(
            tools.as_deref(),
            Some(&request.tools[..]),
            "request {i}'s tools"
        );
        assert_eq!(
            record.response_format.as_ref(),
            request.response_format.as_deref(),
            "request {i}'s answer schema"
        );
    }
}
