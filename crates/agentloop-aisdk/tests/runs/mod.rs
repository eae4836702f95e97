//! The runs the tests encode: each a real engine run against a scripted
//! model.
//!
//! Each test binary uses part of it.
#![allow(dead_code)]

use std::sync::Arc;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::{RunDeps, run};
use agentloop_types::{
    ApprovalPolicy, LoopEvent, LoopOptions, Message, ProviderError, ProviderErrorKind, Tool,
    ToolContext, ToolResult, ToolStream, single_result,
};
use futures::StreamExt;
use serde_json::{Value, json};

/// A tool that answers with a fixed text.
struct Weather;

impl Tool for Weather {
    fn name(&self) -> &str {
        "weather"
    }
    fn description(&self) -> &str {
        "Tells the weather in a city."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"city": {"type": "string"}}})
    }
    fn execute(self: Arc<Self>, _: Value, _: ToolContext) -> ToolStream {
        single_result(async { ToolResult::ok("Sunny, 21 °C.") })
    }
}

pub async fn events(turns: Vec<ScriptedTurn>, options: LoopOptions) -> Vec<LoopEvent> {
    let deps =
        RunDeps::new(ScriptedProvider::new(turns)).with_tools([Arc::new(Weather) as Arc<dyn Tool>]);
    run(
        options,
        vec![Message::user_text("u1", "Weather in Oslo?")],
        deps,
    )
    .collect()
    .await
}

pub fn tool_turns() -> Vec<ScriptedTurn> {
    vec![
        ScriptedTurn::new()
            .thinking("The user wants the weather.", "sig")
            .text("Let me look.")
            .tool_call("call-1", "weather", json!({"city": "Oslo"})),
        ScriptedTurn::new().text_chunks(&["It is ", "sunny."]),
    ]
}

pub fn asking() -> LoopOptions {
    let mut options = LoopOptions::default();
    options
        .approvals
        .insert("weather".to_owned(), ApprovalPolicy::Always);
    options
}

/// Every run whose chunks are a snapshot, by name.
pub async fn cases() -> Vec<(&'static str, Vec<LoopEvent>)> {
    let one_turn = LoopOptions {
        max_iterations: 1,
        ..LoopOptions::default()
    };
    vec![
        (
            "text_answer",
            events(
                vec![ScriptedTurn::new().text_chunks(&["Hello", ", Oslo."])],
                LoopOptions::default(),
            )
            .await,
        ),
        (
            "tool_call_with_thinking",
            events(tool_turns(), LoopOptions::default()).await,
        ),
        ("approval_requested", events(tool_turns(), asking()).await),
        (
            "provider_error",
            events(
                vec![ScriptedTurn::new().error(ProviderError::new(
                    ProviderErrorKind::InvalidRequest,
                    "bad model",
                ))],
                LoopOptions::default(),
            )
            .await,
        ),
        ("turn_limit", events(tool_turns(), one_turn).await),
    ]
}
