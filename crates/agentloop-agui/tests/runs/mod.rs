//! The runs both tests encode: each a real engine run against a scripted
//! model.

use std::sync::Arc;

use agentloop_agui::{AgUiEvent, Encoder, FrontendTool, FrontendToolSpec};
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

/// One named run's stored events.
pub struct Case {
    pub name: &'static str,
    pub events: Vec<LoopEvent>,
}

async fn events(turns: Vec<ScriptedTurn>, options: LoopOptions) -> Vec<LoopEvent> {
    let chart = FrontendTool::new(FrontendToolSpec {
        name: "show_chart".to_owned(),
        description: "Shows a chart to the user.".to_owned(),
        parameters: Some(json!({"type": "object", "properties": {"city": {"type": "string"}}})),
    });
    let deps = RunDeps::new(ScriptedProvider::new(turns))
        .with_tools([Arc::new(Weather) as Arc<dyn Tool>, Arc::new(chart)]);
    run(
        options,
        vec![Message::user_text("u1", "Weather in Oslo?")],
        deps,
    )
    .collect()
    .await
}

/// Every run the tests encode.
pub async fn cases() -> Vec<Case> {
    let tool_turns = || {
        vec![
            ScriptedTurn::new()
                .thinking("The user wants the weather.", "sig")
                .text("Let me look.")
                .tool_call("call-1", "weather", json!({"city": "Oslo"})),
            ScriptedTurn::new().text_chunks(&["It is ", "sunny."]),
        ]
    };
    let mut asking = LoopOptions::default();
    asking
        .approvals
        .insert("weather".to_owned(), ApprovalPolicy::Always);
    let one_turn = LoopOptions {
        max_iterations: 1,
        ..LoopOptions::default()
    };
    vec![
        Case {
            name: "text_answer",
            events: events(
                vec![ScriptedTurn::new().text_chunks(&["Hello", ", Oslo."])],
                LoopOptions::default(),
            )
            .await,
        },
        Case {
            name: "tool_call_with_thinking",
            events: events(tool_turns(), LoopOptions::default()).await,
        },
        Case {
            name: "approval_interrupts",
            events: events(tool_turns(), asking).await,
        },
        Case {
            name: "provider_error",
            events: events(
                vec![ScriptedTurn::new().error(ProviderError::new(
                    ProviderErrorKind::InvalidRequest,
                    "bad model",
                ))],
                LoopOptions::default(),
            )
            .await,
        },
        Case {
            // The client's own tool: the run waits on its call, and the
            // AG-UI run ends `success`, leaving the call to the client.
            name: "frontend_tool",
            events: events(
                vec![ScriptedTurn::new().tool_call(
                    "call-2",
                    "show_chart",
                    json!({"city": "Oslo"}),
                )],
                LoopOptions::default(),
            )
            .await,
        },
        Case {
            name: "turn_limit",
            events: events(tool_turns(), one_turn).await,
        },
    ]
}

/// `events` as one AG-UI run of a client that runs `show_chart` itself
/// and shares a state of its own.
pub fn encode(events: &[LoopEvent]) -> Vec<AgUiEvent> {
    let mut encoder = Encoder::new("thread-1", "run-1")
        .with_frontend_tools(["show_chart".to_owned()])
        .with_state(Some(json!({"theme": "dark"})));
    let mut out = encoder.start();
    for event in events {
        out.extend(encoder.encode(event));
    }
    out.extend(encoder.end());
    out
}
