//! The stream assembler: deltas applied one by one give the same render
//! groups as the finished message, and protocol violations are errors.

use agentloop_types::*;
use serde_json::json;

fn deltas() -> Vec<StreamDelta> {
    use StreamDelta::*;
    vec![
        BlockStart {
            index: 0,
            block: agentloop_types::BlockStart::Thinking,
        },
        Thinking {
            index: 0,
            thinking: "Let me ".into(),
        },
        Thinking {
            index: 0,
            thinking: "think.".into(),
        },
        Signature {
            index: 0,
            signature: "sig".into(),
        },
        BlockStop { index: 0 },
        BlockStart {
            index: 1,
            block: agentloop_types::BlockStart::Text,
        },
        Text {
            index: 1,
            text: "Searching".into(),
        },
        Citation {
            index: 1,
            citation: json!({"url": "https://example.com"}),
        },
        Text {
            index: 1,
            text: " now.".into(),
        },
        BlockStop { index: 1 },
        BlockStart {
            index: 2,
            block: agentloop_types::BlockStart::Provider {
                api: ApiKind::AnthropicMessages,
                block: json!({"type": "web_search_tool_result", "content": []}),
            },
        },
        BlockStart {
            index: 3,
            block: agentloop_types::BlockStart::ToolUse {
                id: "t1".into(),
                name: "fs".into(),
            },
        },
        ToolInput {
            index: 3,
            partial_json: "".into(),
        },
        ToolInput {
            index: 3,
            partial_json: " {\"path\": ".into(),
        },
        ToolInput {
            index: 3,
            partial_json: "\"/a\"} ".into(),
        },
        BlockStop { index: 3 },
        // A tool call whose stream is cut: never stopped, arguments invalid.
        BlockStart {
            index: 5,
            block: agentloop_types::BlockStart::ToolUse {
                id: "t2".into(),
                name: "fs".into(),
            },
        },
        ToolInput {
            index: 5,
            partial_json: "{\"pa".into(),
        },
        BlockStart {
            index: 6,
            block: agentloop_types::BlockStart::Text,
        },
        Text {
            index: 6,
            text: "Done".into(),
        },
    ]
}

#[test]
fn streamed_groups_equal_final_message_groups() {
    let mut assembler = StreamAssembler::new();
    for delta in deltas() {
        assembler.apply(&delta).unwrap();
    }
    // Close the cut tool call so its rendering shows the final form too.
    assembler
        .apply(&StreamDelta::BlockStop { index: 5 })
        .unwrap();
    let streamed = assembler.groups();
    let content = assembler.finish();
    assert_eq!(streamed, render_groups(&content));
    insta::assert_json_snapshot!(content);
}

#[test]
fn every_prefix_renders_one_block_per_content_block() {
    let all = deltas();
    for n in 0..=all.len() {
        let mut assembler = StreamAssembler::new();
        for delta in &all[..n] {
            assembler.apply(delta).unwrap();
        }
        let snapshot = assembler.snapshot();
        assert_eq!(
            snapshot.len(),
            assembler
                .groups()
                .iter()
                .map(|g| g.blocks.len())
                .sum::<usize>()
        );
    }
}

#[test]
fn cut_tool_arguments_are_kept_verbatim() {
    let mut assembler = StreamAssembler::new();
    for delta in deltas() {
        assembler.apply(&delta).unwrap();
    }
    let content = assembler.finish();
    let ContentBlock::ToolUse(cut) = &content[4] else {
        panic!("expected the cut tool call");
    };
    assert_eq!(cut.input, json!("{\"pa"));
    let ContentBlock::ToolUse(whole) = &content[3] else {
        panic!("expected the whole tool call");
    };
    assert_eq!(whole.input, json!({"path": "/a"}), "padded JSON parses");
}

#[test]
fn protocol_violations_are_errors() {
    let mut assembler = StreamAssembler::new();
    assert_eq!(
        assembler.apply(&StreamDelta::Text {
            index: 9,
            text: "x".into()
        }),
        Err(AssemblyError::UnknownBlock { index: 9 })
    );
    assembler
        .apply(&StreamDelta::BlockStart {
            index: 0,
            block: agentloop_types::BlockStart::Text,
        })
        .unwrap();
    assert_eq!(
        assembler.apply(&StreamDelta::BlockStart {
            index: 0,
            block: agentloop_types::BlockStart::Text
        }),
        Err(AssemblyError::DuplicateBlock { index: 0 })
    );
    assert!(matches!(
        assembler.apply(&StreamDelta::ToolInput {
            index: 0,
            partial_json: "{".into()
        }),
        Err(AssemblyError::WrongBlockKind { index: 0, .. })
    ));
}

#[test]
fn history_validator_and_repair() {
    let call = |id: &str| {
        ContentBlock::ToolUse(ToolUseBlock {
            id: id.into(),
            name: "x".into(),
            input: json!({}).into(),
        })
    };
    let result = |id: &str| ContentBlock::ToolResult(ToolResultBlock::ok(id, "ok"));
    let assistant = Message::new("a", Role::Assistant, vec![call("t1"), call("t2")]);

    let ok = vec![
        Message::user_text("u", "hi"),
        assistant.clone(),
        Message::new("r", Role::User, vec![result("t1"), result("t2")]),
    ];
    assert_eq!(validate_history(&ok, false), Ok(()));

    let swapped = vec![
        assistant.clone(),
        Message::new("r", Role::User, vec![result("t2"), result("t1")]),
    ];
    assert_eq!(
        validate_history(&swapped, false),
        Err(HistoryError::OutOfOrder {
            message_id: "r".into()
        })
    );

    let missing = vec![
        assistant.clone(),
        Message::new("r", Role::User, vec![result("t1")]),
    ];
    assert!(matches!(
        validate_history(&missing, false),
        Err(HistoryError::MissingResult { .. })
    ));

    let orphan = vec![Message::new("r", Role::User, vec![result("t9")])];
    assert!(matches!(
        validate_history(&orphan, false),
        Err(HistoryError::OrphanResult { .. })
    ));

    let trailing = vec![assistant.clone()];
    assert!(validate_history(&trailing, false).is_err());
    assert_eq!(validate_history(&trailing, true), Ok(()));

    let duplicate = vec![Message::new(
        "a",
        Role::Assistant,
        vec![call("t1"), call("t1")],
    )];
    assert!(matches!(
        validate_history(&duplicate, true),
        Err(HistoryError::DuplicateCall { .. })
    ));

    let mut n = 0;
    let repaired = close_dangling_calls(missing, "interrupted", || {
        n += 1;
        format!("new-{n}")
    });
    assert_eq!(validate_history(&repaired, false), Ok(()));
    assert_eq!(
        repaired[1].id, "r",
        "the existing result message keeps its id"
    );
    let ContentBlock::ToolResult(synthesised) = &repaired[1].content[1] else {
        panic!("expected a synthesised result");
    };
    assert!(synthesised.is_error);
    assert_eq!(synthesised.content, "interrupted");

    let repaired = close_dangling_calls(trailing, "interrupted", || "new".into());
    assert_eq!(repaired.len(), 2);
    assert_eq!(validate_history(&repaired, false), Ok(()));
}

#[test]
fn streaming_tool_arguments_render_as_they_grow_then_parsed() {
    let mut assembler = StreamAssembler::new();
    assembler
        .apply(&StreamDelta::BlockStart {
            index: 7,
            block: agentloop_types::BlockStart::ToolUse {
                id: "t".into(),
                name: "fs".into(),
            },
        })
        .unwrap();
    let shown = |assembler: &StreamAssembler| match &assembler.groups()[0].blocks[0] {
        RenderingContentBlock::ToolUse { input, .. } => input.clone(),
        other => panic!("expected a tool block, got {other:?}"),
    };
    let mut expected = String::from("{\"path\": \"");
    assembler
        .apply(&StreamDelta::ToolInput {
            index: 7,
            partial_json: expected.clone(),
        })
        .unwrap();
    for _ in 0..1_000 {
        assembler
            .apply(&StreamDelta::ToolInput {
                index: 7,
                partial_json: "ab".into(),
            })
            .unwrap();
        expected.push_str("ab");
    }
    assert_eq!(shown(&assembler), json!(expected));
    assembler
        .apply(&StreamDelta::ToolInput {
            index: 7,
            partial_json: "\"}".into(),
        })
        .unwrap();
    assembler
        .apply(&StreamDelta::BlockStop { index: 7 })
        .unwrap();
    let path = "ab".repeat(1_000);
    assert_eq!(shown(&assembler), json!({ "path": path }));
    let content = assembler.finish();
    assert_eq!(
        content,
        vec![ContentBlock::ToolUse(ToolUseBlock {
            id: "t".into(),
            name: "fs".into(),
            input: json!({ "path": path }).into(),
        })]
    );
}
