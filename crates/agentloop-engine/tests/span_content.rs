//! Content (prompts, completions, tool arguments and results) reaches spans
//! only when asked for. In a file of its own: the switch is process-wide.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::{RunDeps, collect, run};
use agentloop_types::{LoopOptions, Message};
use common::spans::{Layer, Spans};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;

#[tokio::test]
async fn content_is_in_spans_only_when_asked_for() {
    agentloop_engine::telemetry::set_capture_content(true);
    let spans = Arc::new(Spans::default());
    let subscriber = tracing_subscriber::registry().with(Layer(spans.clone()));
    let _guard = tracing::subscriber::set_default(subscriber);
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("t1", "echo", json!({"text": "secret plan"})),
        ScriptedTurn::new().text("done"),
    ]);
    let deps = RunDeps::new(provider).with_tools([common::echo()]);
    let result = collect(run(
        LoopOptions::default(),
        vec![Message::user_text("u1", "the prompt")],
        deps,
    ))
    .await;
    assert_eq!(result.status.name(), "complete");
    let spans = spans.0.lock().unwrap().clone();
    let tool = spans.values().find(|s| s.name == "execute_tool").unwrap();
    assert!(tool.fields["gen_ai.tool.call.arguments"].contains("secret plan"));
    assert_eq!(tool.fields["gen_ai.tool.call.result"], "secret plan");
    let first = spans
        .values()
        .find(|s| s.name == "agentloop.model_turn" && s.fields["iteration"] == "1")
        .unwrap();
    assert!(first.fields["gen_ai.input.messages"].contains("the prompt"));
    assert!(first.fields["gen_ai.output.messages"].contains("secret plan"));
}
