//! The driver's spans nest as the runs do: run → model turn, run → tool
//! call → child run → its model turn, with the OpenTelemetry GenAI names
//! and attributes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::{RunDeps, collect, run};
use agentloop_types::{LoopOptions, Message, ToolResult, ToolStream, single_result};
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

#[derive(Debug, Clone)]
struct Span {
    name: String,
    parent: Option<u64>,
    fields: BTreeMap<String, String>,
}

#[derive(Default)]
struct Spans(Mutex<BTreeMap<u64, Span>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

struct Layer(Arc<Spans>);

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> tracing_subscriber::Layer<S> for Layer {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut span = Span {
            name: attrs.metadata().name().to_owned(),
            parent: ctx
                .span(id)
                .and_then(|s| s.parent().map(|p| p.id().into_u64())),
            fields: BTreeMap::new(),
        };
        attrs.record(&mut Fields(&mut span.fields));
        self.0.0.lock().unwrap().insert(id.into_u64(), span);
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        if let Some(span) = self.0.0.lock().unwrap().get_mut(&id.into_u64()) {
            values.record(&mut Fields(&mut span.fields));
        }
    }
}

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
                model: "child-model".into(),
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
        model: "root-model".into(),
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
}
