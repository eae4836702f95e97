//! Benchmark: what requests carry, in estimated input tokens (a request's
//! JSON bytes / 4: its tools and its messages), with and without tool
//! search and context budgets. Two scripted runs:
//!
//! - a run offered 300 tools shaped as MCP servers list them (15 servers
//!   of 20 tools, each a description and a schema of four described
//!   properties), six model turns: every definition each turn against the
//!   index and the tools found;
//! - a 100-step run whose tool answers 8,000 characters a call, with a
//!   200,000-token window: the history whole (today's default),
//!   compaction dropping the oldest turns, a 500-token output budget,
//!   clearing old results, and the budget and clearing together.
//!
//! Costs are at $3 per million input tokens (Claude Sonnet's list price),
//! without prompt caching. Prints markdown table rows; `cargo xtask bench`
//! collects them.

use std::sync::Arc;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::{RunDeps, run};
use agentloop_types::{
    ClearToolResults, CompactionOptions, CompactionStrategy, ContextEdit, ContextOptions,
    EventKind, LoopEvent, LoopOptions, LoopStatus, Message, ModelRequest, Tool, ToolContext,
    ToolResult, ToolStream, single_result,
};
use futures::StreamExt;
use serde_json::{Value, json};

const PRICE_PER_MILLION: f64 = 3.0;

/// A tool as an MCP server lists it; it answers `size` characters.
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
                "owner": {"type": "string", "description": "The account or organisation that owns the item."},
                "id": {"type": "string", "description": "The identifier of the item to act on."},
                "fields": {"type": "array", "items": {"type": "string"}, "description": "Fields to return; all when left out."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "The most items to return."}
            },
            "required": ["owner", "id"]
        })
    }
    fn execute(self: Arc<Self>, _: Value, _: ToolContext) -> ToolStream {
        let line = format!("{}: a line of the answer. ", self.name);
        let text: String = line.chars().cycle().take(self.size).collect();
        single_result(async move { ToolResult::ok(text) })
    }
}

const SERVERS: [&str; 15] = [
    "github", "gitlab", "jira", "linear", "slack", "notion", "drive", "calendar", "mail",
    "postgres", "sentry", "stripe", "figma", "docker", "k8s",
];
const VERBS: [&str; 20] = [
    "list", "get", "create", "update", "delete", "search", "comment", "assign", "close", "open",
    "archive", "restore", "export", "import", "share", "watch", "label", "move", "copy", "count",
];

fn mcp_tools(size: usize) -> Vec<Arc<dyn Tool>> {
    SERVERS
        .iter()
        .flat_map(|server| {
            VERBS.iter().map(move |verb| {
                Arc::new(Listed {
                    name: format!("{server}_{verb}_items"),
                    description: format!(
                        "{verb} items on {server}: takes the owner and the item id, returns the \
                         matching items as JSON with their fields. Fails when the token lacks access."
                    ),
                    size,
                }) as Arc<dyn Tool>
            })
        })
        .collect()
}

fn tokens(request: &ModelRequest) -> u64 {
    let tools = serde_json::to_vec(&*request.tools).map_or(0, |b| b.len());
    let messages = serde_json::to_vec(&request.messages.iter().collect::<Vec<&Message>>())
        .map_or(0, |b| b.len());
    ((tools + messages) / 4) as u64
}

struct Measured {
    per_request: Vec<u64>,
    complete: bool,
    /// Times older results were cleared.
    clearings: usize,
}

async fn measure(
    options: LoopOptions,
    turns: Vec<ScriptedTurn>,
    tools: Vec<Arc<dyn Tool>>,
) -> Measured {
    let provider = ScriptedProvider::new(turns);
    let deps = RunDeps::new(provider.clone())
        .with_tools(tools)
        .with_run_id("bench");
    let events: Vec<LoopEvent> = run(options, vec![Message::user_text("u", "Do the task.")], deps)
        .collect()
        .await;
    let complete = events.iter().any(|e| {
        e.root_result()
            .is_some_and(|r| matches!(r.status, LoopStatus::Complete { .. }))
    });
    let clearings = events
        .iter()
        .filter(|e| {
            matches!(&e.kind, EventKind::ContextEdited(edited)
                if matches!(edited.edit, ContextEdit::ResultsCleared { .. }))
        })
        .count();
    Measured {
        per_request: provider.requests().iter().map(tokens).collect(),
        complete,
        clearings,
    }
}

fn row(bench: &str, figure: &str, value: String) {
    println!("| {bench} | {figure} | {value} |");
}

fn cost(tokens: u64) -> String {
    format!("${:.4}", tokens as f64 * PRICE_PER_MILLION / 1e6)
}

fn search_turns() -> Vec<ScriptedTurn> {
    let call = |id: &str, name: &str, input: Value| {
        ScriptedTurn::new().tool_call(id, name, input).usage(0, 10)
    };
    let ids = json!({"owner": "acme", "id": "42"});
    vec![
        call(
            "s1",
            "tool_search",
            json!({"query": "github issues list", "limit": 3}),
        ),
        call("c1", "github_list_items", ids.clone()),
        call("c2", "github_comment_items", ids.clone()),
        call(
            "s2",
            "tool_search",
            json!({"query": "slack_create_items", "limit": 1}),
        ),
        call("c3", "slack_create_items", ids),
        ScriptedTurn::new().text("Done.").usage(0, 5),
    ]
}

async fn tool_search() {
    let bench = "context: 300 MCP tools, 6 turns";
    let all = measure(LoopOptions::default(), search_turns(), mcp_tools(400)).await;
    let searching = LoopOptions {
        context: ContextOptions {
            tool_search_threshold: Some(50),
            ..ContextOptions::default()
        },
        ..LoopOptions::default()
    };
    let found = measure(searching, search_turns(), mcp_tools(400)).await;
    for (name, m) in [("every definition", &all), ("tool search", &found)] {
        let total: u64 = m.per_request.iter().sum();
        let turns = m.per_request.len().max(1) as u64;
        row(
            bench,
            &format!("{name}: first request"),
            format!("{} tokens", m.per_request.first().copied().unwrap_or(0)),
        );
        row(
            bench,
            &format!("{name}: input tokens per turn (mean)"),
            format!("{} tokens", total / turns),
        );
        row(
            bench,
            &format!("{name}: run input, cost"),
            format!(
                "{total} tokens, {}{}",
                cost(total),
                if m.complete { "" } else { " (incomplete)" }
            ),
        );
    }
    let (a, b) = (
        all.per_request.iter().sum::<u64>(),
        found.per_request.iter().sum::<u64>(),
    );
    row(
        bench,
        "tool search / every definition",
        format!("{:.3}", b as f64 / a.max(1) as f64),
    );
}

const STEPS: usize = 100;

fn big_turns() -> Vec<ScriptedTurn> {
    let mut turns: Vec<ScriptedTurn> = (0..STEPS)
        .map(|k| {
            ScriptedTurn::new()
                .tool_call(
                    &format!("t{k}"),
                    "github_get_items",
                    json!({"owner": "acme", "id": k.to_string()}),
                )
                .usage(0, 10)
        })
        .collect();
    turns.push(ScriptedTurn::new().text("Done.").usage(0, 5));
    turns
}

async fn budgets() {
    let bench = "context: 100 steps, 8,000-character results, 200k window";
    let base = LoopOptions {
        max_iterations: 200,
        context_window: Some(200_000),
        ..LoopOptions::default()
    };
    let budget = ContextOptions {
        tool_output_budget: Some(500),
        ..ContextOptions::default()
    };
    let clearing = ContextOptions {
        clear_tool_results: Some(ClearToolResults {
            threshold: 0.25,
            keep_last: 3,
        }),
        ..ContextOptions::default()
    };
    let variants = [
        ("history whole (today)", base.clone()),
        (
            "drop-oldest compaction at 80%",
            LoopOptions {
                compaction: CompactionOptions {
                    strategy: CompactionStrategy::DropOldest,
                    ..CompactionOptions::default()
                },
                ..base.clone()
            },
        ),
        (
            "500-token output budget",
            LoopOptions {
                context: budget.clone(),
                ..base.clone()
            },
        ),
        (
            "clearing old results at 25%",
            LoopOptions {
                context: clearing.clone(),
                ..base.clone()
            },
        ),
        (
            "budget and clearing",
            LoopOptions {
                context: ContextOptions {
                    clear_tool_results: clearing.clear_tool_results.clone(),
                    ..budget.clone()
                },
                ..base.clone()
            },
        ),
    ];
    let only = |t: &Arc<dyn Tool>| t.name() == "github_get_items";
    let mut today = 0;
    for (name, options) in variants {
        let tools: Vec<Arc<dyn Tool>> = mcp_tools(8_000).into_iter().filter(only).collect();
        let m = measure(options, big_turns(), tools).await;
        let total: u64 = m.per_request.iter().sum();
        let peak = m.per_request.iter().copied().max().unwrap_or(0);
        if today == 0 {
            today = total;
        }
        row(
            bench,
            &format!("{name}: run input, cost"),
            format!(
                "{total} tokens, {}{}",
                cost(total),
                if m.complete { "" } else { " (incomplete)" }
            ),
        );
        row(
            bench,
            &format!("{name}: largest request"),
            format!("{peak} tokens"),
        );
        if m.clearings > 0 {
            row(
                bench,
                &format!("{name}: clearings"),
                m.clearings.to_string(),
            );
        }
        row(
            bench,
            &format!("{name}: against today"),
            format!("{:.3}", total as f64 / today.max(1) as f64),
        );
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    tool_search().await;
    budgets().await;
}
