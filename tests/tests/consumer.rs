//! A consumer in seed 000's shape: it persists every `message_created`,
//! keeps the streaming view from deltas and accumulates tokens, and ends up
//! with exactly what the run's result says.

use agentloop_types::{
    FinishedEvent, MessageCreatedEvent, StreamingChunkEvent, StreamingEndEvent,
    StreamingStartEvent, TokensConsumedEvent,
};
use std::sync::Arc;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::{RunDeps, run};
use agentloop_types::{
    EventKind, LoopStatus, Message, RenderingBlockGroup, StreamAssembler, TokenTotals, Tool,
    ToolContext, ToolResult, ToolStream, render_groups, single_result,
};
use futures::StreamExt;
use serde_json::{Value, json};

struct Upper;

impl Tool for Upper {
    fn name(&self) -> &str {
        "upper"
    }
    fn description(&self) -> &str {
        "Upper-cases text."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    }
    fn execute(self: Arc<Self>, input: Value, _: ToolContext) -> ToolStream {
        let text = input["text"].as_str().unwrap_or_default().to_uppercase();
        single_result(async move { ToolResult::ok(text) })
    }
}

#[tokio::test(start_paused = true)]
async fn consumer_state_matches_the_result() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .thinking("Use the tool.", "sig")
            .text_chunks(&["Upper-", "casing."])
            .tool_call("t1", "upper", json!({"text": "quiet"}))
            .usage(40, 12),
        ScriptedTurn::new()
            .text_chunks(&["It is ", "QUIET."])
            .usage(60, 4),
    ]);
    let history = vec![Message::user_text("u1", "Shout 'quiet'")];
    let deps = RunDeps::new(provider).with_tools([Arc::new(Upper) as Arc<dyn Tool>]);
    let mut stream = run(Default::default(), history.clone(), deps);

    let mut stored: Vec<Message> = history.clone();
    let mut totals = TokenTotals::default();
    let mut assembler = StreamAssembler::new();
    let mut streamed_views: Vec<Vec<RenderingBlockGroup>> = Vec::new();
    let mut result = None;
    while let Some(event) = stream.next().await {
        match event.kind {
            EventKind::StreamingStart(StreamingStartEvent { .. }) => {
                assembler = StreamAssembler::new()
            }
            EventKind::StreamingChunk(StreamingChunkEvent { delta }) => {
                assembler.apply(&delta).unwrap()
            }
            EventKind::StreamingEnd(StreamingEndEvent { .. }) => {
                streamed_views.push(assembler.groups().to_vec())
            }
            EventKind::MessageCreated(MessageCreatedEvent { message }) => stored.push(message),
            EventKind::TokensConsumed(TokensConsumedEvent { tokens }) => totals += tokens,
            EventKind::Finished(FinishedEvent { result: r }) => result = Some(r),
            _ => {}
        }
    }
    let result = result.unwrap();
    assert!(matches!(result.status, LoopStatus::Complete { .. }));
    assert_eq!(
        stored, result.messages,
        "persisted history equals the result's"
    );
    assert_eq!(totals, result.tokens);
    assert_eq!(totals.input_tokens, 100);

    let assistant: Vec<&Message> = stored
        .iter()
        .filter(|m| m.role == agentloop_types::Role::Assistant)
        .collect();
    assert_eq!(streamed_views.len(), assistant.len());
    for (view, message) in streamed_views.iter().zip(assistant) {
        assert_eq!(
            view,
            &render_groups(&message.content),
            "what streamed is what was stored"
        );
    }
    assert_eq!(result.final_text().as_deref(), Some("It is QUIET."));
}
