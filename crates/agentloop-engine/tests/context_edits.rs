//! Tool search and context budgets through the driver: what each request
//! the provider received carried of the tools and the tool results, and
//! the same requests from a run resumed at any of its checkpoints.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::{RunDeps, RunItem, resume, run};
use agentloop_types::{
    ClearToolResults, ContextEdit, ContextOptions, EventKind, LoopEvent, LoopOptions, LoopStatus,
    ModelRequest, RunState, StreamingStartEvent, Tool, ToolContext, ToolResult, ToolStream,
    single_result,
};
use futures::StreamExt;
use serde_json::{Value, json};

use common::{check_invariants, check_recorded_requests, user};

/// A tool as an MCP server lists it: a name, a description, a schema
/// with a few described properties. It answers with `size` characters.
struct Listed {
    name: String,
    description: String,
    size: usize,
}

impl Tool for Listed {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "What to act on."},
                "limit": {"type": "integer", "description": "Most items."}
            },
            "required": ["id"]
        })
    }
    fn execute(self: Arc<Self>, _: Value, _: ToolContext) -> ToolStream {
        let text = format!("{} answered. ", self.name).repeat(self.size / 20 + 1);
        single_result(async move { ToolResult::ok(text) })
    }
}

fn listed(n: usize, size: usize) -> Vec<Arc<dyn Tool>> {
    (0..n)
        .map(|i| {
            Arc::new(Listed {
                name: format!("server{}_action{}", i / 20, i % 20),
                description: format!("Performs action {} on server {}.", i % 20, i / 20),
                size,
            }) as Arc<dyn Tool>
        })
        .collect()
}

fn names(request: &ModelRequest) -> Vec<String> {
    request.tools.iter().map(|t| t.name.clone()).collect()
}

fn searching() -> LoopOptions {
    LoopOptions {
        context: ContextOptions {
            tool_search_threshold: Some(50),
            ..ContextOptions::default()
        },
        ..LoopOptions::default()
    }
}

fn search_script() -> Vec<ScriptedTurn> {
    vec![
        ScriptedTurn::new()
            .tool_call(
                "s1",
                "tool_search",
                json!({"query": "server3_action4", "limit": 1}),
            )
            .usage(100, 10),
        ScriptedTurn::new()
            .tool_call("c1", "server3_action4", json!({"id": "a"}))
            .usage(100, 10),
        ScriptedTurn::new()
            .tool_call(
                "s2",
                "tool_search",
                json!({"query": "server7_action1", "limit": 1}),
            )
            .usage(100, 10),
        ScriptedTurn::new().text("Done.").usage(100, 5),
    ]
}

fn deps(provider: Arc<ScriptedProvider>, tools: Vec<Arc<dyn Tool>>) -> RunDeps {
    RunDeps::new(provider).with_tools(tools).with_run_id("run")
}

#[tokio::test]
async fn three_hundred_tools_go_out_as_an_index_and_found_tools_are_appended() {
    let provider = ScriptedProvider::new(search_script());
    let events: Vec<LoopEvent> = run(
        searching(),
        user("Act on a."),
        deps(provider.clone(), listed(300, 100)),
    )
    .collect()
    .await;
    let result = check_invariants(&events);
    assert!(matches!(result.status, LoopStatus::Complete { .. }));
    let requests = provider.requests();
    assert_eq!(requests.len(), 4);
    check_recorded_requests(&events, &requests, &result.messages);
    assert_eq!(names(&requests[0]), ["tool_search"]);
    let index = &requests[0].tools[0].description;
    assert_eq!(index.lines().filter(|l| l.starts_with("- ")).count(), 300);
    assert!(index.contains("- server14_action19: Performs action 19 on server 14.\n"));
    assert_eq!(names(&requests[1]), ["tool_search", "server3_action4"]);
    assert_eq!(names(&requests[2]), ["tool_search", "server3_action4"]);
    assert_eq!(
        names(&requests[3]),
        ["tool_search", "server3_action4", "server7_action1"]
    );
    // Each request's tools begin with the one before's: a cached prefix
    // stays valid.
    for pair in requests.windows(2) {
        assert_eq!(pair[1].tools[..pair[0].tools.len()], pair[0].tools[..]);
    }
    // The found tool ran.
    let ran = result
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .find(|r| r.tool_use_id == "c1")
        .unwrap();
    assert!(ran.content.starts_with("server3_action4 answered."));
    let loaded: Vec<Vec<String>> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ContextEdited(edited) => match &edited.edit {
                ContextEdit::ToolsLoaded { tools } => Some(tools.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(
        loaded,
        [
            vec!["server3_action4".to_owned()],
            vec!["server7_action1".to_owned()]
        ]
    );
}

#[tokio::test]
async fn a_run_resumed_at_any_checkpoint_sends_the_same_tools() {
    let provider = ScriptedProvider::new(search_script());
    let items: Vec<RunItem> = run(
        searching(),
        user("Act on a."),
        deps(provider.clone(), listed(300, 100)),
    )
    .with_checkpoints()
    .collect()
    .await;
    let expected: Vec<Vec<String>> = provider.requests().iter().map(names).collect();
    let mut checked = 0;
    for (at, item) in items.iter().enumerate() {
        let RunItem::Checkpoint(state) = item else {
            continue;
        };
        let calls_done = items[..at]
            .iter()
            .filter(|i| {
                matches!(i, RunItem::Event(e)
                    if matches!(e.kind, EventKind::StreamingStart(StreamingStartEvent { .. })))
            })
            .count();
        let stored: RunState =
            serde_json::from_str(&serde_json::to_string(state).unwrap()).unwrap();
        let resumed = ScriptedProvider::new(search_script()[calls_done..].to_vec());
        let events: Vec<LoopEvent> =
            resume(searching(), stored, deps(resumed.clone(), listed(300, 100)))
                .collect()
                .await;
        let result = events.iter().find_map(|e| e.root_result()).unwrap();
        assert!(
            matches!(result.status, LoopStatus::Complete { .. }),
            "resumed at item {at}"
        );
        let sent: Vec<Vec<String>> = resumed.requests().iter().map(names).collect();
        assert_eq!(sent, expected[calls_done..], "resumed at item {at}");
        checked += 1;
    }
    assert!(checked >= 4, "a checkpoint per step");
}

/// `TURNS` calls of a tool answering 8,000 characters each, then the
/// answer.
const TURNS: usize = 12;

fn big_script() -> Vec<ScriptedTurn> {
    let mut turns: Vec<ScriptedTurn> = (0..TURNS)
        .map(|k| {
            ScriptedTurn::new()
                .tool_call(&format!("t{k}"), "server0_action0", json!({"id": "x"}))
                .usage(100, 10)
        })
        .collect();
    turns.push(ScriptedTurn::new().text("Done.").usage(100, 5));
    turns
}

fn sent_chars(request: &ModelRequest) -> usize {
    request
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .map(|r| r.content.chars().count())
        .sum()
}

#[tokio::test]
async fn results_over_budget_are_sent_short_and_kept_whole() {
    let options = LoopOptions {
        context: ContextOptions {
            tool_output_budget: Some(250),
            ..ContextOptions::default()
        },
        ..LoopOptions::default()
    };
    let provider = ScriptedProvider::new(big_script());
    let events: Vec<LoopEvent> = run(
        options,
        user("Go."),
        deps(provider.clone(), listed(1, 8_000)),
    )
    .collect()
    .await;
    let result = check_invariants(&events);
    let requests = provider.requests();
    check_recorded_requests(&events, &requests, &result.messages);
    assert_eq!(names(&requests[0]), ["server0_action0", "read_tool_result"]);
    // Every stored result is whole; every sent one is its budget (1,000
    // characters) and a note.
    for stored in result.messages.iter().flat_map(|m| m.tool_results()) {
        assert!(stored.content.chars().count() > 8_000);
    }
    let last = requests.last().unwrap();
    for sent in last.messages.iter().flat_map(|m| m.tool_results()) {
        assert!(sent.content.contains("[Shortened: the first 1000 of"));
        assert!(sent.content.chars().count() < 1_300);
    }
    assert!(sent_chars(last) < TURNS * 1_300);
}

#[tokio::test]
async fn older_results_are_cleared_before_compaction_is_needed() {
    let options = LoopOptions {
        context_window: Some(20_000),
        context: ContextOptions {
            clear_tool_results: Some(ClearToolResults {
                threshold: 0.4,
                keep_last: 2,
            }),
            ..ContextOptions::default()
        },
        ..LoopOptions::default()
    };
    let provider = ScriptedProvider::new(big_script());
    let events: Vec<LoopEvent> = run(
        options,
        user("Go."),
        deps(provider.clone(), listed(1, 8_000)),
    )
    .collect()
    .await;
    let result = check_invariants(&events);
    assert!(matches!(result.status, LoopStatus::Complete { .. }));
    let cleared: Vec<(u32, u64, u64)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ContextEdited(edited) => match &edited.edit {
                ContextEdit::ResultsCleared {
                    calls,
                    tokens_before,
                    tokens_after,
                    ..
                } => Some((*calls, *tokens_before, *tokens_after)),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert!(!cleared.is_empty(), "results were cleared");
    check_recorded_requests(&events, &provider.requests(), &result.messages);
    for (_, before, after) in &cleared {
        assert!(before > &8_000 && after < before);
    }
    // Every request stays under the window; the last keeps its two latest
    // results whole and says how to read the others.
    let last = provider.requests().last().unwrap().clone();
    let results: Vec<_> = last
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .collect();
    assert_eq!(results.len(), TURNS);
    let whole = results
        .iter()
        .filter(|r| !r.content.starts_with("[Cleared"))
        .count();
    assert!((2..TURNS).contains(&whole), "{whole} results sent whole");
    assert!(results[0].content.contains("read_tool_result"));
    assert!(!results[TURNS - 1].content.starts_with("[Cleared"));
    // What is stored is whole.
    assert!(
        result
            .messages
            .iter()
            .flat_map(|m| m.tool_results())
            .all(|r| r.content.chars().count() > 8_000)
    );
}
