#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::answers::trim_thinking;
use super::*;
use agentloop_types::{
    ContentBlock, EventKind, LoopError, LoopOptions, LoopStatus, Message, RUN_STATE_SCHEMA_VERSION,
    RunState, StopReason, TokenTotals, ToolDefinition, ToolUseBlock,
};
use agentloop_types::{FinishedEvent, MessageCreatedEvent, PendingToolResultEvent};
use agentloop_types::{Role, RunPhase};
use serde_json::json;

fn thinking_turn(id: &str) -> Message {
    Message::new(
        id,
        Role::Assistant,
        vec![
            ContentBlock::Thinking {
                thinking: format!("thought {id}"),
                signature: Some("sig".into()),
            },
            ContentBlock::text(format!("answer {id}")),
        ],
    )
}

fn echo_definition() -> ToolDefinition {
    ToolDefinition {
        name: "echo".into(),
        description: "echo".into(),
        input_schema: json!({"type": "object"}).into(),
    }
}

fn call_turn(id: &str) -> Input {
    Input::ModelTurn {
        content: vec![ContentBlock::ToolUse(ToolUseBlock {
            id: id.into(),
            name: "echo".into(),
            input: json!({}).into(),
        })],
        stop_reason: StopReason::ToolUse,
        usage: TokenTotals::default(),
    }
}

fn native() -> Machine {
    Machine::new(
        RunState::new("r", vec![Message::user_text("u", "hi")]),
        LoopOptions::default(),
    )
    .with_tools([echo_definition()])
}

#[test]
fn thinking_is_trimmed_from_requests_only() {
    let messages = vec![
        Message::user_text("u1", "q1"),
        thinking_turn("a1"),
        Message::user_text("u2", "q2"),
        thinking_turn("a2"),
        Message::user_text("u3", "q3"),
    ];
    let trimmed = trim_thinking(&messages, Some(1));
    assert_eq!(trimmed[1].content.len(), 1, "old thinking left out");
    assert_eq!(trimmed[3].content.len(), 2, "latest thinking kept");
    assert_eq!(trim_thinking(&messages, None), messages);
    assert!(
        trim_thinking(&messages, Some(0))
            .iter()
            .all(|m| m.content.len() == 1)
    );

    let mut machine = Machine::new(
        RunState::new("r", messages.clone()),
        LoopOptions {
            thinking_keep_turns: Some(1),
            ..LoopOptions::default()
        },
    );
    let Step::CallModel { messages: sent, .. } = machine.step(Input::Start).unwrap().next else {
        panic!("expected a model call");
    };
    assert_eq!(sent, trimmed);
    assert_eq!(machine.state().messages, messages, "history keeps thinking");
}

#[test]
fn unsupported_schema_is_an_error_result() {
    let mut state = RunState::new("r", vec![Message::user_text("u", "hi")]);
    state.schema_version = 999;
    let mut machine = Machine::new(state, LoopOptions::default());
    let out = machine.step(Input::Start).unwrap();
    assert_eq!(out.next, Step::Done);
    assert!(matches!(
        &out.events[..],
        [EventKind::Finished(FinishedEvent { result })] if matches!(result.status, LoopStatus::Error { error: LoopError::UnsupportedState { found: 999, .. } })
    ));
}

#[test]
fn state_round_trips_through_json_mid_run() {
    let mut machine = native();
    let _ = machine.step(Input::Start).unwrap();
    let _ = machine.step(call_turn("t1")).unwrap();
    let json = serde_json::to_string(machine.state()).unwrap();
    let restored: RunState = serde_json::from_str(&json).unwrap();
    assert_eq!(&restored, machine.state());
    // A restored machine picks up where the stored one stopped: the
    // pending calls run again under the same result message id.
    let mut resumed =
        Machine::new(restored, LoopOptions::default()).with_tools([echo_definition()]);
    let out = resumed.step(Input::Start).unwrap();
    assert!(
        matches!(out.next, Step::RunTools { ref calls } if calls.len() == 1 && calls[0].answer.is_none())
    );
    assert!(matches!(
        &out.events[..],
        [EventKind::PendingToolResult(PendingToolResultEvent { message_id, .. })] if message_id == "r-2"
    ));
}

#[test]
fn interrupted_calls_are_answered_not_run_again() {
    let mut machine = native();
    let _ = machine.step(Input::Start).unwrap();
    let _ = machine.step(call_turn("t1")).unwrap();
    let mut state = machine.state().clone();
    state.interrupted_calls = vec!["t1".into()];
    let mut resumed = Machine::new(state, LoopOptions::default()).with_tools([echo_definition()]);
    let out = resumed.step(Input::Start).unwrap();
    let Step::RunTools { calls } = out.next else {
        panic!("expected the pending calls");
    };
    let answer = calls[0].answer.as_ref().expect("answered by the core");
    assert!(
        answer.is_error && answer.content.contains("interrupted"),
        "{answer:?}"
    );
}

#[test]
fn a_model_call_in_flight_is_asked_again_with_the_same_number() {
    let mut machine = native();
    let first = machine.step(Input::Start).unwrap().next;
    let mut resumed = Machine::new(machine.state().clone(), LoopOptions::default())
        .with_tools([echo_definition()]);
    assert_eq!(resumed.step(Input::Start).unwrap().next, first);
    assert!(matches!(first, Step::CallModel { iteration: 1, .. }));
}

#[test]
fn unknown_tools_and_bad_arguments_are_answered_by_the_core() {
    let mut machine = native();
    let _ = machine.step(Input::Start).unwrap();
    let out = machine
        .step(Input::ModelTurn {
            content: vec![
                ContentBlock::ToolUse(ToolUseBlock {
                    id: "t1".into(),
                    name: "teleport".into(),
                    input: json!({}).into(),
                }),
                ContentBlock::ToolUse(ToolUseBlock {
                    id: "t2".into(),
                    name: "echo".into(),
                    input: json!("{\"text\":").into(),
                }),
                ContentBlock::ToolUse(ToolUseBlock {
                    id: "t3".into(),
                    name: "echo".into(),
                    input: json!({}).into(),
                }),
            ],
            stop_reason: StopReason::ToolUse,
            usage: TokenTotals::default(),
        })
        .unwrap();
    let Step::RunTools { calls } = out.next else {
        panic!("expected tool calls");
    };
    assert_eq!(
        calls[0].answer.as_ref().unwrap().content,
        "Unknown tool: teleport. Available tools: echo."
    );
    assert!(
        calls[1]
            .answer
            .as_ref()
            .unwrap()
            .content
            .starts_with("Invalid arguments for echo")
    );
    assert!(calls[2].answer.is_none());
}

#[test]
fn timeouts_are_worded_by_the_core() {
    let mut machine = native();
    let _ = machine.step(Input::Start).unwrap();
    let _ = machine.step(call_turn("t1")).unwrap();
    let out = machine
        .step(Input::ToolsDone {
            results: vec![("t1".into(), ToolOutcome::TimedOut { after_ms: 50 })],
            child_tokens: TokenTotals::default(),
        })
        .unwrap();
    let EventKind::MessageCreated(MessageCreatedEvent { message }) = &out.events[0] else {
        panic!("expected the results message");
    };
    let result = message.tool_results().next().unwrap();
    assert_eq!(result.content, "Tool echo timed out after 50 ms.");
    assert!(result.is_error);
}

/// Out-of-phase inputs: an error result and an unchanged machine (release
/// semantics; `step` also trips a `debug_assert`).
#[test]
fn out_of_phase_inputs_are_refused_and_change_nothing() {
    let mut machine = native();
    let before = machine.state().clone();
    let refused = machine.try_step(Input::ToolsDone {
        results: Vec::new(),
        child_tokens: TokenTotals::default(),
    });
    assert_eq!(
        refused,
        Err(StepError::OutOfPhase {
            input: "tools_done",
            awaiting: Awaiting::Start
        })
    );
    assert_eq!(machine.state(), &before);

    let _ = machine.step(Input::Start).unwrap();
    assert_eq!(machine.awaiting(), Awaiting::Model);
    let before = machine.state().clone();
    for input in [
        Input::Start,
        Input::ToolsDone {
            results: Vec::new(),
            child_tokens: TokenTotals::default(),
        },
        Input::Retrieved {
            passages: Ok(Vec::new()),
        },
    ] {
        assert!(matches!(
            machine.try_step(input),
            Err(StepError::OutOfPhase {
                awaiting: Awaiting::Model,
                ..
            })
        ));
        assert_eq!(machine.state(), &before);
    }

    let _ = machine.step(call_turn("t1")).unwrap();
    assert_eq!(machine.awaiting(), Awaiting::Tools);
    assert!(matches!(
        machine.try_step(Input::ModelFailed {
            error: LoopError::IncompleteStream
        }),
        Err(StepError::OutOfPhase {
            input: "model_failed",
            awaiting: Awaiting::Tools
        })
    ));
}

#[test]
#[cfg_attr(debug_assertions, should_panic(expected = "OutOfPhase"))]
fn out_of_phase_step_asserts_in_debug_builds() {
    let mut machine = native();
    let result = machine.step(Input::ModelFailed {
        error: LoopError::IncompleteStream,
    });
    assert!(matches!(result, Err(StepError::OutOfPhase { .. })));
}

#[test]
fn a_finished_run_never_restarts() {
    let mut machine = native();
    let _ = machine.step(Input::Start).unwrap();
    let out = machine
        .step(Input::ModelTurn {
            content: vec![ContentBlock::text("done")],
            stop_reason: StopReason::EndTurn,
            usage: TokenTotals::default(),
        })
        .unwrap();
    assert_eq!(out.next, Step::Done);
    assert_eq!(machine.awaiting(), Awaiting::Nothing);
    assert!(matches!(
        machine.try_step(Input::Start),
        Err(StepError::OutOfPhase {
            awaiting: Awaiting::Nothing,
            ..
        })
    ));
    assert!(matches!(
        machine.try_step(Input::Cancelled {
            partial_turn: None,
            finished_tools: Vec::new(),
            child_tokens: TokenTotals::default(),
        }),
        Err(StepError::OutOfPhase { .. })
    ));

    // A stored finished state, resumed: refused, not restarted.
    let state = machine.state().clone();
    assert_eq!(state.phase, RunPhase::Finished);
    let mut again = Machine::new(state, LoopOptions::default());
    assert_eq!(again.awaiting(), Awaiting::Nothing);
    assert_eq!(again.step(Input::Start), Err(StepError::Finished));
    assert_eq!(again.state().messages.len(), 2, "nothing was added");
}

#[test]
fn an_unreadable_strategy_phase_is_an_error_result() {
    let mut state = RunState::new("r", vec![Message::user_text("u", "hi")]);
    state.strategy = Some(json!({"machine": {"strategy": "no-such-strategy"}}));
    let mut machine = Machine::new(state, LoopOptions::default());
    let out = machine.step(Input::Start).unwrap();
    assert_eq!(out.next, Step::Done);
    assert!(matches!(
        &out.events[..],
        [EventKind::Finished(FinishedEvent { result })] if matches!(result.status, LoopStatus::Error { error: LoopError::InvalidState { .. } })
    ));
}

#[test]
fn version_one_states_resume_as_native_runs() {
    let mut state = RunState::new("r", vec![Message::user_text("u", "hi")]);
    state.schema_version = 1;
    let mut value = serde_json::to_value(&state).unwrap();
    value.as_object_mut().unwrap().remove("strategy");
    let state: RunState = serde_json::from_value(value).unwrap();
    let mut machine = Machine::new(state, LoopOptions::default());
    assert_eq!(machine.strategy(), "native");
    assert!(matches!(
        machine.step(Input::Start).unwrap().next,
        Step::CallModel { iteration: 1, .. }
    ));
    assert_eq!(machine.state().schema_version, RUN_STATE_SCHEMA_VERSION);
}

#[test]
fn the_core_resolves_options_and_says_which_calls_run_alone() {
    use agentloop_types::{ToolOptionKind, ToolOptionSpec};
    let solo = OfferedTool {
        definition: echo_definition(),
        runs_alone: true,
        options: vec![ToolOptionSpec {
            key: "loud".into(),
            kind: ToolOptionKind::Boolean,
            default: json!(false),
            description: "shout".into(),
        }],
        approval: Default::default(),
        subagent: false,
    };
    let mut options = LoopOptions::default();
    let mut configured = serde_json::Map::new();
    configured.insert("loud".into(), json!(true));
    options.tool_options.insert("echo".into(), configured);
    let mut machine = Machine::new(
        RunState::new("r", vec![Message::user_text("u", "hi")]),
        options.clone(),
    )
    .with_tools([solo.clone()]);
    let _ = machine.step(Input::Start).unwrap();
    let Step::RunTools { calls } = machine.step(call_turn("t1")).unwrap().next else {
        panic!("expected the call");
    };
    assert!(calls[0].alone);
    assert_eq!(calls[0].answer, None);
    assert_eq!(calls[0].options["loud"], json!(true));

    options
        .tool_options
        .get_mut("echo")
        .unwrap()
        .insert("loud".into(), json!("yes"));
    let mut machine = Machine::new(
        RunState::new("r", vec![Message::user_text("u", "hi")]),
        options,
    )
    .with_tools([solo]);
    let _ = machine.step(Input::Start).unwrap();
    let Step::RunTools { calls } = machine.step(call_turn("t1")).unwrap().next else {
        panic!("expected the call");
    };
    let answer = calls[0].answer.as_ref().expect("refused by the core");
    assert!(answer.is_error && answer.content.starts_with("Option loud of tool echo"));
}

fn many_tools(n: usize) -> Vec<ToolDefinition> {
    (0..n)
        .map(|i| ToolDefinition {
            name: format!("tool_{i}"),
            description: format!("Does thing number {i}."),
            input_schema: json!({"type": "object", "properties": {"x": {"type": "string"}}}).into(),
        })
        .collect()
}

fn searching_options() -> LoopOptions {
    LoopOptions {
        context: agentloop_types::ContextOptions {
            tool_search_threshold: Some(10),
            ..Default::default()
        },
        ..LoopOptions::default()
    }
}

fn tool_names(step: &Step) -> Vec<String> {
    let Step::CallModel { tools, .. } = step else {
        panic!("expected a model call, got {step:?}");
    };
    tools.iter().map(|t| t.name.clone()).collect()
}

fn one_call(id: &str, name: &str, input: serde_json::Value) -> Input {
    Input::ModelTurn {
        content: vec![ContentBlock::ToolUse(ToolUseBlock {
            id: id.into(),
            name: name.into(),
            input: input.into(),
        })],
        stop_reason: StopReason::ToolUse,
        usage: TokenTotals::default(),
    }
}

#[test]
fn tool_search_offers_the_index_then_appends_what_it_finds() {
    let state = RunState::new("r", vec![Message::user_text("u", "hi")]);
    let mut machine = Machine::new(state, searching_options()).with_tools(many_tools(30));
    let first = machine.step(Input::Start).unwrap().next;
    assert_eq!(tool_names(&first), ["tool_search"]);
    let Step::CallModel { tools, .. } = &first else {
        unreachable!()
    };
    assert!(
        tools[0]
            .description
            .contains("- tool_29: Does thing number 29.")
    );

    let out = machine
        .step(one_call(
            "s1",
            "tool_search",
            json!({"query": "tool_7 tool_12", "limit": 2}),
        ))
        .unwrap();
    let loaded: Vec<&Vec<String>> = out
        .events
        .iter()
        .filter_map(|e| match e {
            EventKind::ContextEdited(edited) => match &edited.edit {
                agentloop_types::ContextEdit::ToolsLoaded { tools } => Some(tools),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(loaded, [&vec!["tool_7".to_owned(), "tool_12".to_owned()]]);
    let Step::RunTools { calls } = &out.next else {
        panic!("expected the search step");
    };
    let answer = calls[0].answer.as_ref().expect("the core answers a search");
    assert!(answer.content.contains("- tool_7: Does thing number 7."));
    let answer = answer.clone();
    let second = machine
        .step(Input::ToolsDone {
            results: vec![("s1".into(), ToolOutcome::Finished(answer))],
            child_tokens: TokenTotals::default(),
        })
        .unwrap()
        .next;
    assert_eq!(tool_names(&second), ["tool_search", "tool_7", "tool_12"]);

    // A tool of the index called without a search is loaded too, after
    // the others; a stored state sends the same tools when resumed.
    let out = machine
        .step(one_call("c1", "tool_3", json!({"x": "y"})))
        .unwrap();
    let Step::RunTools { calls } = &out.next else {
        panic!("expected the call to run");
    };
    assert!(calls[0].answer.is_none(), "a tool of the index runs");
    let stored: RunState =
        serde_json::from_str(&serde_json::to_string(machine.state()).unwrap()).unwrap();
    let mut resumed = Machine::new(stored, searching_options()).with_tools(many_tools(30));
    let _ = resumed.step(Input::Start).unwrap();
    let third = resumed
        .step(Input::ToolsDone {
            results: vec![(
                "c1".into(),
                ToolOutcome::Finished(agentloop_types::ToolResult::ok("done")),
            )],
            child_tokens: TokenTotals::default(),
        })
        .unwrap()
        .next;
    assert_eq!(
        tool_names(&third),
        ["tool_search", "tool_7", "tool_12", "tool_3"]
    );
}

#[test]
fn below_the_threshold_every_definition_is_sent() {
    let state = RunState::new("r", vec![Message::user_text("u", "hi")]);
    let mut machine = Machine::new(state, searching_options()).with_tools(many_tools(10));
    let first = machine.step(Input::Start).unwrap().next;
    assert_eq!(tool_names(&first).len(), 10);
    assert!(!tool_names(&first).contains(&"tool_search".to_owned()));
}

#[test]
fn a_result_over_its_budget_is_sent_short_and_read_back_whole() {
    let options = LoopOptions {
        context: agentloop_types::ContextOptions {
            tool_output_budget: Some(5),
            ..Default::default()
        },
        ..LoopOptions::default()
    };
    let state = RunState::new("r", vec![Message::user_text("u", "hi")]);
    let mut machine = Machine::new(state, options.clone()).with_tools([echo_definition()]);
    let first = machine.step(Input::Start).unwrap().next;
    assert_eq!(tool_names(&first), ["echo", "read_tool_result"]);
    let _ = machine.step(call_turn("t1")).unwrap();
    let long = "0123456789".repeat(5);
    let out = machine
        .step(Input::ToolsDone {
            results: vec![(
                "t1".into(),
                ToolOutcome::Finished(agentloop_types::ToolResult::ok(long.clone())),
            )],
            child_tokens: TokenTotals::default(),
        })
        .unwrap();
    assert!(out.events.iter().any(|e| matches!(
        e,
        EventKind::ContextEdited(edited)
            if edited.edit == agentloop_types::ContextEdit::ResultsShortened { calls: vec!["t1".into()] }
    )));
    let Step::CallModel { messages, .. } = &out.next else {
        panic!("expected a model call");
    };
    let sent = messages.last().unwrap().tool_results().next().unwrap();
    assert!(
        sent.content
            .starts_with("01234567890123456789\n\n[Shortened")
    );
    let stored = machine.state().messages.last().unwrap().clone();
    assert_eq!(stored.tool_results().next().unwrap().content, long);

    let out = machine
        .step(one_call(
            "r1",
            "read_tool_result",
            json!({"call_id": "t1", "offset": 20}),
        ))
        .unwrap();
    let Step::RunTools { calls } = &out.next else {
        panic!("expected the read step");
    };
    let answer = calls[0].answer.as_ref().expect("the core answers a read");
    assert!(
        answer
            .content
            .starts_with("01234567890123456789\n\n[Characters 20 to 40 of 50")
    );
}
