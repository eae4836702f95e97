//! Compaction of what a run sends: scripted runs that cross the context
//! threshold several times, with snapshots of every request the provider
//! received. The history stays whole; what is sent always validates.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use agentloop_types::{
    AgentErrorEvent, ContextCompactedEvent, StreamingChunkEvent, StreamingStartEvent,
};
use std::sync::Arc;

use agentloop_engine::scripted::ScriptedTurn;
use agentloop_engine::strategy::{PlanExecuteStrategy, ReactStrategy};
use agentloop_engine::{LoopStrategy, RunDeps, RunItem, resume, run};
use agentloop_types::transcript::render_events;
use agentloop_types::{
    ApiKind, CompactionOptions, CompactionStrategy, ContentBlock, EventKind, History, LoopEvent,
    LoopOptions, LoopResult, Message, ModelRequest, ProviderError, ProviderErrorKind,
    RequestOptions, Role, RunState, SentMessages, SentRequest, TokenTotals, validate_history,
};
use futures::StreamExt;
use serde_json::json;

use common::routed::{Routed, is_summary};
use common::{check_invariants, check_recorded_requests, echo};

/// Context window 2,000 tokens; compaction above half of it.
fn options(strategy: CompactionStrategy) -> LoopOptions {
    LoopOptions {
        request: RequestOptions {
            system_prompt: Some("You echo notes.".into()),
            ..RequestOptions::default()
        },
        context_window: Some(2_000),
        compaction: CompactionOptions {
            strategy,
            threshold: 0.5,
            keep_last_turns: 2,
        },
        ..LoopOptions::default()
    }
}

const LIMIT: u64 = 1_000;

/// A note of some 330 characters: each echo turn adds about 170 tokens.
fn note(k: usize) -> String {
    format!("note {k}: {}", "lorem ipsum ".repeat(27))
}

/// Echo turns of a run.
const TURNS: usize = 14;

/// [`TURNS`] echo turns, then the answer.
fn echo_turns() -> Vec<ScriptedTurn> {
    let mut turns: Vec<ScriptedTurn> = (1..=TURNS)
        .map(|k| {
            ScriptedTurn::new()
                .tool_call(&format!("t{k}"), "echo", json!({ "text": note(k) }))
                .usage(100, 10)
        })
        .collect();
    turns.push(ScriptedTurn::new().text("All notes echoed.").usage(100, 5));
    turns
}

fn summaries(n: usize) -> Vec<ScriptedTurn> {
    (1..=n)
        .map(|i| {
            ScriptedTurn::new()
                .text(&format!(
                    "Summary {i}: the user asked for notes; echoed so far."
                ))
                .usage(40, 12)
        })
        .collect()
}

fn context() -> Vec<Message> {
    vec![
        Message::system_text("sys", "Echo every note."),
        Message::user_text("u1", "Echo my notes, one call each."),
    ]
}

fn deps(provider: Arc<Routed>) -> RunDeps {
    RunDeps::new(provider)
        .with_tools([echo()])
        .with_run_id("run")
}

async fn run_events(provider: Arc<Routed>, options: LoopOptions) -> Vec<LoopEvent> {
    run(options, context(), deps(provider)).collect().await
}

/// A block, short: long texts cut to their start and length.
fn block(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text { text, .. } => {
            let start: String = text.chars().take(48).collect();
            if text.chars().count() > 200 {
                format!("text {start:?}… ({} chars)", text.chars().count())
            } else {
                format!("text {text:?}")
            }
        }
        ContentBlock::ToolUse(call) => format!("tool_use {} {}", call.id, call.name),
        ContentBlock::ToolResult(result) => format!("tool_result {}", result.tool_use_id),
        ContentBlock::Provider { block, .. } => format!("provider {block}"),
        other => format!("{other:?}"),
    }
}

/// Every request, one line per message.
fn render_requests(requests: &[ModelRequest]) -> String {
    let mut out = String::new();
    for (i, request) in requests.iter().enumerate() {
        let kind = if is_summary(request) {
            "summarise"
        } else {
            "model"
        };
        out.push_str(&format!(
            "request {} ({kind}, {} tools, system prompt {:?})\n",
            i + 1,
            request.tools.len(),
            request.options.system_prompt
        ));
        for message in &request.messages {
            let role = match message.role {
                Role::System => "system",
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            let blocks: Vec<String> = message.content.iter().map(block).collect();
            out.push_str(&format!(
                "  {role} {}: {}\n",
                message.id,
                blocks.join(" | ")
            ));
        }
    }
    out
}

/// The events without streaming deltas.
fn render_run(events: &[LoopEvent]) -> String {
    render_events(events.iter().filter(|e| {
        !matches!(
            e.kind,
            EventKind::StreamingChunk(StreamingChunkEvent { .. })
        )
    }))
}

fn compactions(events: &[LoopEvent]) -> Vec<(CompactionStrategy, u64, u64, u32)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ContextCompacted(ContextCompactedEvent {
                strategy,
                tokens_before,
                tokens_after,
                messages_compacted,
            }) => Some((
                *strategy,
                *tokens_before,
                *tokens_after,
                *messages_compacted,
            )),
            _ => None,
        })
        .collect()
}

/// What every run must show: the invariants, a whole history of every
/// tool pair, and requests that validate.
fn check_run(events: &[LoopEvent], requests: &[ModelRequest]) -> LoopResult {
    let result = check_invariants(events);
    let ids: Vec<&str> = result.messages.iter().map(|m| m.id.as_str()).collect();
    let mut expected = vec!["sys".to_owned(), "u1".to_owned()];
    expected.extend((1..=2 * TURNS + 1).map(|n| format!("run-{n}")));
    assert_eq!(ids, expected, "the stored history is whole");
    assert_eq!(result.messages[..2], context()[..]);
    assert!(
        result
            .messages
            .iter()
            .all(|m| !m.id.ends_with("-compaction")),
        "no compaction item is stored"
    );
    let own: Vec<ModelRequest> = requests
        .iter()
        .filter(|r| !is_summary(r))
        .cloned()
        .collect();
    check_recorded_requests(events, &own, &result.messages);
    for request in requests.iter().filter(|r| !is_summary(r)) {
        validate_history(&request.messages, false).expect("what is sent validates");
        assert_eq!(
            request.messages[0],
            context()[0],
            "the system message is verbatim"
        );
        assert_eq!(
            request.options.system_prompt.as_deref(),
            Some("You echo notes.")
        );
        // The latest turns are sent verbatim.
        let tail = &result.messages[..];
        let sent = &request.messages;
        let kept = sent.len().min(5) - 1;
        let end = tail
            .iter()
            .position(|m| m.id == sent[sent.len() - 1].id)
            .unwrap();
        assert_eq!(&sent[sent.len() - kept..], &tail[end + 1 - kept..=end]);
    }
    result
}

#[tokio::test]
async fn summarise_crosses_the_threshold_several_times() {
    let provider = Routed::new(echo_turns(), summaries(6));
    let events = run_events(provider.clone(), options(CompactionStrategy::Summarise)).await;
    let requests = provider.requests();
    let result = check_run(&events, &requests);

    let compacted = compactions(&events);
    assert!(compacted.len() >= 3, "{compacted:?}");
    for (strategy, before, after, _) in &compacted {
        assert_eq!(*strategy, CompactionStrategy::Summarise);
        assert!(*before > LIMIT && after < before, "{before} -> {after}");
    }
    let summary_requests: Vec<&ModelRequest> = requests.iter().filter(|r| is_summary(r)).collect();
    assert_eq!(summary_requests.len(), compacted.len());
    for request in &summary_requests {
        assert!(request.tools.is_empty());
        assert_eq!(request.options.system_prompt, None);
    }
    // The summarising calls count in the run's tokens.
    let summary_tokens = TokenTotals {
        input_tokens: 40,
        output_tokens: 12,
        ..Default::default()
    };
    assert_eq!(
        result.tokens.input_tokens,
        (TURNS as u64 + 1) * 100 + compacted.len() as u64 * summary_tokens.input_tokens
    );
    assert_eq!(provider.remaining(), 6 - compacted.len());
    insta::assert_snapshot!("summarise_requests", render_requests(&requests));
    insta::assert_snapshot!("summarise_events", render_run(&events));
}

#[tokio::test]
async fn drop_oldest_leaves_out_as_few_turns_as_fit() {
    let provider = Routed::new(echo_turns(), Vec::new());
    let events = run_events(provider.clone(), options(CompactionStrategy::DropOldest)).await;
    let requests = provider.requests();
    check_run(&events, &requests);

    let compacted = compactions(&events);
    assert!(compacted.len() >= 3, "{compacted:?}");
    for (strategy, before, after, _) in &compacted {
        assert_eq!(*strategy, CompactionStrategy::DropOldest);
        assert!(*before > LIMIT && *after <= LIMIT, "{before} -> {after}");
    }
    assert!(requests.iter().all(|r| !is_summary(r)));
    insta::assert_snapshot!("drop_oldest_requests", render_requests(&requests));
}

#[tokio::test]
async fn none_sends_the_whole_history() {
    let provider = Routed::new(echo_turns(), Vec::new());
    let events = run_events(provider.clone(), options(CompactionStrategy::None)).await;
    let requests = provider.requests();
    let result = check_run(&events, &requests);
    assert!(compactions(&events).is_empty());
    let last = requests.last().unwrap();
    assert_eq!(last.messages, result.messages[..result.messages.len() - 1]);
    // Each request is recorded in a few bytes: its history as one range,
    // and its options and tools only the first time.
    let records: Vec<SentRequest> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::StreamingStart(StreamingStartEvent { request, .. }) => {
                request.as_deref().cloned()
            }
            _ => None,
        })
        .collect();
    assert!(records[0].options.is_some() && records[0].tools.is_some());
    for (record, request) in records.iter().zip(&requests).skip(1) {
        assert_eq!(
            (&record.options, &record.tools),
            (&None, &None),
            "options and tools as before"
        );
        let to = request.messages.len() as u64;
        assert_eq!(record.messages, [SentMessages::History { from: 0, to }]);
    }
}

#[tokio::test]
async fn without_a_context_window_nothing_is_compacted() {
    let provider = Routed::new(echo_turns(), summaries(1));
    let options = LoopOptions {
        context_window: None,
        ..options(CompactionStrategy::Summarise)
    };
    let events = run_events(provider.clone(), options).await;
    check_run(&events, &provider.requests());
    assert!(compactions(&events).is_empty());
}

#[tokio::test]
async fn a_failed_summary_leaves_the_oldest_turns_out_instead() {
    let failing = ScriptedTurn::new().error(ProviderError::new(ProviderErrorKind::Api, "busy"));
    let provider = Routed::new(echo_turns(), vec![failing; 6]);
    let events = run_events(provider.clone(), options(CompactionStrategy::Summarise)).await;
    let requests = provider.requests();
    check_run(&events, &requests);
    let compacted = compactions(&events);
    assert!(!compacted.is_empty());
    assert!(
        compacted
            .iter()
            .all(|c| c.0 == CompactionStrategy::DropOldest)
    );
    let errors = events
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::AgentError(AgentErrorEvent { message, .. }) if message.contains("Summarising the context failed")))
        .count();
    assert_eq!(errors, compacted.len());
}

#[tokio::test]
async fn a_provider_compaction_block_passes_through_untouched() {
    let server_compaction = Message::new(
        "a0",
        Role::Assistant,
        vec![
            ContentBlock::Provider {
                api: ApiKind::AnthropicMessages,
                block: json!({"type": "compaction", "content": "## Summary\nEarlier notes."}),
            },
            ContentBlock::text("Understood."),
        ],
    );
    let mut context = context();
    context.push(server_compaction.clone());
    context.push(Message::user_text("u2", "Go on."));
    let provider = Routed::new(echo_turns(), Vec::new());
    let events = run(
        options(CompactionStrategy::DropOldest),
        context,
        deps(provider.clone()),
    )
    .collect::<Vec<_>>()
    .await;
    let result = check_invariants(&events);
    assert_eq!(result.messages[2], server_compaction);
    for request in provider.requests() {
        validate_history(&request.messages, false).unwrap();
        assert!(
            request.messages.contains(&server_compaction),
            "the block is sent as it came"
        );
    }
}

#[tokio::test]
async fn a_run_resumed_from_any_checkpoint_sends_the_same_requests() {
    let full = Routed::new(echo_turns(), summaries(6));
    let items: Vec<RunItem> = run(
        options(CompactionStrategy::Summarise),
        context(),
        deps(full.clone()),
    )
    .with_checkpoints()
    .collect()
    .await;
    let all_requests = full.requests();
    let expected = items
        .iter()
        .find_map(|item| match item {
            RunItem::Event(e) => e.root_result().cloned(),
            RunItem::Checkpoint(_) => None,
        })
        .unwrap();
    let main_turns = echo_turns();
    let summary_turns = summaries(6);
    let mut resumed_in_summary = false;
    for (at, item) in items.iter().enumerate() {
        let RunItem::Checkpoint(state) = item else {
            continue;
        };
        let before = &items[..at];
        let count = |f: fn(&EventKind) -> bool| {
            before
                .iter()
                .filter(|item| matches!(item, RunItem::Event(e) if f(&e.kind)))
                .count()
        };
        let calls_done =
            count(|k| matches!(k, EventKind::StreamingStart(StreamingStartEvent { .. })));
        let summaries_done =
            count(|k| matches!(k, EventKind::ContextCompacted(ContextCompactedEvent { .. })));
        let stored: RunState =
            serde_json::from_str(&serde_json::to_string(state).unwrap()).unwrap();
        resumed_in_summary |= stored
            .strategy
            .as_ref()
            .is_some_and(|s| s.get("summary").is_some());
        let provider = Routed::new(
            main_turns[calls_done..].to_vec(),
            summary_turns[summaries_done..].to_vec(),
        );
        let events = resume(
            options(CompactionStrategy::Summarise),
            stored,
            deps(provider.clone()),
        )
        .collect::<Vec<_>>()
        .await;
        let result = events.last().unwrap().root_result().unwrap().clone();
        assert_eq!(result, expected, "resumed at item {at}");
        let sent: Vec<History> = provider
            .requests()
            .into_iter()
            .map(|r| r.messages)
            .collect();
        let original: Vec<History> = all_requests[calls_done + summaries_done..]
            .iter()
            .map(|r| r.messages.clone())
            .collect();
        assert_eq!(sent, original, "resumed at item {at}");
    }
    assert!(
        resumed_in_summary,
        "a checkpoint falls while a summary is due"
    );
}

/// React and plan-and-execute scripts that echo long notes.
fn strategy_cases() -> Vec<(Arc<dyn LoopStrategy>, Vec<ScriptedTurn>)> {
    let echo = |id: &str, k: usize| {
        ScriptedTurn::new()
            .tool_call(id, "echo", json!({ "text": note(k) }))
            .usage(10, 2)
    };
    let control = |id: &str, name: &str, input: serde_json::Value| {
        ScriptedTurn::new().tool_call(id, name, input).usage(10, 2)
    };
    let mut react = Vec::new();
    for k in 1..=6 {
        react.push(control(
            &format!("r{k}"),
            "agent_decide_next",
            json!({"message": format!("echo note {k}")}),
        ));
        react.push(echo(&format!("t{k}"), k));
        react.push(control(
            &format!("o{k}"),
            "agent_observe_decide",
            json!({"message": format!("note {k} echoed"), "should_continue": k < 6}),
        ));
    }
    react.push(ScriptedTurn::new().text("Six notes echoed.").usage(10, 2));
    let steps: Vec<String> = (1..=8).map(|k| format!("Echo note {k}")).collect();
    let mut plan = vec![control("p1", "agent_plan", json!({ "steps": steps }))];
    for k in 1..=8 {
        plan.push(echo(&format!("t{k}"), k));
        plan.push(
            ScriptedTurn::new()
                .text(&format!("Note {k} done."))
                .usage(10, 2),
        );
    }
    plan.push(ScriptedTurn::new().text("All eight done.").usage(10, 2));
    vec![
        (Arc::new(ReactStrategy::default()), react),
        (Arc::new(PlanExecuteStrategy::default()), plan),
    ]
}

#[tokio::test]
async fn react_and_plan_runs_compact_and_keep_their_history() {
    for strategy_kind in [
        CompactionStrategy::Summarise,
        CompactionStrategy::DropOldest,
    ] {
        for (strategy, turns) in strategy_cases() {
            let name = format!("{} {}", strategy.name(), strategy_kind.name());
            let provider = Routed::new(turns, summaries(40));
            let options = LoopOptions {
                context_window: Some(2_000),
                ..options(strategy_kind)
            };
            let events: Vec<LoopEvent> = strategy
                .run(options, context(), deps(provider.clone()))
                .collect()
                .await;
            let result = check_invariants(&events);
            assert!(
                matches!(result.status, agentloop_types::LoopStatus::Complete { .. }),
                "{name}: {:?}",
                result.status
            );
            assert_eq!(result.messages[..2], context()[..], "{name}");
            let compacted = compactions(&events);
            assert!(!compacted.is_empty(), "{name}: compacts");
            assert!(
                compacted.iter().all(|c| c.0 == strategy_kind),
                "{name}: {compacted:?}"
            );
            let mut sent_a_summary = false;
            for request in provider.requests().iter().filter(|r| !is_summary(r)) {
                validate_history(&request.messages, false)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                sent_a_summary |= request
                    .messages
                    .iter()
                    .any(|m| m.id.ends_with("-compaction"));
            }
            assert!(sent_a_summary, "{name}");
            // Every tool call of the run is in the stored history with its result.
            let calls = result.messages.iter().flat_map(|m| m.tool_uses()).count();
            let results = result
                .messages
                .iter()
                .flat_map(|m| m.tool_results())
                .count();
            assert_eq!(calls, results, "{name}");
        }
    }
}

/// Runs with parallel calls under many settings: whatever is cut, every
/// sent message other than the compaction item is a stored message,
/// unchanged and in order, and what is sent validates.
#[tokio::test]
async fn parallel_calls_stay_paired_under_every_setting() {
    let script = || -> Vec<ScriptedTurn> {
        let mut turns: Vec<ScriptedTurn> = (1..=9)
            .map(|k| {
                let mut turn = ScriptedTurn::new().usage(10, 2);
                for c in 0..(k % 3 + 1) {
                    turn = turn.tool_call(&format!("t{k}-{c}"), "echo", json!({ "text": note(k) }));
                }
                turn
            })
            .collect();
        turns.push(ScriptedTurn::new().text("Done.").usage(10, 2));
        turns
    };
    for strategy in [
        CompactionStrategy::Summarise,
        CompactionStrategy::DropOldest,
    ] {
        for keep_last_turns in 0..=3 {
            for threshold in [0.3, 0.5, 0.9] {
                let name = format!("{} keep {keep_last_turns} at {threshold}", strategy.name());
                let provider = Routed::new(script(), summaries(40));
                let options = LoopOptions {
                    compaction: CompactionOptions {
                        strategy,
                        threshold,
                        keep_last_turns,
                    },
                    ..options(strategy)
                };
                let events = run_events(provider.clone(), options).await;
                let result = check_invariants(&events);
                assert!(
                    matches!(result.status, agentloop_types::LoopStatus::Complete { .. }),
                    "{name}"
                );
                assert!(!compactions(&events).is_empty(), "{name}: compacts");
                for request in provider.requests().iter().filter(|r| !is_summary(r)) {
                    validate_history(&request.messages, false)
                        .unwrap_or_else(|e| panic!("{name}: {e}"));
                    let mut from = 0;
                    for sent in &request.messages {
                        if sent.id == "run-compaction" {
                            continue;
                        }
                        let at = result.messages[from..]
                            .iter()
                            .position(|m| m == sent)
                            .unwrap_or_else(|| panic!("{name}: {} is stored as sent", sent.id));
                        from += at + 1;
                    }
                    // The latest turns stay: the request ends as the history
                    // did when it was sent.
                    let last = request.messages.last().unwrap();
                    let end = result.messages.iter().position(|m| m == last).unwrap();
                    let assistants_kept = request
                        .messages
                        .iter()
                        .filter(|m| m.role == Role::Assistant)
                        .count();
                    let assistants_before = result.messages[..=end]
                        .iter()
                        .filter(|m| m.role == Role::Assistant)
                        .count();
                    assert!(
                        assistants_kept >= assistants_before.min(keep_last_turns as usize),
                        "{name}: the last {keep_last_turns} turns are sent"
                    );
                }
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_cancel_during_the_summary_ends_the_run_with_its_history_whole() {
    let provider = Routed::new(echo_turns(), vec![ScriptedTurn::new().hang()]);
    let cancel = agentloop_types::CancellationToken::new();
    common::cancel_after(&cancel, 1_000);
    let deps = deps(provider.clone()).with_cancel(cancel);
    let events: Vec<LoopEvent> = run(options(CompactionStrategy::Summarise), context(), deps)
        .collect()
        .await;
    let result = check_invariants(&events);
    assert_eq!(result.status, agentloop_types::LoopStatus::Cancelled);
    assert!(compactions(&events).is_empty());
    assert!(is_summary(provider.requests().last().unwrap()));
    let calls = result.messages.iter().flat_map(|m| m.tool_uses()).count();
    assert!(calls >= 4, "the turns before the summary are stored");
    validate_history(&result.messages, false).unwrap();
}
