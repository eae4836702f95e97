//! The driver's spans nest as the runs do: run → model turn, run → tool
//! call → child run → its model turn, with the OpenTelemetry GenAI names
//! and attributes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::{RunDeps, collect, run};
use agentloop_types::{
    LoopOptions, Message, ModelProvider, ModelRequest, ModelStream, RequestOptions, ToolResult,
    ToolStream, single_result,
};
use common::spans::{Layer, Span, Spans};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;

/// A tool that runs a child loop (as the minion tool does) and returns its
/// answer.
fn delegate() -> Arc<dyn agentloop_types::Tool> {
    common::tool("delegate", |_, context| -> ToolStream {
        single_result(async move {
            let provider = ScriptedProvider::new([ScriptedTurn::new().text("child answer")]);
            let deps = RunDeps::new(provider)
                .with_cancel(context.cancel.child_token())
                .with_run_id("child");
            let options = LoopOptions {
                request: RequestOptions {
                    model: "child-model".into(),
                    ..RequestOptions::default()
                },
                ..LoopOptions::default()
            };
            let result = collect(run(options, vec![Message::user_text("c1", "do it")], deps)).await;
            ToolResult::ok(
                result
                    .messages
                    .last()
                    .map(Message::text)
                    .unwrap_or_default(),
            )
        })
    })
}

#[tokio::test]
async fn spans_nest_as_the_runs_do() {
    let spans = Arc::new(Spans::default());
    let subscriber = tracing_subscriber::registry().with(Layer(spans.clone()));
    let _guard = tracing::subscriber::set_default(subscriber);
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("t1", "delegate", json!({})),
        ScriptedTurn::new().text("done"),
    ]);
    let deps = RunDeps::new(provider)
        .with_tools([delegate()])
        .with_run_id("root");
    let options = LoopOptions {
        request: RequestOptions {
            model: "root-model".into(),
            ..RequestOptions::default()
        },
        ..LoopOptions::default()
    };
    let result = collect(run(options, vec![Message::user_text("u1", "go")], deps)).await;
    assert_eq!(result.status.name(), "complete");

    let spans = spans.0.lock().unwrap().clone();
    let named = |name: &str| -> Vec<(u64, Span)> {
        spans
            .iter()
            .filter(|(_, s)| s.name == name)
            .map(|(id, s)| (*id, s.clone()))
            .collect()
    };
    let runs = named("invoke_agent");
    assert_eq!(runs.len(), 2, "{spans:#?}");
    let (root_id, root) = runs
        .iter()
        .find(|(_, s)| s.fields["agentloop.run_id"] == "root")
        .unwrap();
    assert_eq!(root.parent, None);
    assert_eq!(root.fields["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(root.fields["gen_ai.request.model"], "root-model");

    let tools = named("execute_tool");
    assert_eq!(tools.len(), 1);
    let (tool_id, tool) = &tools[0];
    assert_eq!(tool.parent, Some(*root_id));
    assert_eq!(tool.fields["gen_ai.tool.name"], "delegate");
    assert_eq!(tool.fields["gen_ai.tool.call.id"], "t1");
    assert!(!tool.fields.contains_key("error.type"));

    let (child_id, child) = runs
        .iter()
        .find(|(_, s)| s.fields["agentloop.run_id"] == "child")
        .unwrap();
    assert_eq!(
        child.parent,
        Some(*tool_id),
        "the child run nests under its call"
    );

    let turns = named("agentloop.model_turn");
    let under = |parent: u64| {
        turns
            .iter()
            .filter(|(_, s)| s.parent == Some(parent))
            .count()
    };
    assert_eq!(under(*root_id), 2);
    assert_eq!(under(*child_id), 1);
    // Content stays out of spans unless asked for.
    assert!(!tool.fields.contains_key("gen_ai.tool.call.arguments"));
    assert!(
        turns
            .iter()
            .all(|(_, s)| !s.fields.contains_key("gen_ai.input.messages"))
    );
}

/// A provider that notes the span it is asked to stream in.
struct SpanNoting {
    inner: Arc<ScriptedProvider>,
    spans: std::sync::Mutex<Vec<String>>,
}

impl ModelProvider for SpanNoting {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        let name = tracing::Span::current()
            .metadata()
            .map_or("none", |m| m.name());
        self.spans.lock().unwrap().push(name.to_owned());
        self.inner.stream(request)
    }
}

/// A provider's own spans (an HTTP provider's `gen_ai.request`) are children
/// of the turn that asked for them: each turn is opened inside its span.
#[tokio::test]
async fn each_turn_is_opened_in_its_span() {
    let spans = Arc::new(Spans::default());
    let subscriber = tracing_subscriber::registry().with(Layer(spans));
    let _guard = tracing::subscriber::set_default(subscriber);
    let provider = Arc::new(SpanNoting {
        inner: ScriptedProvider::new([
            ScriptedTurn::new().tool_call("t1", "delegate", json!({})),
            ScriptedTurn::new().text("done"),
        ]),
        spans: std::sync::Mutex::default(),
    });
    let deps = RunDeps::new(provider.clone()).with_tools([delegate()]);
    let result = collect(run(
        LoopOptions::default(),
        vec![Message::user_text("u1", "go")],
        deps,
    ))
    .await;
    assert_eq!(result.status.name(), "complete");
    assert_eq!(
        *provider.spans.lock().unwrap(),
        ["agentloop.model_turn", "agentloop.model_turn"]
    );
}
