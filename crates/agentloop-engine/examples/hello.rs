//! Driving the engine directly: one tool call against the scripted provider.

use std::sync::Arc;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::{RunDeps, run};
use agentloop_types::transcript::render_event;
use agentloop_types::{
    LoopOptions, Message, Tool, ToolContext, ToolResult, ToolStream, single_result,
};
use futures::StreamExt;
use serde_json::{Value, json};

struct Clock;

impl Tool for Clock {
    fn name(&self) -> &str {
        "clock"
    }
    fn description(&self) -> &str {
        "Tells the time."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn execute(self: Arc<Self>, _: Value, _: ToolContext) -> ToolStream {
        single_result(async { ToolResult::ok("12:00") })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .tool_call("t1", "clock", json!({}))
            .usage(20, 5),
        ScriptedTurn::new().text("It is noon.").usage(30, 4),
    ]);
    let deps = RunDeps::new(provider).with_tools([Arc::new(Clock) as Arc<dyn Tool>]);
    let mut events = run(
        LoopOptions::default(),
        vec![Message::user_text("u1", "Time?")],
        deps,
    );
    while let Some(event) = events.next().await {
        println!("{}", render_event(&event));
    }
}
