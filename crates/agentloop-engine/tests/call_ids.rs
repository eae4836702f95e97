//! A provider that reuses a tool-call id — twice in one turn, or an id an
//! earlier turn of the history has — never leaves a history that fails
//! validation: the reused id is renamed before the turn is committed, and
//! the call, its result and every later request agree on the new id.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::strategy::{LoopStrategy, ToolFirstStrategy};
use agentloop_engine::{RunDeps, collect};
use agentloop_types::{
    CancellationToken, Decision, LoopOptions, LoopResult, LoopStatus, Message, RunState,
    validate_history,
};
use common::*;
use serde_json::json;

/// `(id, text)` pairs: a call's id and input text, or a result's.
type Pairs = Vec<(String, String)>;

/// Every call of `messages` as `(id, input text)`, and every result as
/// `(id, content)`, in order.
fn calls_and_results(messages: &[Message]) -> (Pairs, Pairs) {
    let calls = messages
        .iter()
        .flat_map(|m| m.tool_uses())
        .map(|c| {
            let text = c.input.value()["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            (c.id.clone(), text)
        })
        .collect();
    let results = messages
        .iter()
        .flat_map(|m| m.tool_results())
        .map(|r| (r.tool_use_id.clone(), r.content.clone()))
        .collect();
    (calls, results)
}

fn pairs(items: &[(&str, &str)]) -> Pairs {
    items
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

fn echo_call(turn: ScriptedTurn, id: &str, text: &str) -> ScriptedTurn {
    turn.tool_call(id, "echo", json!({ "text": text }))
}

async fn run_chat(
    provider: &Arc<ScriptedProvider>,
    context: Vec<Message>,
    cancel: CancellationToken,
) -> LoopResult {
    let events = run_events(
        provider.clone(),
        vec![echo()],
        LoopOptions::default(),
        context,
        cancel,
    )
    .await;
    check_invariants(&events)
}

#[tokio::test(start_paused = true)]
async fn two_calls_sharing_an_id_in_one_turn_each_keep_their_own_result() {
    let provider = ScriptedProvider::new([
        echo_call(echo_call(ScriptedTurn::new(), "w1", "a"), "w1", "b"),
        ScriptedTurn::new().text("Both echoed."),
    ]);
    let result = run_chat(&provider, user("go"), CancellationToken::new()).await;
    assert!(matches!(result.status, LoopStatus::Complete { .. }));
    let (calls, results) = calls_and_results(&result.messages);
    assert_eq!(calls, pairs(&[("w1", "a"), ("w1_2", "b")]));
    assert_eq!(results, pairs(&[("w1", "a"), ("w1_2", "b")]));
    // The provider is sent the renamed call with its result.
    let sent = &provider.requests()[1].messages;
    validate_history(sent, false).expect("the second request is valid");
    assert_eq!(calls_and_results(sent), (calls, results));
}

#[tokio::test(start_paused = true)]
async fn an_id_reused_from_an_earlier_turn_of_a_stored_chat_is_renamed() {
    let provider = ScriptedProvider::new([
        echo_call(ScriptedTurn::new(), "w1", "first"),
        ScriptedTurn::new().text("One."),
        // The next message of the same chat: the provider starts its ids
        // over, and reuses one within the turn as well.
        echo_call(
            echo_call(ScriptedTurn::new(), "w1", "second"),
            "w1_2",
            "third",
        ),
        ScriptedTurn::new().text("Two."),
        echo_call(ScriptedTurn::new(), "w1", "fourth"),
        ScriptedTurn::new().text("Three."),
    ]);
    let mut history = run_chat(&provider, user("one"), CancellationToken::new())
        .await
        .messages
        .into_vec();
    for (n, text) in [(2, "two"), (3, "three")] {
        history.push(Message::user_text(format!("u{n}"), text));
        let result = run_chat(&provider, history, CancellationToken::new()).await;
        assert!(
            matches!(result.status, LoopStatus::Complete { .. }),
            "message {n}: {:?}",
            result.status
        );
        history = result.messages.into_vec();
    }
    let (calls, results) = calls_and_results(&history);
    // The turn's own `w1_2` keeps its id; the renamed `w1` avoids it.
    let expected = pairs(&[
        ("w1", "first"),
        ("w1_3", "second"),
        ("w1_2", "third"),
        ("w1_4", "fourth"),
    ]);
    assert_eq!(calls, expected);
    assert_eq!(results, expected);
    assert_eq!(history.last().unwrap().text(), "Three.");
}

#[tokio::test(start_paused = true)]
async fn a_suspended_run_renames_an_id_its_stored_state_already_holds() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("w1", "write", json!({"path": "a.txt"})),
        ScriptedTurn::new().tool_call("w1", "write", json!({"path": "b.txt"})),
        ScriptedTurn::new().text("Written twice."),
    ]);
    let (write, seen) = writer();
    let options = LoopOptions::default();
    let events = run_events(
        provider.clone(),
        vec![write.clone()],
        options.clone(),
        user("go"),
        CancellationToken::new(),
    )
    .await;
    let (pending, state) = suspension(&check_invariants(&events));
    assert_eq!(pending[0].call.id, "w1");
    // The state goes through storage between the two halves.
    let state: RunState = serde_json::from_str(&serde_json::to_string(&state).unwrap()).unwrap();
    let approve = || Decision::Approve { arguments: None };
    let events = decide_events(
        provider.clone(),
        vec![write.clone()],
        options.clone(),
        state,
        [("w1".to_owned(), approve())].into_iter().collect(),
    )
    .await;
    let (pending, state) = suspension(&check_invariants(&events));
    assert_eq!(
        pending[0].call.id, "w1_2",
        "the second turn's call is renamed"
    );
    let events = decide_events(
        provider.clone(),
        vec![write],
        options,
        state,
        [("w1_2".to_owned(), approve())].into_iter().collect(),
    )
    .await;
    let done = check_invariants(&events);
    assert_eq!(done.final_text().as_deref(), Some("Written twice."));
    assert_eq!(
        *seen.lock().unwrap(),
        vec![json!({"path": "a.txt"}), json!({"path": "b.txt"})]
    );
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_turn_that_reused_an_id_is_committed_renamed() {
    let provider =
        ScriptedProvider::new([
            echo_call(echo_call(ScriptedTurn::new(), "w1", "a"), "w1", "b").hang(),
        ]);
    let cancel = CancellationToken::new();
    cancel_after(&cancel, 50);
    let result = run_chat(&provider, user("go"), cancel).await;
    assert!(matches!(result.status, LoopStatus::Cancelled));
    let (calls, results) = calls_and_results(&result.messages);
    assert_eq!(calls, pairs(&[("w1", "a"), ("w1_2", "b")]));
    let answered: Vec<&str> = results.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(answered, ["w1", "w1_2"]);
}

#[tokio::test(start_paused = true)]
async fn another_strategy_renames_through_the_same_core() {
    let provider = ScriptedProvider::new([
        echo_call(echo_call(ScriptedTurn::new(), "w1", "a"), "w1", "b"),
        ScriptedTurn::new().text("Done."),
        ScriptedTurn::new().text("Done."),
    ]);
    let deps = RunDeps::new(provider.clone())
        .with_tools(vec![echo()])
        .with_run_id("run");
    let stream = ToolFirstStrategy::default().run(LoopOptions::default(), user("go"), deps);
    let result = collect(stream).await;
    validate_history(&result.messages, false).expect("a valid history");
    let (calls, _) = calls_and_results(&result.messages);
    let ids: Vec<&str> = calls.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["w1", "w1_2"]);
}
