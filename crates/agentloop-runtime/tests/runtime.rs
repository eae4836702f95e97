//! The runtime against the scripted provider, on memory and SQLite.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_runtime::{ChatRuntime, ChatSettings, LoopSettings, ProjectSettings, RuntimeError};
use agentloop_storage::model::RunStatus;
use agentloop_types::{
    LoopStatus, Message, Role, Tool, ToolContext, ToolResult, ToolResultBlock, ToolStream,
    single_result,
};
use serde_json::{Value, json};

use common::Finish;
use common::{Counter, chat, count_needs_approval, drain, stores};

#[tokio::test]
async fn send_persists_messages_totals_and_events() {
    for (name, store, _dir) in stores().await {
        let counter = Counter::new("count");
        let provider = ScriptedProvider::new([
            ScriptedTurn::new()
                .text("Counting.")
                .tool_call("t1", "count", json!({}))
                .usage(10, 2),
            ScriptedTurn::new().text("Done.").usage(20, 3),
        ]);
        let runtime = ChatRuntime::new(store.clone(), provider.clone())
            .with_tools([counter.clone() as Arc<dyn Tool>]);
        let project = ProjectSettings {
            loop_settings: LoopSettings {
                model: Some("project-model".into()),
                system_prompt: Some("Be brief.".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let chat_settings = ChatSettings {
            loop_settings: LoopSettings {
                model: Some("chat-model".into()),
                ..Default::default()
            },
        };
        let chat_id = chat(&*store, &runtime, project, chat_settings).await;
        let run = runtime
            .send(&chat_id, Message::user_text("u1", "count"))
            .await
            .unwrap();
        let (events, result) = drain(run).await;
        let seen: Vec<&str> = events.iter().map(|e| e.kind.name()).collect();
        assert!(
            matches!(result.status, LoopStatus::Complete { .. }),
            "{name}"
        );
        let stored: Vec<Message> = store
            .list_messages(&chat_id)
            .await
            .unwrap()
            .into_iter()
            .map(|m| m.message)
            .collect();
        assert_eq!(stored, result.messages, "{name}");
        assert_eq!(stored.len(), 4);
        assert_eq!(counter.calls.load(Ordering::SeqCst), 1);
        let totals = store.get_chat(&chat_id).await.unwrap().totals;
        assert_eq!(totals, result.tokens);
        assert_eq!(totals.input_tokens, 30);
        let request = &provider.requests()[0];
        assert_eq!(request.options.model, "chat-model");
        assert_eq!(request.options.system_prompt.as_deref(), Some("Be brief."));
        let runs = store.list_runs(&chat_id).await.unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].status, RunStatus::Completed);
        assert_eq!(runs[0].lease_owner, None);
        let log = store.list_events(&runs[0].id, None, 10_000).await.unwrap();
        let names: Vec<&str> = log.iter().map(|e| e.kind.name()).collect();
        assert_eq!(names, seen, "{name}: every event is in the log");
        assert_eq!(names.last(), Some(&"finished"));

        // A second message keeps the history.
        let provider2 = ScriptedProvider::new([ScriptedTurn::new().text("Again.").usage(1, 1)]);
        let runtime2 = ChatRuntime::new(store.clone(), provider2.clone());
        runtime2
            .send(&chat_id, Message::user_text("u2", "again"))
            .finish()
            .await
            .unwrap();
        assert_eq!(provider2.requests()[0].messages.len(), 5);
        assert_eq!(store.list_messages(&chat_id).await.unwrap().len(), 6);
    }
}

struct AskUser;

impl Tool for AskUser {
    fn name(&self) -> &str {
        "ask"
    }
    fn description(&self) -> &str {
        "Asks the user."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn execute(self: Arc<Self>, _: Value, _: ToolContext) -> ToolStream {
        single_result(async { ToolResult::suspend("What colour?") })
    }
}

fn answer(id: &str, text: &str) -> agentloop_types::Decisions {
    [(
        id.to_owned(),
        agentloop_types::Decision::Answer { text: text.into() },
    )]
    .into()
}

#[tokio::test]
async fn suspended_run_is_stored_and_resumed() {
    for (name, store, _dir) in stores().await {
        let counter = Counter::new("count");
        let provider = ScriptedProvider::new([
            ScriptedTurn::new()
                .tool_call("c1", "count", json!({}))
                .tool_call("a1", "ask", json!({}))
                .usage(5, 1),
            ScriptedTurn::new().text("Blue it is.").usage(7, 1),
        ]);
        let runtime = ChatRuntime::new(store.clone(), provider.clone())
            .with_tools([counter.clone() as Arc<dyn Tool>, Arc::new(AskUser)]);
        let chat_id = chat(&*store, &runtime, Default::default(), Default::default()).await;
        let first = runtime
            .send(&chat_id, Message::user_text("u1", "paint"))
            .finish()
            .await
            .unwrap();
        assert!(
            matches!(first.result.status, LoopStatus::Suspended { .. }),
            "{name}"
        );
        let run = store.get_run(&first.run_id).await.unwrap();
        assert_eq!(run.status, RunStatus::Suspended);
        assert_eq!(run.pending_tool_call.as_ref().unwrap().id, "a1");
        let busy = runtime
            .send(&chat_id, Message::user_text("u2", "hello?"))
            .finish()
            .await
            .unwrap_err();
        assert!(matches!(busy, RuntimeError::Suspended { .. }));

        let pending = runtime.pending(&chat_id).await.unwrap();
        assert_eq!(pending.len(), 1, "{name}");
        assert_eq!(pending[0].call.id, "a1");
        assert!(
            run.lease_owner.is_none(),
            "{name}: a waiting run holds no lease"
        );
        let wrong = runtime
            .resume(&chat_id, answer("zz", "blue"))
            .finish()
            .await
            .unwrap_err();
        assert!(
            matches!(wrong, RuntimeError::Decisions(_)),
            "{name}: {wrong:?}"
        );
        let done = runtime
            .resume(&chat_id, answer("a1", "blue"))
            .finish()
            .await
            .unwrap();
        assert!(matches!(done.result.status, LoopStatus::Complete { .. }));
        assert_eq!(
            counter.calls.load(Ordering::SeqCst),
            1,
            "count is not re-run"
        );
        let messages = store.list_messages(&chat_id).await.unwrap();
        let results: Vec<&ToolResultBlock> = messages[2].message.tool_results().collect();
        assert_eq!(results.len(), 2);
        assert_eq!(results[0].content, "count call 1");
        assert_eq!(results[1].content, "blue");
        assert_eq!(messages.last().unwrap().message.text(), "Blue it is.");
        assert_eq!(
            store.get_run(&first.run_id).await.unwrap().status,
            RunStatus::Completed
        );
        let err = runtime
            .resume(&chat_id, answer("a1", "red"))
            .finish()
            .await
            .unwrap_err();
        assert!(matches!(err, RuntimeError::NotSuspended { .. }));
        assert!(runtime.pending(&chat_id).await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn resuming_a_run_whose_stored_state_is_unreadable_fails_cleanly() {
    for (name, store, _dir) in stores().await {
        let provider = ScriptedProvider::new([ScriptedTurn::new()
            .tool_call("a1", "ask", json!({}))
            .usage(1, 1)]);
        let runtime = ChatRuntime::new(store.clone(), provider)
            .with_tools([Arc::new(AskUser) as Arc<dyn Tool>]);
        let chat_id = chat(&*store, &runtime, Default::default(), Default::default()).await;
        let first = runtime
            .send(&chat_id, Message::user_text("u1", "paint"))
            .finish()
            .await
            .unwrap();
        let mut run = store.get_run(&first.run_id).await.unwrap();
        run.state = None;
        store.update_run(&run).await.unwrap();
        let before = store.list_messages(&chat_id).await.unwrap().len();
        let err = runtime
            .resume(&chat_id, answer("a1", "blue"))
            .finish()
            .await
            .unwrap_err();
        assert!(
            matches!(&err, RuntimeError::CorruptRun { run_id, message }
                if *run_id == first.run_id && message.contains("without the state")),
            "{name}: {err:?}"
        );
        assert_eq!(
            store.list_messages(&chat_id).await.unwrap().len(),
            before,
            "{name}: nothing is stored"
        );
        assert_eq!(
            store.get_run(&first.run_id).await.unwrap().status,
            RunStatus::Suspended,
            "{name}"
        );
    }
}

#[tokio::test]
async fn resend_and_checkpoints() {
    for (name, store, _dir) in stores().await {
        let provider = ScriptedProvider::new([
            ScriptedTurn::new().text("one").usage(1, 1),
            ScriptedTurn::new().text("two").usage(2, 1),
            ScriptedTurn::new().text("two again").usage(4, 1),
        ]);
        let runtime = ChatRuntime::new(store.clone(), provider.clone());
        let chat_id = chat(&*store, &runtime, Default::default(), Default::default()).await;
        runtime
            .send(&chat_id, Message::user_text("u1", "first"))
            .finish()
            .await
            .unwrap();
        let cp = runtime
            .create_checkpoint(&chat_id, "after-one")
            .await
            .unwrap();
        assert_eq!(cp.totals.input_tokens, 1);
        runtime
            .send(&chat_id, Message::user_text("u2", "second"))
            .finish()
            .await
            .unwrap();
        assert_eq!(store.list_messages(&chat_id).await.unwrap().len(), 4);

        let again = runtime.resend_from(&chat_id, "u2").finish().await.unwrap();
        let texts: Vec<String> = store
            .list_messages(&chat_id)
            .await
            .unwrap()
            .iter()
            .map(|m| m.message.text())
            .collect();
        assert_eq!(texts, ["first", "one", "second", "two again"], "{name}");
        assert_eq!(again.result.messages.len(), 4);
        let not_user = store.list_messages(&chat_id).await.unwrap()[1]
            .message
            .id
            .clone();
        assert!(matches!(
            runtime.resend_from(&chat_id, &not_user).finish().await,
            Err(RuntimeError::NotResendable { .. })
        ));

        assert_eq!(runtime.list_checkpoints(&chat_id).await.unwrap().len(), 1);
        runtime.rollback(&chat_id, "after-one").await.unwrap();
        let after: Vec<String> = store
            .list_messages(&chat_id)
            .await
            .unwrap()
            .iter()
            .map(|m| m.message.text())
            .collect();
        assert_eq!(after, ["first", "one"]);
        assert_eq!(
            store.get_chat(&chat_id).await.unwrap().totals.input_tokens,
            1
        );
    }
}

#[tokio::test]
async fn minion_events_become_minion_chats() {
    use agentloop_engine::{RunDeps, RunStream, run};
    use agentloop_runtime::minion_chat_id;

    // A strategy that plays a run whose events include a child run under
    // call `m1`, as the minion tool's forwarded events look.
    struct WithChild;
    impl agentloop_engine::LoopStrategy for WithChild {
        fn name(&self) -> &str {
            "with-child"
        }
        fn run(
            &self,
            options: agentloop_types::LoopOptions,
            context: Vec<Message>,
            deps: RunDeps,
        ) -> RunStream {
            let child_provider =
                ScriptedProvider::new([ScriptedTurn::new().text("child answer").usage(3, 1)]);
            let child_tool: Arc<dyn Tool> = Arc::new(ChildRunner(child_provider));
            let provider = ScriptedProvider::new([
                ScriptedTurn::new()
                    .tool_call("m1", "minion", json!({}))
                    .usage(1, 1),
                ScriptedTurn::new().text("parent done").usage(1, 1),
            ]);
            let _ = deps;
            run(
                options,
                context,
                RunDeps::new(provider).with_tools([child_tool]),
            )
        }
    }

    for (name, store, _dir) in stores().await {
        let runtime = ChatRuntime::new(store.clone(), ScriptedProvider::new([]))
            .with_strategy(Arc::new(WithChild));
        let chat_id = chat(&*store, &runtime, Default::default(), Default::default()).await;
        let outcome = runtime
            .send(&chat_id, Message::user_text("u1", "delegate"))
            .finish()
            .await
            .unwrap();
        assert!(
            matches!(outcome.result.status, LoopStatus::Complete { .. }),
            "{name}"
        );
        let minions = store.list_minion_chats(&chat_id).await.unwrap();
        assert_eq!(minions.len(), 1, "{name}");
        assert_eq!(minions[0].id, minion_chat_id(&chat_id, "m1"));
        let link = minions[0].minion.clone().unwrap();
        assert_eq!(link.tool_use_id, "m1");
        let child = store.list_messages(&minions[0].id).await.unwrap();
        assert_eq!(child.last().unwrap().message.text(), "child answer");
        assert_eq!(child.last().unwrap().message.role, Role::Assistant);
        assert_eq!(
            store
                .get_chat(&minions[0].id)
                .await
                .unwrap()
                .totals
                .input_tokens,
            3
        );
        assert_eq!(
            store.get_chat(&chat_id).await.unwrap().totals.input_tokens,
            5
        );
        assert_eq!(store.list_messages(&chat_id).await.unwrap().len(), 4);
    }
}

/// Runs a child loop and forwards its events (path under the call).
struct ChildRunner(Arc<ScriptedProvider>);

impl Tool for ChildRunner {
    fn name(&self) -> &str {
        "minion"
    }
    fn description(&self) -> &str {
        "Runs a child loop."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn execute(self: Arc<Self>, _: Value, ctx: ToolContext) -> ToolStream {
        use agentloop_types::{ToolOutput, ToolStreamEvent};
        use futures::StreamExt;
        let stream = agentloop_engine::run(
            Default::default(),
            vec![Message::user_text("child-u1", "help")],
            agentloop_engine::RunDeps::new(self.0.clone())
                .with_run_id(format!("{}-child", ctx.tool_use_id)),
        );
        Box::pin(stream.filter_map(|event| async move {
            match event.root_result() {
                Some(result) => Some(ToolOutput::Done(ToolResult::ok(
                    result.final_text().unwrap_or_default(),
                ))),
                None => Some(ToolOutput::Event(ToolStreamEvent::ChildEvent(Box::new(
                    event,
                )))),
            }
        }))
    }
}

/// Seed 001's MockAgentLoop: records what the consumer hands it and plays a
/// fixed strategy run (agent_* events) with its own provider.
struct MockAgentLoop {
    calls: std::sync::Mutex<Vec<(agentloop_types::LoopOptions, Vec<Message>)>>,
}

impl agentloop_engine::LoopStrategy for MockAgentLoop {
    fn name(&self) -> &str {
        "mock"
    }
    fn run(
        &self,
        options: agentloop_types::LoopOptions,
        context: Vec<Message>,
        deps: agentloop_engine::RunDeps,
    ) -> agentloop_engine::RunStream {
        self.calls
            .lock()
            .unwrap()
            .push((options.clone(), context.clone()));
        let provider = ScriptedProvider::new([ScriptedTurn::new().text("mock answer").usage(2, 2)]);
        let inner = agentloop_engine::StrategyRegistry::default()
            .get(agentloop_engine::strategy::LLM_ONLY)
            .unwrap();
        inner.run(
            options,
            context,
            agentloop_engine::RunDeps { provider, ..deps },
        )
    }
}

#[tokio::test]
async fn consumer_with_a_mock_strategy() {
    for (name, store, _dir) in stores().await {
        let mock = Arc::new(MockAgentLoop {
            calls: Default::default(),
        });
        let unused = ScriptedProvider::new([]);
        let runtime = ChatRuntime::new(store.clone(), unused.clone()).with_strategy(mock.clone());
        let chat_id = chat(&*store, &runtime, Default::default(), Default::default()).await;
        let run = runtime
            .send(&chat_id, Message::user_text("u1", "hi"))
            .await
            .unwrap();
        let (events, result) = drain(run).await;
        let kinds: Vec<&str> = events.iter().map(|e| e.kind.name()).collect();
        assert_eq!(result.final_text().as_deref(), Some("mock answer"));
        assert!(
            unused.requests().is_empty(),
            "{name}: the injected strategy ran"
        );
        let calls = mock.calls.lock().unwrap().clone();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].1, vec![Message::user_text("u1", "hi")]);
        assert_eq!(calls[0].0.chat_id.as_deref(), Some(chat_id.as_str()));
        assert!(kinds.contains(&"agent_start"), "{kinds:?}");
        assert!(kinds.contains(&"agent_completion"));
        let history = store.list_messages(&chat_id).await.unwrap();
        assert_eq!(history.len(), 2);
        assert_eq!(history[1].message.text(), "mock answer");
        assert_eq!(
            store.get_chat(&chat_id).await.unwrap().totals.output_tokens,
            2
        );
    }
}

/// Project settings under which every `count` call waits for approval.
#[tokio::test]
async fn a_waiting_run_survives_a_restart_and_takes_its_decision() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("restart.db");
    let path = path.to_str().unwrap();
    let script = || {
        ScriptedProvider::new([
            ScriptedTurn::new().tool_call("c1", "count", json!({})),
            ScriptedTurn::new().text("Counted."),
        ])
    };
    let provider = script();
    let counter = Counter::new("count");
    let chat_id = {
        let store: Arc<dyn agentloop_storage::Store> =
            Arc::new(agentloop_storage::SqliteStore::connect(path).await.unwrap());
        let runtime = ChatRuntime::new(store.clone(), provider.clone())
            .with_tools([counter.clone() as Arc<dyn Tool>]);
        let chat_id = chat(
            &*store,
            &runtime,
            count_needs_approval(),
            Default::default(),
        )
        .await;
        let first = runtime
            .send(&chat_id, Message::user_text("u1", "count"))
            .finish()
            .await
            .unwrap();
        assert!(matches!(first.result.status, LoopStatus::Suspended { .. }));
        let run = store.get_run(&first.run_id).await.unwrap();
        assert_eq!(run.status, RunStatus::Suspended);
        assert_eq!(run.lease_owner, None, "a waiting run holds no lease");
        chat_id
    };
    assert_eq!(counter.calls.load(Ordering::SeqCst), 0);

    // A new process: a new store over the same file, a new runtime.
    let store: Arc<dyn agentloop_storage::Store> =
        Arc::new(agentloop_storage::SqliteStore::connect(path).await.unwrap());
    let runtime = ChatRuntime::new(store.clone(), provider.clone())
        .with_tools([counter.clone() as Arc<dyn Tool>]);
    let pending = runtime.pending(&chat_id).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].call.id, "c1");
    let approve = [(
        "c1".to_owned(),
        agentloop_types::Decision::Approve { arguments: None },
    )];
    let done = runtime
        .resume(&chat_id, approve.into())
        .finish()
        .await
        .unwrap();
    assert_eq!(done.result.final_text().as_deref(), Some("Counted."));
    assert_eq!(counter.calls.load(Ordering::SeqCst), 1);
    let messages = store.list_messages(&chat_id).await.unwrap();
    let results: Vec<&ToolResultBlock> = messages
        .iter()
        .flat_map(|m| m.message.tool_results())
        .collect();
    assert_eq!(results.len(), 1, "one result for the one call");
}

#[tokio::test]
async fn cancelling_a_waiting_chat_closes_its_calls_and_frees_the_chat() {
    for (name, store, _dir) in stores().await {
        let provider = ScriptedProvider::new([
            ScriptedTurn::new().tool_call("c1", "count", json!({})),
            ScriptedTurn::new().text("Hello again."),
        ]);
        let counter = Counter::new("count");
        let runtime = ChatRuntime::new(store.clone(), provider.clone())
            .with_tools([counter.clone() as Arc<dyn Tool>]);
        let chat_id = chat(
            &*store,
            &runtime,
            count_needs_approval(),
            Default::default(),
        )
        .await;
        runtime
            .send(&chat_id, Message::user_text("u1", "count"))
            .finish()
            .await
            .unwrap();
        let cancelled = runtime.cancel_suspended(&chat_id).finish().await.unwrap();
        assert!(
            matches!(cancelled.result.status, LoopStatus::Cancelled),
            "{name}"
        );
        assert_eq!(counter.calls.load(Ordering::SeqCst), 0, "{name}");
        assert!(runtime.pending(&chat_id).await.unwrap().is_empty());
        let messages = store.list_messages(&chat_id).await.unwrap();
        let last = messages.last().unwrap();
        let result = last.message.tool_results().next().unwrap();
        assert!(
            result.is_error && result.content.contains("waiting"),
            "{name}"
        );
        // The chat takes a new message.
        let next = runtime
            .send(&chat_id, Message::user_text("u2", "hi"))
            .finish()
            .await
            .unwrap();
        assert_eq!(
            next.result.final_text().as_deref(),
            Some("Hello again."),
            "{name}"
        );
    }
}
