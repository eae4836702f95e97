//! Steering a run: messages its inbox holds join at the next step
//! boundary (before a model call, never while a tool runs), in order and
//! once; an interrupt stops the model call or the tool step in flight and
//! the run goes on with them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::{Interrupt, RunDeps, collect, run};
use agentloop_types::{
    EventKind, Inbox, LoopOptions, LoopStatus, Message, MessageCreatedEvent, Role, ToolResult,
    single_result,
};
use common::{check_invariants, tool, user};
use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::json;

/// An inbox the test fills; it never forgets a message (as a store that
/// has not yet marked it delivered), so the run must not take one twice.
#[derive(Default)]
struct TestInbox(Mutex<Vec<Message>>);

impl TestInbox {
    fn push(&self, id: &str, text: &str) {
        self.0.lock().unwrap().push(Message::user_text(id, text));
    }
}

impl Inbox for TestInbox {
    fn queued(&self) -> BoxFuture<'_, Result<Vec<Message>, String>> {
        let queued = self.0.lock().unwrap().clone();
        Box::pin(async move { Ok(queued) })
    }
}

fn created(events: &[agentloop_types::LoopEvent]) -> Vec<(Role, String, String)> {
    events
        .iter()
        .filter(|e| e.path.is_root())
        .filter_map(|e| match &e.kind {
            EventKind::MessageCreated(MessageCreatedEvent { message }) => {
                Some((message.role, message.id.clone(), message.text()))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn messages_sent_while_a_tool_runs_join_after_its_result_in_order_and_once() {
    let inbox = Arc::new(TestInbox::default());
    // The tool's run is when the messages arrive.
    let arriving = inbox.clone();
    let note = tool("note", move |_, _| {
        arriving.push("s1", "First.");
        arriving.push("s2", "Second.");
        single_result(async { ToolResult::ok("noted") })
    });
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("c1", "note", json!({})),
        ScriptedTurn::new().tool_call("c2", "note", json!({})),
        ScriptedTurn::new().text("Done."),
    ]);
    let deps = RunDeps::new(provider.clone())
        .with_tools([note])
        .with_inbox(inbox.clone());
    let events: Vec<_> = run(LoopOptions::default(), user("Go."), deps)
        .collect()
        .await;
    let result = check_invariants(&events);
    assert!(matches!(result.status, LoopStatus::Complete { .. }));

    let requests = provider.requests();
    assert_eq!(requests.len(), 3);
    let second: Vec<&str> = requests[1].messages.iter().map(|m| m.id.as_str()).collect();
    let n = second.len();
    assert_eq!(&second[n - 2..], ["s1", "s2"], "{second:?}");
    assert!(requests[1].messages[n - 3].tool_results().next().is_some());
    // Still queued (never marked delivered here), they are not taken again.
    let third: Vec<&str> = requests[2].messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(
        third.iter().filter(|id| **id == "s1").count(),
        1,
        "{third:?}"
    );

    let log = created(&events);
    let at = |id: &str| log.iter().position(|(_, i, _)| i == id).unwrap();
    assert_eq!(log.iter().filter(|(_, i, _)| i == "s1").count(), 1);
    assert!(at("s1") < at("s2"));
    assert_eq!(
        log[at("s1") - 1].0,
        Role::User,
        "after the tool's result: {log:?}"
    );
    assert_eq!(result.messages.iter().filter(|m| m.id == "s2").count(), 1);
}

#[tokio::test]
async fn an_interrupted_model_call_keeps_what_it_streamed_and_is_made_again() {
    let inbox = Arc::new(TestInbox::default());
    let interrupt = Interrupt::new();
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().text_chunks(&["Reading it all"]).hang(),
        ScriptedTurn::new().text("Only the README."),
    ]);
    let deps = RunDeps::new(provider.clone())
        .with_inbox(inbox.clone())
        .with_interrupt(interrupt.clone());
    let mut stream = run(LoopOptions::default(), user("Read."), deps);
    let mut events = Vec::new();
    // Once the turn has streamed its words, a message interrupts it.
    while let Some(event) = stream.next().await {
        let streamed = matches!(event.kind, EventKind::StreamingChunk(_));
        events.push(event);
        if streamed {
            inbox.push("i1", "Only the README.");
            interrupt.interrupt();
            break;
        }
    }
    events.extend(stream.collect::<Vec<_>>().await);
    let result = check_invariants(&events);
    assert!(
        matches!(result.status, LoopStatus::Complete { .. }),
        "{:?}",
        result.status
    );
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    let sent: Vec<(Role, String)> = requests[1]
        .messages
        .iter()
        .map(|m| (m.role, m.text()))
        .collect();
    assert_eq!(
        &sent[sent.len() - 2..],
        [
            (Role::Assistant, "Reading it all".to_owned()),
            (Role::User, "Only the README.".to_owned())
        ]
    );
}

#[tokio::test]
async fn an_interrupted_tool_step_answers_its_calls_and_the_run_goes_on() {
    let inbox = Arc::new(TestInbox::default());
    let interrupt = Interrupt::new();
    let (arriving, signal) = (inbox.clone(), interrupt.clone());
    // The call hangs until the interrupt stops it; the message arrives as
    // it starts.
    let hang = tool("hang", move |_, _| {
        arriving.push("t1", "Never mind that.");
        signal.interrupt();
        single_result(futures::future::pending())
    });
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("h1", "hang", json!({})),
        ScriptedTurn::new().text("Dropped it."),
    ]);
    let deps = RunDeps::new(provider.clone())
        .with_tools([hang])
        .with_inbox(inbox)
        .with_interrupt(interrupt);
    let result = collect(run(LoopOptions::default(), user("Go."), deps)).await;
    assert!(
        matches!(result.status, LoopStatus::Complete { .. }),
        "{:?}",
        result.status
    );
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    let second = &requests[1].messages;
    let answered = second[second.len() - 2]
        .tool_results()
        .next()
        .expect("the call is answered");
    assert_eq!(answered.tool_use_id, "h1");
    assert!(answered.is_error);
    assert_eq!(second[second.len() - 1].text(), "Never mind that.");
}

#[tokio::test]
async fn a_message_that_is_not_a_persons_ends_the_run_as_invalid() {
    struct Bad;
    impl Inbox for Bad {
        fn queued(&self) -> BoxFuture<'_, Result<Vec<Message>, String>> {
            Box::pin(async { Ok(vec![Message::assistant_text("x1", "I said so.")]) })
        }
    }
    let provider = ScriptedProvider::new([ScriptedTurn::new().text("Never asked.")]);
    let deps = RunDeps::new(provider.clone()).with_inbox(Arc::new(Bad));
    let result = collect(run(LoopOptions::default(), user("Go."), deps)).await;
    assert!(
        matches!(result.status, LoopStatus::Error { .. }),
        "{:?}",
        result.status
    );
    assert!(provider.requests().is_empty());
}
