//! Event sequences of representative runs, pinned as readable snapshots.

mod common;

use agentloop_types::ToolStartEvent;
use std::sync::Arc;
use std::sync::Mutex;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_types::transcript::render_events;
use agentloop_types::{
    CancellationToken, Decision, LoopOptions, LoopStatus, ProviderError, ProviderErrorKind,
    RequestOptions, StopReason,
};
use common::*;
use serde_json::json;

fn snapshot(name: &str, events: &[agentloop_types::LoopEvent]) {
    check_invariants(events);
    insta::assert_snapshot!(name, render_events(events));
}

#[tokio::test(start_paused = true)]
async fn text_only() {
    let provider = ScriptedProvider::new([ScriptedTurn::new()
        .thinking("The user greets me.", "sig-1")
        .text_chunks(&["Hel", "lo", "!"])
        .usage(10, 4)]);
    let events = run_events(
        provider,
        vec![],
        LoopOptions::default(),
        user("Hi"),
        CancellationToken::new(),
    )
    .await;
    snapshot("text_only", &events);
}

#[tokio::test(start_paused = true)]
async fn one_tool() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .text("Let me echo.")
            .tool_call("t1", "echo", json!({"text": "ping"}))
            .usage(20, 8),
        ScriptedTurn::new().text("It said ping.").usage(30, 5),
    ]);
    let events = run_events(
        provider.clone(),
        vec![echo()],
        LoopOptions::default(),
        user("Echo ping"),
        CancellationToken::new(),
    )
    .await;
    snapshot("one_tool", &events);
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].tools.len(), 1);
    assert_eq!(
        requests[1].messages.len(),
        3,
        "user, assistant, tool results"
    );
}

#[tokio::test(start_paused = true)]
async fn three_parallel_tools_complete_out_of_order() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .tool_call("t1", "slow", json!({"ms": 30, "steps": 3}))
            .tool_call("t2", "slow", json!({"ms": 10, "steps": 2}))
            .tool_call("t3", "slow", json!({"ms": 20, "steps": 1}))
            .usage(10, 10),
        ScriptedTurn::new().text("All done.").usage(10, 2),
    ]);
    let events = run_events(
        provider,
        vec![slow("slow", false)],
        LoopOptions::default(),
        user("go"),
        CancellationToken::new(),
    )
    .await;
    snapshot("three_parallel_tools", &events);
}

#[tokio::test(start_paused = true)]
async fn alone_tool_among_parallel_ones() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .tool_call("t1", "slow", json!({"ms": 20, "steps": 2}))
            .tool_call("t2", "solo", json!({"ms": 10, "steps": 1}))
            .tool_call("t3", "slow", json!({"ms": 10, "steps": 1}))
            .tool_call("t4", "slow", json!({"ms": 5, "steps": 1})),
        ScriptedTurn::new().text("ok"),
    ]);
    let events = run_events(
        provider,
        vec![slow("slow", false), slow("solo", true)],
        LoopOptions::default(),
        user("go"),
        CancellationToken::new(),
    )
    .await;
    snapshot("alone_tool", &events);
}

#[tokio::test(start_paused = true)]
async fn suspend_then_resume() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .tool_call("t1", "echo", json!({"text": "a"}))
            .tool_call("t2", "ask_user", json!({"question": "Which colour?"})),
        ScriptedTurn::new().text("Blue it is."),
    ]);
    let tools = vec![echo(), asking()];
    let events = run_events(
        provider.clone(),
        tools.clone(),
        LoopOptions::default(),
        user("paint"),
        CancellationToken::new(),
    )
    .await;
    snapshot("suspend", &events);
    let suspended = check_invariants(&events);
    let (pending, state) = suspension(&suspended);
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].call.id, "t2");

    // The stored state resumes in place: the answer is the call's result.
    let state = serde_json::from_str(&serde_json::to_string(&state).unwrap()).unwrap();
    let answer = Decision::Answer {
        text: "blue".into(),
    };
    let decisions = [("t2".to_owned(), answer)].into();
    let events = decide_events(
        provider.clone(),
        tools,
        LoopOptions::default(),
        state,
        decisions,
    )
    .await;
    snapshot("resume", &events);
    let resumed = check_invariants(&events);
    assert!(matches!(resumed.status, LoopStatus::Complete { .. }));
    assert_eq!(resumed.final_text().as_deref(), Some("Blue it is."));
}

#[tokio::test(start_paused = true)]
async fn return_tool_completes_with_value() {
    let provider = ScriptedProvider::new([ScriptedTurn::new()
        .tool_call("t1", "return", json!({"value": {"answer": 42}}))
        .usage(5, 5)]);
    let events = run_events(
        provider,
        vec![returning()],
        LoopOptions::default(),
        user("compute"),
        CancellationToken::new(),
    )
    .await;
    snapshot("return_tool", &events);
}

#[tokio::test(start_paused = true)]
async fn max_iterations() {
    let turn = |id: &str| ScriptedTurn::new().tool_call(id, "echo", json!({"text": id}));
    let provider = ScriptedProvider::new([turn("t1"), turn("t2"), turn("t3")]);
    let options = LoopOptions {
        max_iterations: 2,
        ..LoopOptions::default()
    };
    let events = run_events(
        provider,
        vec![echo()],
        options,
        user("loop"),
        CancellationToken::new(),
    )
    .await;
    snapshot("max_iterations", &events);
}

#[tokio::test(start_paused = true)]
async fn cancel_mid_stream() {
    let provider = ScriptedProvider::new([ScriptedTurn::new()
        .text_chunks(&["Once upon"])
        .delay_ms(100)
        .text(" a time")]);
    let cancel = CancellationToken::new();
    cancel_after(&cancel, 50);
    let events = run_events(
        provider,
        vec![],
        LoopOptions::default(),
        user("story"),
        cancel,
    )
    .await;
    snapshot("cancel_mid_stream", &events);
}

#[tokio::test(start_paused = true)]
async fn cancel_mid_tool() {
    let slot = Arc::new(Mutex::new(None));
    let provider = ScriptedProvider::new([ScriptedTurn::new()
        .tool_call("t1", "echo", json!({"text": "quick"}))
        .tool_call("t2", "hang", json!({}))]);
    let cancel = CancellationToken::new();
    cancel_after(&cancel, 50);
    let events = run_events(
        provider,
        vec![echo(), hanging(slot.clone())],
        LoopOptions::default(),
        user("go"),
        cancel,
    )
    .await;
    snapshot("cancel_mid_tool", &events);
    let token = slot
        .lock()
        .unwrap()
        .clone()
        .expect("the hanging tool started");
    assert!(
        token.is_cancelled(),
        "cancelling the run cancels the tool's token"
    );
}

#[tokio::test(start_paused = true)]
async fn provider_error_mid_stream() {
    let mut error = ProviderError::new(ProviderErrorKind::Api, "Overloaded");
    error.error_type = Some("overloaded_error".into());
    error.request_id = Some("req_123".into());
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("t1", "echo", json!({"text": "x"})),
        ScriptedTurn::new().text("Partial").error(error),
    ]);
    let events = run_events(
        provider,
        vec![echo()],
        LoopOptions::default(),
        user("go"),
        CancellationToken::new(),
    )
    .await;
    snapshot("provider_error", &events);
}

#[tokio::test(start_paused = true)]
async fn unknown_tool() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("t1", "teleport", json!({"to": "mars"})),
        ScriptedTurn::new().text("That tool does not exist."),
    ]);
    let events = run_events(
        provider,
        vec![echo()],
        LoopOptions::default(),
        user("go"),
        CancellationToken::new(),
    )
    .await;
    snapshot("unknown_tool", &events);
}

#[tokio::test(start_paused = true)]
async fn invalid_tool_arguments() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .tool_call_raw("t1", "echo", &["", "{\"text\": \"unterminated"])
            .stop(StopReason::MaxTokens),
        ScriptedTurn::new().tool_call_raw("t2", "echo", &["[1, 2]"]),
        ScriptedTurn::new().text("Giving up."),
    ]);
    let events = run_events(
        provider,
        vec![echo()],
        LoopOptions::default(),
        user("go"),
        CancellationToken::new(),
    )
    .await;
    snapshot("invalid_arguments", &events);
}

#[tokio::test(start_paused = true)]
async fn failing_and_panicking_tools() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .tool_call("t1", "fail", json!({}))
            .tool_call("t2", "boom", json!({})),
        ScriptedTurn::new().text("Both failed."),
    ]);
    let events = run_events(
        provider,
        vec![failing(), panicking()],
        LoopOptions::default(),
        user("go"),
        CancellationToken::new(),
    )
    .await;
    snapshot("failing_tools", &events);
}

#[tokio::test(start_paused = true)]
async fn nested_child_loop() {
    let child = vec![
        ScriptedTurn::new()
            .tool_call("c1", "echo", json!({"text": "from child"}))
            .usage(7, 3),
        ScriptedTurn::new().text("Child finished.").usage(9, 2),
    ];
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .tool_call("t1", "agent", json!({"task": "help"}))
            .usage(10, 5),
        ScriptedTurn::new()
            .text("The child said it finished.")
            .usage(20, 6),
    ]);
    let events = run_events(
        provider,
        vec![child_agent(child)],
        LoopOptions::default(),
        user("delegate"),
        CancellationToken::new(),
    )
    .await;
    snapshot("nested_child_loop", &events);
    let result = check_invariants(&events);
    assert_eq!(
        result.tokens.input_tokens,
        10 + 20 + 7 + 9,
        "child tokens roll up"
    );
}

#[tokio::test(start_paused = true)]
async fn tool_timeout_and_limits() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .tool_call("t1", "slow", json!({"ms": 500}))
            .usage(100, 10),
        ScriptedTurn::new()
            .tool_call("t2", "slow", json!({"ms": 1}))
            .usage(100, 10),
    ]);
    let options = LoopOptions {
        tool_timeout_ms: Some(50),
        limits: agentloop_types::UsageLimits {
            max_total_tokens: Some(150),
            ..Default::default()
        },
        ..LoopOptions::default()
    };
    let events = run_events(
        provider,
        vec![slow("slow", false)],
        options,
        user("go"),
        CancellationToken::new(),
    )
    .await;
    snapshot("timeout_and_token_limit", &events);
}

/// The timeout counts from a call's start, not from its turn's: calls
/// queued behind `tool_concurrency` get the whole time too.
#[tokio::test(start_paused = true)]
async fn tool_timeout_counts_from_the_call_start() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .tool_call("t1", "slow", json!({"ms": 40}))
            .tool_call("t2", "slow", json!({"ms": 40}))
            .tool_call("t3", "slow", json!({"ms": 40})),
        ScriptedTurn::new().text("done"),
    ]);
    let options = LoopOptions {
        tool_timeout_ms: Some(50),
        tool_concurrency: 1,
        ..LoopOptions::default()
    };
    let events = run_events(
        provider,
        vec![slow("slow", false)],
        options,
        user("go"),
        CancellationToken::new(),
    )
    .await;
    let result = check_invariants(&events);
    let results: Vec<_> = result
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .map(|r| (r.tool_use_id.as_str(), r.is_error, r.content.as_str()))
        .collect();
    assert_eq!(
        results,
        [
            ("t1", false, "done in 40 ms"),
            ("t2", false, "done in 40 ms"),
            ("t3", false, "done in 40 ms"),
        ]
    );
}

/// Configured options the tool does not declare fail the call, not the run.
#[tokio::test(start_paused = true)]
async fn undeclared_tool_option_is_an_error_result() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("t1", "echo", json!({"text": "hi"})),
        ScriptedTurn::new().text("done"),
    ]);
    let mut configured = serde_json::Map::new();
    configured.insert("colour".into(), json!("blue"));
    let options = LoopOptions {
        tool_options: [("echo".to_owned(), configured)].into(),
        ..LoopOptions::default()
    };
    let events = run_events(
        provider,
        vec![echo()],
        options,
        user("go"),
        CancellationToken::new(),
    )
    .await;
    let result = check_invariants(&events);
    let results: Vec<_> = result
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .map(|r| (r.is_error, r.content.as_str()))
        .collect();
    assert_eq!(
        results,
        [(true, "Option colour is not an option of tool echo.")]
    );
    assert!(matches!(
        result.status,
        agentloop_types::LoopStatus::Complete { .. }
    ));
}

#[tokio::test(start_paused = true)]
async fn prefill_starts_the_committed_answer() {
    let provider = ScriptedProvider::new([ScriptedTurn::new().text("\"a\": 1}")]);
    let options = LoopOptions {
        request: RequestOptions {
            prefill_response: Some("{".into()),
            ..RequestOptions::default()
        },
        ..LoopOptions::default()
    };
    let events = run_events(
        provider,
        vec![],
        options,
        user("JSON please"),
        CancellationToken::new(),
    )
    .await;
    snapshot("prefill", &events);
    let result = check_invariants(&events);
    assert_eq!(result.final_text().as_deref(), Some("{\"a\": 1}"));

    let provider = ScriptedProvider::new([ScriptedTurn::new()]);
    let options = LoopOptions {
        request: RequestOptions {
            prefill_response: Some("{}".into()),
            ..RequestOptions::default()
        },
        ..LoopOptions::default()
    };
    let events = run_events(
        provider,
        vec![],
        options,
        user("JSON please"),
        CancellationToken::new(),
    )
    .await;
    let result = check_invariants(&events);
    assert_eq!(
        result.final_text().as_deref(),
        Some("{}"),
        "a turn with no deltas keeps the prefill"
    );
}

#[tokio::test(start_paused = true)]
async fn dropping_the_stream_cancels_running_tools_only_of_that_run() {
    use futures::StreamExt;
    let slot = Arc::new(Mutex::new(None));
    let provider = ScriptedProvider::new([ScriptedTurn::new().tool_call("t1", "hang", json!({}))]);
    let shared = CancellationToken::new();
    let deps = agentloop_engine::RunDeps::new(provider)
        .with_tools([hanging(slot.clone())])
        .with_cancel(shared.clone());
    let mut stream = agentloop_engine::run(LoopOptions::default(), user("go"), deps);
    while let Some(event) = stream.next().await {
        if matches!(
            event.kind,
            agentloop_types::EventKind::ToolStart(ToolStartEvent { .. })
        ) {
            break;
        }
    }
    let token = slot
        .lock()
        .unwrap()
        .clone()
        .expect("the hanging tool started");
    assert!(!token.is_cancelled());
    drop(stream);
    assert!(token.is_cancelled(), "dropping the run cancels its tools");
    assert!(!shared.is_cancelled(), "the caller's token is left alone");
}
