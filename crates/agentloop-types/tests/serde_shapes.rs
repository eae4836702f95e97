//! The JSON shapes consumers and stores depend on, pinned.

use crate::ContextCompactedEvent;
use crate::{AgentReasonEvent, FinishedEvent, StreamingChunkEvent, ToolStartEvent};
use agentloop_types::*;
use serde_json::json;

fn sample_messages() -> Vec<Message> {
    vec![
        Message::system_text("s1", "You are terse."),
        Message::new(
            "u1",
            Role::User,
            vec![
                ContentBlock::text("What is in this picture?"),
                ContentBlock::Image {
                    source: AttachmentSource::Stored { id: "att_1".into() },
                },
            ],
        ),
        Message::new(
            "a1",
            Role::Assistant,
            vec![
                ContentBlock::Thinking {
                    thinking: "Look closely.".into(),
                    signature: Some("c2lnbmF0dXJl".into()),
                },
                ContentBlock::RedactedThinking {
                    data: "opaque".into(),
                },
                ContentBlock::Text {
                    text: "A cat.".into(),
                    citations: vec![
                        json!({"type": "web_search_result_location", "url": "https://example.com"}),
                    ],
                },
                ContentBlock::Provider {
                    api: ApiKind::AnthropicMessages,
                    block: json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "cat"}}),
                },
                ContentBlock::ToolUse(ToolUseBlock {
                    id: "toolu_1".into(),
                    name: "memory".into(),
                    input: json!({"command": "view", "path": "/memories"}).into(),
                }),
            ],
        ),
        Message::new(
            "u2",
            Role::User,
            vec![ContentBlock::ToolResult(ToolResultBlock::error(
                "toolu_1",
                "No such directory",
            ))],
        ),
    ]
}

#[test]
fn messages() {
    insta::assert_json_snapshot!(sample_messages());
}

#[test]
fn messages_round_trip() {
    let messages = sample_messages();
    let json = serde_json::to_string(&messages).unwrap();
    let back: Vec<Message> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, messages);
}

#[test]
fn events_and_results() {
    let result = LoopResult {
        status: LoopStatus::Suspended {
            pending: vec![PendingCall {
                call: ToolUseBlock {
                    id: "toolu_2".into(),
                    name: "ask_user".into(),
                    input: json!({"question": "Which file?"}).into(),
                },
                path: RunPath::root(),
                wait: Wait::Question {
                    question: "Which file?".into(),
                },
            }],
            state: None,
        },
        messages: vec![Message::user_text("u1", "go")].into(),
        tokens: TokenTotals {
            input_tokens: 10,
            output_tokens: 5,
            cost: 0.25,
            ..Default::default()
        },
        stop: None,
    };
    let events = vec![
        LoopEvent {
            seq: 0,
            path: RunPath::root(),
            kind: EventKind::StreamingChunk(StreamingChunkEvent {
                delta: StreamDelta::ToolInput {
                    index: 1,
                    partial_json: "{\"q".into(),
                },
            }),
        },
        LoopEvent {
            seq: 1,
            path: RunPath::root().child("toolu_9"),
            kind: EventKind::ToolStart(ToolStartEvent {
                tool_use_id: "toolu_10".into(),
                name: "fs".into(),
                input: json!({"command": "view"}).into(),
                is_skill: false,
                depth: 2,
            }),
        },
        LoopEvent {
            seq: 2,
            path: RunPath::root(),
            kind: EventKind::AgentReason(AgentReasonEvent {
                message: "Need the file list.".into(),
                step: 1,
            }),
        },
        LoopEvent {
            seq: 3,
            path: RunPath::root(),
            kind: EventKind::Finished(FinishedEvent {
                result: Box::new(result),
            }),
        },
    ];
    insta::assert_json_snapshot!(events);
    let json = serde_json::to_string(&events).unwrap();
    let back: Vec<LoopEvent> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, events);
}

#[test]
fn run_state_has_schema_version() {
    let mut state = RunState::new("run-1", vec![Message::user_text("u1", "hi")]);
    state.phase = RunPhase::RunTools {
        result_message_id: "run-1-2".into(),
        calls: vec![ToolUseBlock {
            id: "t1".into(),
            name: "echo".into(),
            input: json!({}).into(),
        }],
    };
    let value = serde_json::to_value(&state).unwrap();
    assert_eq!(value["schema_version"], RUN_STATE_SCHEMA_VERSION);
    insta::assert_json_snapshot!(value);
}

#[test]
fn options_fill_defaults() {
    let options: LoopOptions =
        serde_json::from_value(json!({"model": "claude-sonnet-4-5"})).unwrap();
    assert_eq!(options.max_iterations, 50);
    assert_eq!(options.request.model, "claude-sonnet-4-5");
    insta::assert_json_snapshot!(LoopOptions::default());
    // The form stays flat: the request options' fields sit beside the
    // loop's, and it reads back the same. A document that still names an
    // `api` (the provider decides it now) reads too.
    let value = serde_json::to_value(LoopOptions::default()).unwrap();
    assert_eq!(
        serde_json::from_value::<LoopOptions>(value).unwrap(),
        LoopOptions::default()
    );
    let older: LoopOptions = serde_json::from_value(json!({
        "model": "gpt-4.1", "api": "openai-chat", "max_tokens": 100, "max_iterations": 3
    }))
    .unwrap();
    assert_eq!(older.request.model, "gpt-4.1");
    assert_eq!(older.request.max_tokens, 100);
    assert_eq!(older.max_iterations, 3);
}

#[test]
fn totals_add() {
    let a = TokenTotals {
        input_tokens: 1,
        output_tokens: 2,
        reasoning_tokens: 3,
        cache_creation_tokens: 4,
        cache_read_tokens: 5,
        web_search_count: 6,
        cost: 0.5,
        cost_unreliable: false,
    };
    let b = TokenTotals {
        cost_unreliable: true,
        ..a
    };
    let sum = a + b;
    assert_eq!(sum.input_tokens, 2);
    assert_eq!(sum.web_search_count, 12);
    assert_eq!(sum.cost, 1.0);
    assert!(
        sum.cost_unreliable,
        "one unreliable part makes the sum unreliable"
    );
    assert_eq!([a, b].into_iter().sum::<TokenTotals>(), sum);

    let huge = TokenTotals {
        input_tokens: u64::MAX,
        output_tokens: u64::MAX,
        ..Default::default()
    };
    let saturated = huge + huge;
    assert_eq!(
        saturated.input_tokens,
        u64::MAX,
        "absurd counts saturate instead of panicking"
    );
    assert_eq!(saturated.total_tokens(), u64::MAX);
}

#[test]
fn context_compacted_and_compaction_options_shapes() {
    let event = EventKind::ContextCompacted(ContextCompactedEvent {
        strategy: agentloop_types::CompactionStrategy::DropOldest,
        tokens_before: 900,
        tokens_after: 400,
        messages_compacted: 6,
    });
    let value = serde_json::to_value(&event).unwrap();
    assert_eq!(
        value,
        json!({
            "type": "context_compacted",
            "strategy": "drop_oldest",
            "tokens_before": 900,
            "tokens_after": 400,
            "messages_compacted": 6,
        })
    );
    assert_eq!(event.name(), "context_compacted");
    let options: agentloop_types::LoopOptions = serde_json::from_value(json!({
        "context_window": 200000,
        "compaction": {"strategy": "summarise"},
    }))
    .unwrap();
    assert_eq!(options.context_window, Some(200_000));
    assert_eq!(
        options.compaction.strategy,
        agentloop_types::CompactionStrategy::Summarise
    );
    assert_eq!(options.compaction.threshold, 0.8);
    assert_eq!(options.compaction.keep_last_turns, 2);
    assert_eq!(
        agentloop_types::LoopOptions::default().compaction.strategy,
        agentloop_types::CompactionStrategy::None
    );
}

#[test]
fn a_stopped_run_carries_who_stopped_it_flat_in_its_result() {
    let result = LoopResult {
        status: LoopStatus::Complete {
            return_value: None,
            output: None,
        },
        messages: vec![Message::user_text("u1", "go")].into(),
        tokens: TokenTotals::default(),
        stop: Some(RunStop {
            stopped_by: "workflow_complete".into(),
            stop_message: "stopped because its task was marked done".into(),
        }),
    };
    let value = serde_json::to_value(&result).unwrap();
    assert_eq!(value["status"], "complete");
    assert_eq!(value["stopped_by"], "workflow_complete");
    assert_eq!(
        value["stop_message"],
        "stopped because its task was marked done"
    );
    let back: LoopResult = serde_json::from_value(value).unwrap();
    assert_eq!(back, result);
    // A loop that ended on its own says nothing of a stop.
    let own = LoopResult {
        stop: None,
        ..result
    };
    let value = serde_json::to_value(&own).unwrap();
    assert!(value.get("stopped_by").is_none(), "{value}");
    assert_eq!(serde_json::from_value::<LoopResult>(value).unwrap(), own);
}
