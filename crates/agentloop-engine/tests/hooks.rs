//! Lifecycle hooks: every hook point and decision, pinned as readable
//! event snapshots; a suspended call a hook held; runs resumed from every
//! checkpoint never ask a hook again for a decision they already have.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::{RunDeps, RunItem, collect, decide, resume, run};
use agentloop_types::transcript::render_events;
use agentloop_types::{
    CompactionOptions, CompactionStrategy, Decision, EventKind, Hook, HookDecision, HookInput,
    HookPoint, LoopError, LoopEvent, LoopOptions, LoopResult, LoopStatus, ModelProvider,
    ModelRequest, ModelStream, RunState, hook_fn,
};
use common::*;
use futures::StreamExt;
use serde_json::json;

/// What a test hook was asked, in order.
type Asked = Arc<Mutex<Vec<HookInput>>>;

/// A hook at `points` answering `decide(input)`, recording what it was
/// asked.
fn recording(
    name: &str,
    points: &[HookPoint],
    decide: impl Fn(&HookInput) -> HookDecision + Send + Sync + 'static,
) -> (Arc<dyn Hook>, Asked) {
    let asked: Asked = Arc::default();
    let log = asked.clone();
    let decide = Arc::new(decide);
    let hook = hook_fn(name, points.iter().copied(), move |input: HookInput| {
        log.lock().unwrap().push(input.clone());
        let decision = decide(&input);
        async move { Ok(decision) }
    });
    (hook, asked)
}

fn deps(provider: &Arc<ScriptedProvider>, hooks: &[Arc<dyn Hook>]) -> RunDeps {
    deps_with_hooks(provider, vec![echo()], hooks)
}

async fn events_of(provider: &Arc<ScriptedProvider>, hooks: &[Arc<dyn Hook>]) -> Vec<LoopEvent> {
    run(LoopOptions::default(), user("go"), deps(provider, hooks))
        .collect()
        .await
}

fn snapshot(name: &str, events: &[LoopEvent]) -> LoopResult {
    let result = check_invariants(events);
    insta::assert_snapshot!(name, render_events(events));
    result
}

fn echo_turn(id: &str, text: &str) -> ScriptedTurn {
    ScriptedTurn::new().tool_call(id, "echo", json!({ "text": text }))
}

#[tokio::test]
async fn a_run_with_no_hooks_asks_nothing() {
    let provider = ScriptedProvider::new([echo_turn("t1", "a"), ScriptedTurn::new().text("ok")]);
    let events = events_of(&provider, &[]).await;
    assert!(hook_events(&events).is_empty());
    check_invariants(&events);
}

#[tokio::test]
async fn before_tool_call_block_answers_the_call_with_the_reason() {
    let provider = ScriptedProvider::new([
        echo_turn("t1", "rm -rf /"),
        ScriptedTurn::new().text("Understood."),
    ]);
    let (hook, asked) = recording("no-rm", &[HookPoint::BeforeToolCall], |input| match input {
        HookInput::BeforeToolCall { arguments, .. }
            if arguments["text"].as_str().unwrap_or("").starts_with("rm") =>
        {
            HookDecision::Block {
                reason: "deleting is not allowed".into(),
            }
        }
        _ => HookDecision::Pass,
    });
    let events = events_of(&provider, &[hook]).await;
    let result = snapshot("hook_before_tool_block", &events);
    assert_eq!(result.status.name(), "complete");
    assert_eq!(asked.lock().unwrap().len(), 1);
    assert_eq!(
        results_sent(&provider, 1),
        [(
            "Blocked by hook `no-rm`: deleting is not allowed".to_owned(),
            true
        )]
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.kind, EventKind::ToolStart(_))),
        "a blocked call never starts"
    );
}

#[tokio::test]
async fn before_tool_call_rewrite_runs_the_call_with_new_arguments() {
    let provider = ScriptedProvider::new([echo_turn("t1", "raw"), ScriptedTurn::new().text("ok")]);
    let (hook, _) = recording("sanitise", &[HookPoint::BeforeToolCall], |_| {
        HookDecision::Rewrite {
            arguments: json!({"text": "clean"}),
        }
    });
    let events = events_of(&provider, &[hook]).await;
    snapshot("hook_before_tool_rewrite", &events);
    assert_eq!(results_sent(&provider, 1), [("clean".to_owned(), false)]);
}

#[tokio::test]
async fn before_tool_call_context_is_appended_to_the_result() {
    let provider = ScriptedProvider::new([echo_turn("t1", "a"), ScriptedTurn::new().text("ok")]);
    let (hook, _) = recording("note", &[HookPoint::BeforeToolCall], |_| {
        HookDecision::AddContext {
            text: "The echo tool is rate-limited.".into(),
        }
    });
    let events = events_of(&provider, &[hook]).await;
    snapshot("hook_before_tool_context", &events);
    assert_eq!(
        results_sent(&provider, 1),
        [("a\n\nThe echo tool is rate-limited.".to_owned(), false)]
    );
}

#[tokio::test]
async fn before_tool_call_ask_holds_the_call_for_a_person_once() {
    let provider = ScriptedProvider::new([echo_turn("t1", "a"), ScriptedTurn::new().text("ok")]);
    let (hook, asked) = recording("gate", &[HookPoint::BeforeToolCall], |_| {
        HookDecision::Ask {
            reason: "echo needs a look".into(),
        }
    });
    let events = events_of(&provider, std::slice::from_ref(&hook)).await;
    let suspended = snapshot("hook_before_tool_ask", &events);
    let (pending, state) = suspension(&suspended);
    assert_eq!(pending.len(), 1);
    let decisions = [(
        "t1".to_owned(),
        Decision::Approve {
            arguments: Some(json!({"text": "approved"})),
        },
    )]
    .into();
    let resumed: Vec<LoopEvent> = decide(
        LoopOptions::default(),
        state,
        decisions,
        deps(&provider, &[hook]),
    )
    .unwrap()
    .collect()
    .await;
    insta::assert_snapshot!("hook_before_tool_ask_resumed", render_events(&resumed));
    assert_eq!(
        asked.lock().unwrap().len(),
        1,
        "the hook is not asked again"
    );
    assert!(
        results_sent(&provider, 1)[0].0.ends_with("approved"),
        "the person's arguments ran"
    );
}

#[tokio::test]
async fn after_tool_call_replaces_and_annotates_results() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .tool_call("t1", "echo", json!({"text": "secret 1234"}))
            .tool_call("t2", "echo", json!({"text": "fine"})),
        ScriptedTurn::new().text("ok"),
    ]);
    let (hook, asked) = recording("redact", &[HookPoint::AfterToolCall], |input| match input {
        HookInput::AfterToolCall { result, .. } if result.contains("1234") => {
            HookDecision::Replace {
                result: "secret [redacted]".into(),
                is_error: false,
            }
        }
        _ => HookDecision::AddContext {
            text: "(checked)".into(),
        },
    });
    let events = events_of(&provider, &[hook]).await;
    snapshot("hook_after_tool", &events);
    assert_eq!(asked.lock().unwrap().len(), 2);
    assert_eq!(
        results_sent(&provider, 1),
        [
            ("secret [redacted]".to_owned(), false),
            ("fine\n\n(checked)".to_owned(), false)
        ]
    );
}

#[tokio::test]
async fn prompt_hooks_add_context_and_a_start_hook_blocks() {
    let provider = ScriptedProvider::new([ScriptedTurn::new().text("ok")]);
    let (context, asked) = recording("today", &[HookPoint::UserPromptSubmitted], |_| {
        HookDecision::AddContext {
            text: "Today is Tuesday.".into(),
        }
    });
    let events = events_of(&provider, &[context]).await;
    snapshot("hook_prompt_context", &events);
    assert!(matches!(
        &asked.lock().unwrap()[..],
        [HookInput::UserPromptSubmitted { prompt, .. }] if prompt == "go"
    ));
    let sent = &provider.requests()[0].messages;
    assert_eq!(sent.last().unwrap().text(), "Today is Tuesday.");

    let provider = ScriptedProvider::new([ScriptedTurn::new().text("never")]);
    let (block, _) = recording("closed", &[HookPoint::RunStart], |_| HookDecision::Block {
        reason: "maintenance".into(),
    });
    let events = events_of(&provider, &[block]).await;
    let result = snapshot("hook_run_start_block", &events);
    assert!(provider.requests().is_empty(), "no model call");
    assert!(matches!(
        result.status,
        LoopStatus::Error { error: LoopError::Blocked { ref name, ref reason, .. } }
            if name == "closed" && reason == "maintenance"
    ));
}

#[tokio::test]
async fn before_model_call_adds_context_then_blocks() {
    let provider = ScriptedProvider::new([echo_turn("t1", "a"), ScriptedTurn::new().text("never")]);
    let (hook, _) = recording(
        "budget",
        &[HookPoint::BeforeModelCall],
        |input| match input {
            HookInput::BeforeModelCall { iteration: 1, .. } => HookDecision::AddContext {
                text: "Be brief.".into(),
            },
            _ => HookDecision::Block {
                reason: "one call only".into(),
            },
        },
    );
    let events = events_of(&provider, &[hook]).await;
    let result = snapshot("hook_before_model", &events);
    assert_eq!(provider.requests().len(), 1);
    assert_eq!(
        provider.requests()[0].messages.last().unwrap().text(),
        "Be brief."
    );
    assert_eq!(result.status.name(), "error");
}

#[tokio::test]
async fn a_stop_hook_sends_the_run_back_a_bounded_number_of_times() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().text("first"),
        ScriptedTurn::new().text("second"),
        ScriptedTurn::new().text("third"),
    ]);
    let (hook, asked) = recording("again", &[HookPoint::RunEnd], |_| HookDecision::Continue {
        reason: "Check your work.".into(),
    });
    let mut deps = deps(&provider, &[hook]);
    deps.hooks.max_continues = 2;
    let events: Vec<LoopEvent> = run(LoopOptions::default(), user("go"), deps)
        .collect()
        .await;
    let result = snapshot("hook_run_end_continue", &events);
    assert_eq!(result.final_text().as_deref(), Some("third"));
    assert_eq!(provider.requests().len(), 3);
    assert_eq!(asked.lock().unwrap().len(), 3);
    let ignored: Vec<bool> = hook_events(&events).iter().map(|e| e.ignored).collect();
    assert_eq!(
        ignored,
        [false, false, true],
        "past the bound it is ignored"
    );
}

#[tokio::test]
async fn a_failing_hook_answers_its_default_and_the_failure_is_recorded() {
    struct Broken;
    #[agentloop_types::async_trait]
    impl Hook for Broken {
        fn name(&self) -> &str {
            "broken"
        }
        fn points(&self) -> Vec<HookPoint> {
            vec![HookPoint::BeforeToolCall]
        }
        async fn call(&self, _: &HookInput) -> Result<HookDecision, agentloop_types::HookError> {
            Err(agentloop_types::HookError::new("exited with signal 9"))
        }
        fn on_error(&self) -> HookDecision {
            HookDecision::Block {
                reason: "the policy hook failed".into(),
            }
        }
    }
    let provider = ScriptedProvider::new([echo_turn("t1", "a"), ScriptedTurn::new().text("ok")]);
    let events = events_of(&provider, &[Arc::new(Broken)]).await;
    snapshot("hook_failed_default", &events);
    assert_eq!(
        results_sent(&provider, 1),
        [(
            "Blocked by hook `broken`: the policy hook failed".to_owned(),
            true
        )]
    );
}

#[tokio::test]
async fn a_decision_that_does_not_apply_is_recorded_and_ignored() {
    let provider = ScriptedProvider::new([echo_turn("t1", "a"), ScriptedTurn::new().text("ok")]);
    let (hook, _) = recording("confused", &[HookPoint::BeforeToolCall], |_| {
        HookDecision::Continue {
            reason: "no".into(),
        }
    });
    let events = events_of(&provider, &[hook]).await;
    assert!(hook_events(&events)[0].ignored);
    assert_eq!(results_sent(&provider, 1), [("a".to_owned(), false)]);
}

/// A run over every hook point, and the script it plays.
fn full_hooks() -> (Vec<Arc<dyn Hook>>, Asked) {
    let asked: Asked = Arc::default();
    let log = asked.clone();
    let hook = hook_fn("all", HookPoint::ALL, move |input: HookInput| {
        log.lock().unwrap().push(input.clone());
        let decision = match &input {
            HookInput::UserPromptSubmitted { .. } => {
                HookDecision::AddContext { text: "ctx".into() }
            }
            HookInput::BeforeToolCall { tool_use_id, .. } if tool_use_id == "t2" => {
                HookDecision::Rewrite {
                    arguments: json!({"text": "B"}),
                }
            }
            HookInput::AfterToolCall { tool_use_id, .. } if tool_use_id == "t1" => {
                HookDecision::AddContext {
                    text: "(seen)".into(),
                }
            }
            HookInput::RunEnd { continued: 0, .. } => HookDecision::Continue {
                reason: "Once more.".into(),
            },
            _ => HookDecision::Pass,
        };
        async move { Ok(decision) }
    });
    (vec![hook], asked)
}

fn full_script() -> Vec<ScriptedTurn> {
    vec![
        echo_turn("t1", "a"),
        ScriptedTurn::new()
            .tool_call("t2", "echo", json!({"text": "b"}))
            .usage(3, 1),
        ScriptedTurn::new().text("done"),
        ScriptedTurn::new().text("really done"),
    ]
}

#[tokio::test]
async fn resumed_from_every_checkpoint_no_hook_is_asked_twice() {
    let (hooks, asked) = full_hooks();
    let provider = ScriptedProvider::new(full_script());
    let mut items =
        run(LoopOptions::default(), user("go"), deps(&provider, &hooks)).with_checkpoints();
    let mut events = Vec::new();
    // Each checkpoint with the number of hook answers recorded before it.
    let mut checkpoints: Vec<(RunState, usize)> = Vec::new();
    while let Some(item) = items.next().await {
        match item {
            RunItem::Event(event) => events.push(event),
            RunItem::Checkpoint(state) => {
                checkpoints.push((state, hook_events(&events).len()));
            }
        }
    }
    let whole = snapshot("hook_full_run", &events);
    let total = asked.lock().unwrap().len();
    assert_eq!(total, hook_events(&events).len());
    assert!(checkpoints.len() > 5);

    for (n, (state, answered)) in checkpoints.into_iter().enumerate() {
        // The stored state goes through JSON, as it would to a store.
        let state: RunState =
            serde_json::from_str(&serde_json::to_string(&state).unwrap()).unwrap();
        let (hooks, asked) = full_hooks();
        let played = provider_after(&state);
        let provider = ScriptedProvider::new(full_script().split_off(played));
        let result = collect(resume(
            LoopOptions::default(),
            state,
            deps(&provider, &hooks),
        ))
        .await;
        assert_eq!(
            result.messages, whole.messages,
            "checkpoint {n} ends as the whole run"
        );
        // A hook step in flight at the checkpoint is asked again (its
        // answers never arrived); nothing decided before is.
        let again = asked.lock().unwrap().len();
        assert_eq!(
            answered + again,
            total,
            "checkpoint {n}: {answered} answered before, {again} asked after"
        );
    }
}

/// How many model turns a stored run has played: its finished model calls.
fn provider_after(state: &RunState) -> usize {
    let in_flight = state
        .strategy
        .as_ref()
        .is_some_and(|s| s.get("model_call").is_some());
    state.iteration as usize - usize::from(in_flight)
}

// ---- before_compaction ----

/// Plays the run's requests from a script and answers every summarising
/// request with one summary.
struct Summarising {
    main: Arc<ScriptedProvider>,
}

fn is_summary(request: &ModelRequest) -> bool {
    request
        .messages
        .first()
        .is_some_and(|m| m.id.ends_with("-summary-instruction"))
}

impl ModelProvider for Summarising {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        if is_summary(&request) {
            ScriptedProvider::new([ScriptedTurn::new().text("The user asked for notes.")])
                .stream(request)
        } else {
            self.main.stream(request)
        }
    }
}

/// Context window 2,000 tokens; compaction above half of it, keeping the
/// last two turns.
fn compacting(strategy: CompactionStrategy) -> LoopOptions {
    LoopOptions {
        context_window: Some(2_000),
        compaction: CompactionOptions {
            strategy,
            threshold: 0.5,
            keep_last_turns: 2,
        },
        ..LoopOptions::default()
    }
}

/// Eight echo turns of some 170 tokens each, then the answer: the run
/// crosses the threshold more than once.
fn long_script() -> Vec<ScriptedTurn> {
    let mut turns: Vec<ScriptedTurn> = (1..=8)
        .map(|k| {
            let note = format!("note {k}: {}", "lorem ipsum ".repeat(27));
            echo_turn(&format!("t{k}"), &note)
        })
        .collect();
    turns.push(ScriptedTurn::new().text("All echoed."));
    turns
}

/// The text that stands in for the compacted turns in request `n`, if any.
fn stand_in(provider: &ScriptedProvider, n: usize) -> Option<String> {
    provider.requests()[n]
        .messages
        .iter()
        .find(|m| m.id == "run-compaction")
        .map(|m| m.text())
}

async fn compacting_events(
    strategy: CompactionStrategy,
    provider: Arc<dyn ModelProvider>,
    hooks: &[Arc<dyn Hook>],
) -> Vec<LoopEvent> {
    let deps = hooks.iter().fold(
        RunDeps::new(provider)
            .with_tools([echo()])
            .with_run_id("run"),
        |deps, hook| deps.with_hook(hook.clone()),
    );
    run(compacting(strategy), user("go"), deps).collect().await
}

fn compacted(events: &[LoopEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::ContextCompacted(_)))
        .count()
}

#[tokio::test]
async fn before_compaction_block_sends_the_request_uncompacted() {
    let provider = ScriptedProvider::new(long_script());
    let (hook, asked) = recording("keep-all", &[HookPoint::BeforeCompaction], |_| {
        HookDecision::Block {
            reason: "the whole history matters".into(),
        }
    });
    let events = compacting_events(CompactionStrategy::DropOldest, provider.clone(), &[hook]).await;
    let result = snapshot("hook_before_compaction_block", &events);
    assert_eq!(result.status.name(), "complete");
    assert_eq!(compacted(&events), 0, "no compaction happened");
    let asked = asked.lock().unwrap();
    assert!(asked.len() > 1, "asked at every call over the threshold");
    assert!(matches!(
        &asked[0],
        HookInput::BeforeCompaction {
            strategy: CompactionStrategy::DropOldest,
            messages_compacted,
            tokens_before,
            ..
        } if *messages_compacted > 0 && *tokens_before > 1_000
    ));
    let requests = provider.requests();
    assert!(
        (0..requests.len()).all(|n| stand_in(&provider, n).is_none()),
        "nothing stands in for older turns"
    );
    assert_eq!(
        requests.last().unwrap().messages.len(),
        result.messages.len() - 1,
        "the last request sends the whole history"
    );
}

#[tokio::test]
async fn before_compaction_context_is_kept_with_the_left_out_turns() {
    let provider = ScriptedProvider::new(long_script());
    let (pass, _) = recording("watch", &[HookPoint::BeforeCompaction], |_| {
        HookDecision::Pass
    });
    let (keep, _) = recording("keep-goal", &[HookPoint::BeforeCompaction], |_| {
        HookDecision::AddContext {
            text: "Keep in mind: the user wants every note echoed.".into(),
        }
    });
    let events = compacting_events(
        CompactionStrategy::DropOldest,
        provider.clone(),
        &[pass, keep],
    )
    .await;
    snapshot("hook_before_compaction_context", &events);
    assert!(compacted(&events) > 0);
    let last = stand_in(&provider, provider.requests().len() - 1).unwrap();
    assert_eq!(
        last,
        "Earlier turns of this conversation were left out to fit the context window.\n\n\
         Keep in mind: the user wants every note echoed."
    );
}

#[tokio::test]
async fn before_compaction_context_is_kept_with_the_summary() {
    let main = ScriptedProvider::new(long_script());
    let provider = Arc::new(Summarising { main: main.clone() });
    let (keep, asked) = recording("keep-goal", &[HookPoint::BeforeCompaction], |_| {
        HookDecision::AddContext {
            text: "Keep in mind: every note.".into(),
        }
    });
    let events = compacting_events(CompactionStrategy::Summarise, provider, &[keep]).await;
    snapshot("hook_before_compaction_summary", &events);
    assert!(matches!(
        asked.lock().unwrap()[0],
        HookInput::BeforeCompaction {
            strategy: CompactionStrategy::Summarise,
            ..
        }
    ));
    let last = stand_in(&main, main.requests().len() - 1).unwrap();
    assert!(
        last.ends_with("The user asked for notes.\n\nKeep in mind: every note."),
        "{last}"
    );
}

/// Blocks the compactions of even-numbered calls, keeps context with the
/// others.
fn alternating() -> (Vec<Arc<dyn Hook>>, Asked) {
    let (hook, asked) = recording(
        "alternate",
        &[HookPoint::BeforeCompaction],
        |input| match input {
            HookInput::BeforeCompaction { iteration, .. } if iteration % 2 == 0 => {
                HookDecision::Block {
                    reason: "not now".into(),
                }
            }
            HookInput::BeforeCompaction { iteration, .. } => HookDecision::AddContext {
                text: format!("Kept at call {iteration}."),
            },
            _ => HookDecision::Pass,
        },
    );
    (vec![hook], asked)
}

#[tokio::test]
async fn compaction_decisions_survive_every_checkpoint() {
    let (hooks, asked) = alternating();
    let provider = ScriptedProvider::new(long_script());
    let options = compacting(CompactionStrategy::DropOldest);
    let mut items = run(options.clone(), user("go"), deps(&provider, &hooks)).with_checkpoints();
    let mut events = Vec::new();
    let mut checkpoints: Vec<(RunState, usize)> = Vec::new();
    while let Some(item) = items.next().await {
        match item {
            RunItem::Event(event) => events.push(event),
            RunItem::Checkpoint(state) => checkpoints.push((state, hook_events(&events).len())),
        }
    }
    let whole = snapshot("hook_before_compaction_resumed", &events);
    let total = asked.lock().unwrap().len();
    let decided: Vec<&str> = hook_events(&events)
        .iter()
        .map(|e| e.decision.name())
        .collect();
    assert!(decided.contains(&"block") && decided.contains(&"add_context"));
    let whole_requests = provider.requests();

    for (n, (state, answered)) in checkpoints.into_iter().enumerate() {
        let state: RunState =
            serde_json::from_str(&serde_json::to_string(&state).unwrap()).unwrap();
        let (hooks, asked) = alternating();
        let played = provider_after(&state);
        let resumed = ScriptedProvider::new(long_script().split_off(played));
        let result = collect(resume(options.clone(), state, deps(&resumed, &hooks))).await;
        assert_eq!(result.messages, whole.messages, "checkpoint {n}");
        let again = asked.lock().unwrap().len();
        assert_eq!(
            answered + again,
            total,
            "checkpoint {n}: {answered} answered before, {again} asked after"
        );
        // What was sent after the checkpoint is what the whole run sent.
        let sent = resumed.requests();
        let tail = &whole_requests[whole_requests.len() - sent.len()..];
        for (a, b) in sent.iter().zip(tail) {
            assert_eq!(a.messages, b.messages, "checkpoint {n}");
        }
    }
}
