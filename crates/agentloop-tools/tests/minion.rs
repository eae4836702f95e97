//! The minion tool driving child loops through the engine, with scripted
//! providers for parent and child.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agentloop_types::{
    FinishedEvent, MessageCreatedEvent, TokensConsumedEvent, ToolBlockUpdateEvent, ToolEndEvent,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::{RunDeps, decide, run};
use agentloop_tools::minion::{MemoryMinionChats, MinionTool};
use agentloop_tools::{AskUserTool, ReturnTool};
use agentloop_types::transcript::render_events;
use agentloop_types::{
    ApiKind, BlockCategory, Budget, BudgetCall, BudgetHold, BudgetRefusal, CancellationToken,
    ContentBlock, Decision, EventKind, LoopEvent, LoopOptions, LoopResult, LoopStatus, Message,
    ModelProvider, ModelRequest, ModelStream, OutputSchema, RenderingContentBlock, RunPath, Spend,
    TokenTotals, Tool, ToolContext, ToolOutput, ToolResult, ToolResultBlock, ToolStream,
    ToolStreamEvent, Wait, single_result,
};
use futures::StreamExt;
use serde_json::{Map, Value, json};

async fn run_parent(
    parent: Arc<ScriptedProvider>,
    minion: MinionTool,
    options: LoopOptions,
    cancel: CancellationToken,
) -> Vec<LoopEvent> {
    let deps = RunDeps::new(parent)
        .with_tools([Arc::new(minion) as Arc<dyn Tool>])
        .with_cancel(cancel)
        .with_run_id("run");
    run(options, vec![Message::user_text("u1", "Go")], deps)
        .collect()
        .await
}

fn result_of(events: &[LoopEvent]) -> LoopResult {
    events
        .last()
        .and_then(LoopEvent::root_result)
        .expect("the run ends with its result")
        .clone()
}

/// The minion call's result block in the parent's history.
fn minion_result(result: &LoopResult) -> ToolResultBlock {
    result
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .next()
        .expect("the minion call has a result")
        .clone()
}

fn parent_calling(input: Value) -> Arc<ScriptedProvider> {
    ScriptedProvider::new([
        ScriptedTurn::new()
            .tool_call("toolu_1", "minion", input)
            .usage(10, 5),
        ScriptedTurn::new().text("Done.").usage(20, 4),
    ])
}

#[tokio::test]
async fn nested_events_snapshot() {
    let child = ScriptedProvider::new([ScriptedTurn::new()
        .text_chunks(&["Counting", " now."])
        .tool_call("c1", "return", json!({"result": "1, 2"}))
        .usage(3, 2)]);
    let minion = MinionTool::new(child, vec![Arc::new(ReturnTool)]);
    let events = run_parent(
        parent_calling(json!({"task": "Count to two"})),
        minion,
        LoopOptions::default(),
        CancellationToken::new(),
    )
    .await;
    insta::assert_snapshot!("minion_nested_events", render_events(&events));

    let result = result_of(&events);
    assert!(matches!(result.status, LoopStatus::Complete { .. }));
    let block = minion_result(&result);
    assert!(!block.is_error);
    assert_eq!(
        block.content, "1, 2",
        "the return tool's value is the content"
    );

    let groups = &block.rendering_groups;
    let RenderingContentBlock::ToolInfo(info) = &groups[0].blocks[0] else {
        panic!("the first group is the tool info: {groups:?}");
    };
    assert_eq!(info.input.as_deref(), Some("Count to two"));
    assert_eq!(info.chat_id.as_deref(), Some("minion_toolu_1"));
    assert!(!groups[0].is_tool_generated);
    assert!(groups[1..].iter().all(|g| g.is_tool_generated));
    let categories: Vec<BlockCategory> = groups[1..].iter().map(|g| g.category).collect();
    assert_eq!(categories, [BlockCategory::Text, BlockCategory::Backstage]);

    // Consumers can store the minion chat from the events under the call.
    let chat: Vec<&Message> = events
        .iter()
        .filter(|e| e.path == RunPath::root().child("toolu_1"))
        .filter_map(|e| match &e.kind {
            EventKind::MessageCreated(MessageCreatedEvent { message }) => Some(message),
            _ => None,
        })
        .collect();
    assert_eq!(chat.len(), 3, "task, assistant, tool results: {chat:#?}");
    assert_eq!(chat[0].text(), "Count to two");

    // The last groups update equals the final groups.
    let last_update = events
        .iter()
        .rev()
        .find_map(|e| match &e.kind {
            EventKind::ToolBlockUpdate(ToolBlockUpdateEvent { block, .. }) if e.path.is_root() => {
                Some(block.rendering_groups.clone())
            }
            _ => None,
        })
        .expect("the minion streams its groups");
    assert_eq!(&last_update, groups);
}

#[tokio::test]
async fn child_tokens_roll_up_into_the_parent() {
    let child = ScriptedProvider::new([ScriptedTurn::new()
        .tool_call("c1", "return", json!({"result": "x"}))
        .usage(100, 50)]);
    let minion = MinionTool::new(child, vec![Arc::new(ReturnTool)]);
    let events = run_parent(
        parent_calling(json!({"task": "t"})),
        minion,
        LoopOptions::default(),
        CancellationToken::new(),
    )
    .await;
    let result = result_of(&events);
    assert_eq!(result.tokens.input_tokens, 10 + 100 + 20);
    assert_eq!(result.tokens.output_tokens, 5 + 50 + 4);
    let consumed: TokenTotals = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TokensConsumed(TokensConsumedEvent { tokens }) => Some(*tokens),
            _ => None,
        })
        .sum();
    assert_eq!(consumed, result.tokens);
}

#[tokio::test]
async fn a_child_question_suspends_the_parent_and_the_answer_resumes_the_child_in_place() {
    let child = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("c1", "ask_user", json!({"question": "Which file?"})),
        ScriptedTurn::new().text("Edited notes.txt."),
    ]);
    let minion = || MinionTool::new(child.clone(), vec![Arc::new(AskUserTool)]);
    let parent = parent_calling(json!({"task": "Edit the file"}));
    let events = run_parent(
        parent.clone(),
        minion(),
        LoopOptions::default(),
        CancellationToken::new(),
    )
    .await;
    let result = result_of(&events);
    let LoopStatus::Suspended {
        pending,
        state: Some(state),
    } = &result.status
    else {
        panic!("expected suspended, got {:?}", result.status);
    };
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].call.id, "c1");
    assert_eq!(pending[0].path, RunPath::root().child("toolu_1"));
    assert_eq!(
        pending[0].wait,
        Wait::Question {
            question: "Which file?".into()
        }
    );
    let child_finished = events.iter().any(|e| {
        e.path == RunPath::root().child("toolu_1")
            && matches!(&e.kind, EventKind::Finished(FinishedEvent { result }) if result.status.name() == "suspended")
    });
    assert!(child_finished, "the child run ended suspended");

    let answer = Decision::Answer {
        text: "notes.txt".into(),
    };
    let deps = RunDeps::new(parent.clone()).with_tools([Arc::new(minion()) as Arc<dyn Tool>]);
    let events: Vec<LoopEvent> = decide(
        LoopOptions::default(),
        (**state).clone(),
        [("c1".to_owned(), answer)].into(),
        deps,
    )
    .unwrap()
    .collect()
    .await;
    let done = result_of(&events);
    assert_eq!(done.final_text().as_deref(), Some("Done."));
    assert_eq!(minion_result(&done).content, "Edited notes.txt.");
    // The child went on with its own history: the answer is its call's result.
    let child_request = &child.requests()[1];
    let answered: Vec<&str> = child_request
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .map(|r| r.content.as_str())
        .collect();
    assert_eq!(answered, ["notes.txt"]);
    assert_eq!(child.requests().len(), 2, "the child did not start over");
}

/// A provider whose turns never yield; records when a turn is abandoned.
struct Hanging {
    dropped: Arc<AtomicBool>,
}

struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl ModelProvider for Hanging {
    fn stream(&self, _request: ModelRequest) -> ModelStream {
        let flag = DropFlag(self.dropped.clone());
        Box::pin(futures::stream::once(async move {
            let _flag = flag;
            futures::future::pending().await
        }))
    }
}

fn cancel_after(token: &CancellationToken, ms: u64) {
    let token = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        token.cancel();
    });
}

#[tokio::test(start_paused = true)]
async fn cancelling_the_parent_aborts_the_child_model_turn() {
    let dropped = Arc::new(AtomicBool::new(false));
    let minion = MinionTool::new(
        Arc::new(Hanging {
            dropped: dropped.clone(),
        }),
        vec![],
    );
    let cancel = CancellationToken::new();
    cancel_after(&cancel, 50);
    let events = run_parent(
        parent_calling(json!({"task": "t"})),
        minion,
        LoopOptions::default(),
        cancel,
    )
    .await;
    let result = result_of(&events);
    assert_eq!(result.status, LoopStatus::Cancelled);
    assert!(
        dropped.load(Ordering::SeqCst),
        "the child's turn was dropped"
    );
    let block = minion_result(&result);
    assert!(block.is_error, "the minion call got a synthesised result");
}

struct HangTool(Arc<Mutex<Option<CancellationToken>>>);

impl Tool for HangTool {
    fn name(&self) -> &str {
        "hang"
    }
    fn description(&self) -> &str {
        "never finishes"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn execute(self: Arc<Self>, _input: Value, context: ToolContext) -> ToolStream {
        *self.0.lock().unwrap() = Some(context.cancel.clone());
        single_result(futures::future::pending())
    }
}

#[tokio::test(start_paused = true)]
async fn cancelling_the_parent_cancels_the_child_token() {
    let slot = Arc::new(Mutex::new(None));
    let child = ScriptedProvider::new([ScriptedTurn::new().tool_call("c1", "hang", json!({}))]);
    let minion = MinionTool::new(child, vec![Arc::new(HangTool(slot.clone()))]);
    let cancel = CancellationToken::new();
    cancel_after(&cancel, 50);
    let events = run_parent(
        parent_calling(json!({"task": "t"})),
        minion,
        LoopOptions::default(),
        cancel,
    )
    .await;
    assert_eq!(result_of(&events).status, LoopStatus::Cancelled);
    let token = slot.lock().unwrap().clone().expect("the child's tool ran");
    assert!(token.is_cancelled(), "the cancel reached the child");
}

#[tokio::test]
async fn a_minion_chat_continues_by_id() {
    let chats = Arc::new(MemoryMinionChats::new());
    let child = ScriptedProvider::new([
        ScriptedTurn::new().text("First answer."),
        ScriptedTurn::new().text("Second answer."),
    ]);
    let minion = MinionTool::new(child.clone(), vec![]).with_chats(chats.clone());

    let events = run_parent(
        parent_calling(json!({"task": "First task"})),
        minion.clone(),
        LoopOptions::default(),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(minion_result(&result_of(&events)).content, "First answer.");
    for event in &events {
        if let (EventKind::MessageCreated(MessageCreatedEvent { message }), [call]) =
            (&event.kind, &event.path.0[..])
        {
            chats.append(&format!("minion_{call}"), message.clone());
        }
    }
    assert_eq!(chats.chat_ids(), ["minion_toolu_1"]);

    let parent = ScriptedProvider::new([
        ScriptedTurn::new().tool_call(
            "toolu_9",
            "minion",
            json!({"task": "Second task", "chat_id": "minion_toolu_1"}),
        ),
        ScriptedTurn::new().text("Done."),
    ]);
    let events = run_parent(
        parent,
        minion,
        LoopOptions::default(),
        CancellationToken::new(),
    )
    .await;
    let block = minion_result(&result_of(&events));
    assert_eq!(block.content, "Second answer.");
    let RenderingContentBlock::ToolInfo(info) = &block.rendering_groups[0].blocks[0] else {
        panic!("tool info first");
    };
    assert_eq!(info.chat_id.as_deref(), Some("minion_toolu_1"));

    let requests = child.requests();
    let sent: Vec<String> = requests[1].messages.iter().map(Message::text).collect();
    assert_eq!(
        sent,
        ["First task", "First answer.", "Second task"],
        "the child saw the earlier chat"
    );
    let ids: Vec<&str> = requests[1].messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids.len(), 3);
    assert!(ids[2].starts_with("minion_toolu_1-toolu_9"), "{ids:?}");
}

#[tokio::test]
async fn a_suspended_minion_chat_takes_the_task_as_its_answer() {
    let chats = Arc::new(MemoryMinionChats::new());
    let child = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("c1", "ask_user", json!({"question": "Which file?"})),
        ScriptedTurn::new().text("Edited notes.md."),
    ]);
    let minion =
        MinionTool::new(child.clone(), vec![Arc::new(AskUserTool)]).with_chats(chats.clone());
    let events = run_parent(
        parent_calling(json!({"task": "Edit the file"})),
        minion.clone(),
        LoopOptions::default(),
        CancellationToken::new(),
    )
    .await;
    for event in &events {
        if let (EventKind::MessageCreated(MessageCreatedEvent { message }), [call]) =
            (&event.kind, &event.path.0[..])
        {
            chats.append(&format!("minion_{call}"), message.clone());
        }
    }
    let parent = ScriptedProvider::new([
        ScriptedTurn::new().tool_call(
            "toolu_2",
            "minion",
            json!({"task": "notes.md", "chat_id": "minion_toolu_1"}),
        ),
        ScriptedTurn::new().text("Done."),
    ]);
    let events = run_parent(
        parent,
        minion,
        LoopOptions::default(),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(
        minion_result(&result_of(&events)).content,
        "Edited notes.md."
    );
    let last = child.requests()[1].messages.last().cloned().unwrap();
    assert_eq!(
        last.content,
        [ContentBlock::ToolResult(ToolResultBlock::ok(
            "c1", "notes.md"
        ))]
    );
}

#[tokio::test]
async fn nesting_stops_at_the_depth_limit() {
    let child = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("c1", "minion", json!({"task": "deeper"})),
        ScriptedTurn::new().text("Did it myself."),
    ]);
    let minion = MinionTool::new(child, vec![]).with_max_depth(1);
    let mut options = LoopOptions::default();
    let mut minion_options = Map::new();
    minion_options.insert("tools".into(), json!("minion"));
    options.tool_options.insert("minion".into(), minion_options);
    let events = run_parent(
        parent_calling(json!({"task": "t"})),
        minion,
        options,
        CancellationToken::new(),
    )
    .await;
    let result = result_of(&events);
    assert!(matches!(result.status, LoopStatus::Complete { .. }));
    assert_eq!(minion_result(&result).content, "Did it myself.");
    let nested_end = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ToolEnd(ToolEndEvent {
                tool_use_id,
                is_error,
                depth,
                ..
            }) if tool_use_id == "c1" => Some((*is_error, *depth, e.path.clone())),
            _ => None,
        })
        .expect("the nested call ended");
    assert_eq!(nested_end, (true, 2, RunPath::root().child("toolu_1")));
    let refused = events
        .iter()
        .filter(|e| e.path == RunPath::root().child("toolu_1"))
        .find_map(|e| match &e.kind {
            EventKind::MessageCreated(MessageCreatedEvent { message }) => {
                message.tool_results().next().cloned()
            }
            _ => None,
        })
        .expect("the nested call has a result");
    assert!(refused.is_error);
    assert!(
        refused.content.contains("at most 1 deep"),
        "{}",
        refused.content
    );
}

fn context(options: Map<String, Value>) -> ToolContext {
    ToolContext {
        run_id: "run".into(),
        project_id: String::new(),
        chat_id: None,
        tool_use_id: "toolu_1".into(),
        path: RunPath::root(),
        options,
        cancel: CancellationToken::new(),
        resume: None,
        budget: None,
    }
}

async fn call(tool: MinionTool, input: Value, options: Map<String, Value>) -> ToolResult {
    let outputs: Vec<ToolOutput> = Arc::new(tool)
        .execute(input, context(options))
        .collect()
        .await;
    match outputs.last() {
        Some(ToolOutput::Done(result)) => result.clone(),
        other => panic!("the call ends with a result, got {other:?}"),
    }
}

#[tokio::test]
async fn invalid_input_is_an_error_result() {
    let minion = || MinionTool::new(ScriptedProvider::new([]), vec![Arc::new(ReturnTool)]);
    let r = call(minion(), json!({}), Map::new()).await;
    assert!(r.is_error);
    assert!(r.content.contains("missing field `task`"), "{}", r.content);

    let r = call(minion(), json!({"task": "  "}), Map::new()).await;
    assert!(r.is_error);
    assert!(r.content.contains("must not be empty"), "{}", r.content);

    let r = call(minion(), json!("do it"), Map::new()).await;
    assert!(r.is_error);

    let mut options = Map::new();
    options.insert("tools".into(), json!("return, rm_rf"));
    let r = call(minion(), json!({"task": "t"}), options).await;
    assert!(r.is_error);
    assert!(r.content.contains("Unknown tool `rm_rf`"), "{}", r.content);

    let r = call(
        minion(),
        json!({"task": "t", "chat_id": "minion_x"}),
        Map::new(),
    )
    .await;
    assert!(r.is_error);
    assert!(r.content.contains("no minion chat store"), "{}", r.content);

    let with_store = minion().with_chats(Arc::new(MemoryMinionChats::new()));
    let r = call(
        with_store,
        json!({"task": "t", "chat_id": "minion_x"}),
        Map::new(),
    )
    .await;
    assert!(r.is_error);
    assert!(
        r.content.contains("minion chat `minion_x` not found"),
        "{}",
        r.content
    );
}

#[tokio::test]
async fn options_reach_the_child_and_child_errors_are_error_results() {
    let child =
        ScriptedProvider::new([
            ScriptedTurn::new().error(agentloop_types::ProviderError::new(
                agentloop_types::ProviderErrorKind::Api,
                "overloaded",
            )),
        ]);
    let minion = MinionTool::new(
        child.clone(),
        vec![Arc::new(ReturnTool), Arc::new(AskUserTool)],
    );
    let mut options = Map::new();
    options.insert("model".into(), json!("small-model"));
    options.insert("system_prompt".into(), json!("Be terse."));
    options.insert("tools".into(), json!("ask_user"));
    let outputs: Vec<ToolOutput> = Arc::new(minion)
        .execute(json!({"task": "t"}), context(options))
        .collect()
        .await;
    let Some(ToolOutput::Done(result)) = outputs.last() else {
        panic!("ends with a result");
    };
    assert!(result.is_error);
    assert!(
        result.content.starts_with("Minion failed:"),
        "{}",
        result.content
    );
    assert!(
        outputs
            .iter()
            .any(|o| matches!(o, ToolOutput::Event(ToolStreamEvent::GroupsUpdate { .. })))
    );
    let request = &child.requests()[0];
    assert_eq!(request.options.model, "small-model");
    assert_eq!(request.options.system_prompt.as_deref(), Some("Be terse."));
    let offered: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(offered, ["ask_user"]);
}

/// A tool that records the chat id its calls see.
struct ChatProbe(Mutex<Vec<Option<String>>>);

impl Tool for ChatProbe {
    fn name(&self) -> &str {
        "probe"
    }
    fn description(&self) -> &str {
        "Records its context."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn execute(self: Arc<Self>, _input: Value, context: ToolContext) -> ToolStream {
        self.0.lock().unwrap().push(context.chat_id.clone());
        single_result(async { ToolResult::ok("seen") })
    }
}

/// The root run's output schema is not the child's: a minion's child
/// answers in prose, neither asked through `final_output` nor through the
/// request's response format, even over an API that has one; it runs in
/// its own chat.
#[tokio::test]
async fn a_child_gets_no_output_schema() {
    let child = ScriptedProvider::speaking(
        ApiKind::OpenaiChat,
        [
            ScriptedTurn::new().tool_call("p1", "probe", json!({})),
            ScriptedTurn::new().text("Oslo, in prose."),
        ],
    );
    let probe = Arc::new(ChatProbe(Mutex::new(Vec::new())));
    let base = LoopOptions {
        output_schema: Some(OutputSchema::new("city", json!({"type": "object"}))),
        enabled_tools: vec!["minion".into()],
        ..LoopOptions::default()
    };
    let minion =
        MinionTool::new(child.clone(), vec![probe.clone() as Arc<dyn Tool>]).with_options(base);
    let result = call(minion, json!({"task": "The capital?"}), Map::new()).await;
    assert!(!result.is_error, "{}", result.content);
    assert_eq!(result.content, "Oslo, in prose.");
    for request in child.requests() {
        assert_eq!(request.response_format, None);
        let offered: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(offered, ["probe"], "every tool given, no final_output");
    }
    assert_eq!(
        *probe.0.lock().unwrap(),
        [Some("minion_toolu_1".to_owned())]
    );
}

#[tokio::test]
async fn nested_minions_roll_tokens_up_through_every_level() {
    let child = ScriptedProvider::new([
        ScriptedTurn::new()
            .tool_call("c1", "minion", json!({"task": "deeper"}))
            .usage(100, 10),
        ScriptedTurn::new()
            .text("grandchild answer")
            .usage(1000, 100),
        ScriptedTurn::new().text("child answer").usage(10_000, 1000),
    ]);
    let minion = MinionTool::new(child, vec![]).with_max_depth(2);
    let mut options = LoopOptions::default();
    let mut minion_options = Map::new();
    minion_options.insert("tools".into(), json!("minion"));
    options.tool_options.insert("minion".into(), minion_options);
    let events = run_parent(
        parent_calling(json!({"task": "t"})),
        minion,
        options,
        CancellationToken::new(),
    )
    .await;
    let result = result_of(&events);
    assert_eq!(minion_result(&result).content, "child answer");
    assert_eq!(result.tokens.input_tokens, 10 + 100 + 1000 + 10_000 + 20);
    let grandchild = RunPath::root().child("toolu_1").child("c1");
    let finished = events.iter().find_map(|e| match &e.kind {
        EventKind::Finished(FinishedEvent { result }) if e.path == grandchild => {
            result.final_text()
        }
        _ => None,
    });
    assert_eq!(finished.as_deref(), Some("grandchild answer"));
    let nested_block = events
        .iter()
        .filter(|e| e.path == RunPath::root().child("toolu_1"))
        .find_map(|e| match &e.kind {
            EventKind::MessageCreated(MessageCreatedEvent { message }) => {
                message.tool_results().next().cloned()
            }
            _ => None,
        })
        .expect("the nested minion's result is in the child's history");
    let RenderingContentBlock::ToolInfo(info) = &nested_block.rendering_groups[0].blocks[0] else {
        panic!("the nested result opens with its tool info");
    };
    assert_eq!(info.chat_id.as_deref(), Some("minion_c1"));
}

#[tokio::test]
async fn long_streams_update_the_block_a_few_times_not_per_chunk() {
    let chunk = "0123456789".repeat(5);
    let chunks: Vec<&str> = std::iter::repeat_n(chunk.as_str(), 200).collect();
    let child = ScriptedProvider::new([ScriptedTurn::new().text_chunks(&chunks)]);
    let minion = MinionTool::new(child, vec![]);
    let events = run_parent(
        parent_calling(json!({"task": "write a lot"})),
        minion,
        LoopOptions::default(),
        CancellationToken::new(),
    )
    .await;
    let updates: Vec<&Vec<agentloop_types::RenderingBlockGroup>> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolBlockUpdate(ToolBlockUpdateEvent { block, .. }) => {
                Some(&block.rendering_groups)
            }
            _ => None,
        })
        .collect();
    assert!(
        (4..40).contains(&updates.len()),
        "{} updates for 200 chunks",
        updates.len()
    );
    let shown = |groups: &Vec<agentloop_types::RenderingBlockGroup>| -> usize {
        groups
            .iter()
            .flat_map(|g| &g.blocks)
            .map(|b| match b {
                RenderingContentBlock::Text { text } => text.len(),
                _ => 0,
            })
            .sum()
    };
    let sizes: Vec<usize> = updates.iter().map(|g| shown(g)).collect();
    assert!(sizes.windows(2).all(|w| w[0] <= w[1]), "{sizes:?}");
    assert_eq!(sizes.last().copied(), Some(200 * 50));
    let block = minion_result(&result_of(&events));
    assert_eq!(&block.rendering_groups, *updates.last().unwrap());
}

/// A budget that records each reservation's run and settlement, and
/// refuses the calls of runs other than `run` when `parent_only`.
#[derive(Default)]
struct Ledger {
    parent_only: bool,
    reserved: Mutex<Vec<String>>,
    settled: Mutex<Vec<Spend>>,
}

#[agentloop_types::async_trait]
impl Budget for Ledger {
    async fn reserve(&self, call: &BudgetCall) -> Result<Option<BudgetHold>, BudgetRefusal> {
        self.reserved.lock().unwrap().push(call.run_id.clone());
        if self.parent_only && call.run_id != "run" {
            return Err(BudgetRefusal {
                budget: "the project's daily budget of $1.00".to_owned(),
            });
        }
        Ok(Some(BudgetHold {
            id: call.run_id.clone(),
            estimate: Spend::default(),
        }))
    }

    async fn settle(&self, _hold: BudgetHold, actual: Spend) {
        self.settled.lock().unwrap().push(actual);
    }
}

async fn run_with_budget(ledger: Arc<Ledger>) -> Vec<LoopEvent> {
    let child = ScriptedProvider::new([ScriptedTurn::new()
        .tool_call("c1", "return", json!({"result": "x"}))
        .usage(100, 50)]);
    let minion = MinionTool::new(child, vec![Arc::new(ReturnTool)]);
    let deps = RunDeps::new(parent_calling(json!({"task": "t"})))
        .with_tools([Arc::new(minion) as Arc<dyn Tool>])
        .with_run_id("run")
        .with_budget(ledger);
    run(
        LoopOptions::default(),
        vec![Message::user_text("u1", "Go")],
        deps,
    )
    .collect()
    .await
}

#[tokio::test]
async fn a_childs_model_calls_spend_against_the_parents_budget() {
    let ledger = Arc::new(Ledger::default());
    let events = run_with_budget(ledger.clone()).await;
    assert!(matches!(
        result_of(&events).status,
        LoopStatus::Complete { .. }
    ));
    let reserved = ledger.reserved.lock().unwrap().clone();
    let children: Vec<&String> = reserved.iter().filter(|run| *run != "run").collect();
    assert_eq!(
        (reserved.len(), children.len()),
        (3, 1),
        "the parent's two calls and the child's one: {reserved:?}"
    );
    let settled = ledger.settled.lock().unwrap();
    assert_eq!(settled.len(), 3, "each call settled: {settled:?}");
    assert!(
        settled.iter().any(|spend| spend.tokens == 150),
        "the child's spend among them: {settled:?}"
    );
}

#[tokio::test]
async fn a_budget_that_refuses_the_child_stops_the_minion_not_the_parent() {
    let ledger = Arc::new(Ledger {
        parent_only: true,
        ..Ledger::default()
    });
    let events = run_with_budget(ledger.clone()).await;
    let result = result_of(&events);
    assert!(matches!(result.status, LoopStatus::Complete { .. }));
    let block = minion_result(&result);
    assert!(block.is_error);
    assert!(
        block
            .content
            .contains("budget limit was reached (the project's daily budget of $1.00)"),
        "{}",
        block.content
    );
}
