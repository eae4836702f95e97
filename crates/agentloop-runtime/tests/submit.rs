//! `ChatRuntime::submit`: each `RunInput` does to a chat what its host
//! would otherwise map by hand, on every backend.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_runtime::{ChatRuntime, RunOutcome, RuntimeError, Submitted};
use agentloop_types::{Decision, EventKind, LoopStatus, Message, RunInput, SteerStrategy, Tool};
use futures::StreamExt;
use serde_json::json;

use common::{Counter, chat, count_needs_approval, stores};

async fn outcome(submitted: Submitted) -> RunOutcome {
    match submitted {
        Submitted::Run(run) => run.outcome().await.unwrap(),
        Submitted::Idle | Submitted::Queued => panic!("expected a run"),
    }
}

#[tokio::test]
async fn start_decide_and_message_drive_a_chat_through_one_entry() {
    for (name, store, _dir) in stores().await {
        let provider = ScriptedProvider::new([
            ScriptedTurn::new().tool_call("c1", "count", json!({})),
            ScriptedTurn::new().text("Counted."),
            ScriptedTurn::new().text("Again."),
        ]);
        let counter = Counter::new("count");
        let runtime = ChatRuntime::new(store.clone(), provider)
            .with_tools([counter.clone() as Arc<dyn Tool>]);
        let chat_id = chat(
            &*store,
            &runtime,
            count_needs_approval(),
            Default::default(),
        )
        .await;

        let start = RunInput::start(Message::user_text("u1", "count"));
        let waiting = outcome(runtime.submit(&chat_id, start).await.unwrap()).await;
        assert!(
            matches!(waiting.result.status, LoopStatus::Suspended { .. }),
            "{name}"
        );
        // A message while the run waits for a person is refused, typed.
        let early = RunInput::message(Message::user_text("u2", "hurry"));
        assert!(
            matches!(
                runtime.submit(&chat_id, early).await,
                Err(RuntimeError::Suspended { .. })
            ),
            "{name}"
        );

        let decide = RunInput::Decide {
            decisions: [("c1".to_owned(), Decision::Approve { arguments: None })].into(),
        };
        let done = outcome(runtime.submit(&chat_id, decide).await.unwrap()).await;
        assert_eq!(
            done.result.final_text().as_deref(),
            Some("Counted."),
            "{name}"
        );
        assert_eq!(counter.calls.load(Ordering::SeqCst), 1, "{name}");

        // Nothing left to continue: the history ends with an answer.
        let idle = runtime
            .submit(&chat_id, RunInput::start(None))
            .await
            .unwrap();
        assert!(matches!(idle, Submitted::Idle), "{name}");

        let message = RunInput::message(Message::user_text("u3", "again"));
        let again = outcome(runtime.submit(&chat_id, message).await.unwrap()).await;
        assert_eq!(
            again.result.final_text().as_deref(),
            Some("Again."),
            "{name}"
        );
        let texts: Vec<String> = store
            .list_messages(&chat_id)
            .await
            .unwrap()
            .iter()
            .map(|m| m.message.text())
            .collect();
        assert!(!texts.iter().any(|t| t == "hurry"), "{name}: {texts:?}");
    }
}

#[tokio::test]
async fn cancel_and_stop_end_a_waiting_run_and_stop_on_an_idle_chat_does_nothing() {
    for (name, store, _dir) in stores().await {
        let provider = ScriptedProvider::new([
            ScriptedTurn::new().tool_call("c1", "count", json!({})),
            ScriptedTurn::new().tool_call("c2", "count", json!({})),
        ]);
        let counter = Counter::new("count");
        let runtime = ChatRuntime::new(store.clone(), provider)
            .with_tools([counter.clone() as Arc<dyn Tool>]);
        let chat_id = chat(
            &*store,
            &runtime,
            count_needs_approval(),
            Default::default(),
        )
        .await;
        for (i, input) in [RunInput::Cancel {}, RunInput::Stop {}]
            .into_iter()
            .enumerate()
        {
            let start = RunInput::start(Message::user_text(format!("u{i}"), "count"));
            outcome(runtime.submit(&chat_id, start).await.unwrap()).await;
            assert_eq!(runtime.pending(&chat_id).await.unwrap().len(), 1, "{name}");
            let kind = input.kind();
            let ended = outcome(runtime.submit(&chat_id, input).await.unwrap()).await;
            assert!(
                matches!(ended.result.status, LoopStatus::Cancelled),
                "{name} {kind}"
            );
            assert!(runtime.pending(&chat_id).await.unwrap().is_empty());
        }
        assert_eq!(counter.calls.load(Ordering::SeqCst), 0, "{name}");

        let stopped = runtime.submit(&chat_id, RunInput::Stop {}).await.unwrap();
        assert!(matches!(stopped, Submitted::Idle), "{name}");
        assert!(
            matches!(
                runtime.submit(&chat_id, RunInput::Cancel {}).await,
                Err(RuntimeError::NotSuspended { .. })
            ),
            "{name}"
        );
    }
}

#[tokio::test]
async fn a_message_to_a_chat_whose_run_goes_on_is_taken_at_its_next_step() {
    for (name, store, _dir) in stores().await {
        let provider = ScriptedProvider::new([
            ScriptedTurn::new().tool_call("c1", "count", json!({})),
            ScriptedTurn::new().text("Counted, briefly."),
        ]);
        let counter = Counter::new("count");
        let runtime = ChatRuntime::new(store.clone(), provider.clone())
            .with_tools([counter.clone() as Arc<dyn Tool>]);
        let chat_id = chat(&*store, &runtime, Default::default(), Default::default()).await;
        let start = RunInput::start(Message::user_text("u1", "count"));
        let mut run = runtime
            .submit(&chat_id, start)
            .await
            .unwrap()
            .into_run()
            .unwrap();
        // The run goes on: its tool call has started.
        loop {
            let event = run.next().await.unwrap().unwrap();
            if matches!(event.kind, EventKind::ToolStart(_)) {
                break;
            }
        }
        let refused = RunInput::Message {
            message: Message::user_text("x1", "not now"),
            strategy: Some(SteerStrategy::Reject),
        };
        assert!(
            matches!(
                runtime.submit(&chat_id, refused).await,
                Err(RuntimeError::RunInProgress { .. })
            ),
            "{name}"
        );
        let interrupt = RunInput::Message {
            message: Message::user_text("x2", "stop"),
            strategy: Some(SteerStrategy::Interrupt),
        };
        assert!(
            matches!(
                runtime.submit(&chat_id, interrupt).await,
                Err(RuntimeError::UnsupportedInput { .. })
            ),
            "{name}"
        );
        let steer = RunInput::message(Message::user_text("s1", "be brief"));
        assert!(
            matches!(
                runtime.submit(&chat_id, steer).await.unwrap(),
                Submitted::Queued
            ),
            "{name}"
        );
        assert_eq!(runtime.queued(&chat_id).await.unwrap().len(), 1, "{name}");
        let done = run.outcome().await.unwrap();
        assert_eq!(
            done.result.final_text().as_deref(),
            Some("Counted, briefly."),
            "{name}"
        );
        let second = &provider.requests()[1].messages;
        assert_eq!(second[second.len() - 1].id, "s1", "{name}");
        assert!(
            second[second.len() - 2].tool_results().next().is_some(),
            "{name}"
        );
        assert!(
            runtime.queued(&chat_id).await.unwrap().is_empty(),
            "{name}: delivered"
        );
        let ids: Vec<String> = store
            .list_messages(&chat_id)
            .await
            .unwrap()
            .into_iter()
            .map(|m| m.message.id)
            .collect();
        assert_eq!(
            ids.iter().filter(|id| *id == "s1").count(),
            1,
            "{name}: {ids:?}"
        );
        assert!(!ids.iter().any(|id| id == "x1" || id == "x2"), "{name}");
    }
}
