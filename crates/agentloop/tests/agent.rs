//! The facade: the builder runs a tool loop, typed tools parse their
//! arguments (or answer with an error), streamed text comes out plain, and
//! the README example is the compiled quickstart.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use agentloop::engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop::prelude::*;
use agentloop::types::transcript::render_events;
use agentloop::types::{
    ContentBlock, ProviderError, ProviderErrorKind, ToolResultBlock, ToolStream, single_result,
};
use agentloop::{BuildError, LoopStatus, ToolResult, Typed};
use serde_json::{Value, json};

/// A plain [`Tool`], offered by value.
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

#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Transfer {
    /// Account to pay.
    to: String,
    /// Amount in cents.
    cents: u64,
}

#[derive(serde::Serialize)]
struct Receipt {
    id: u32,
    to: String,
}

/// A typed tool that records the arguments it was called with.
#[derive(Default)]
struct Pay {
    calls: Arc<Mutex<Vec<Transfer>>>,
}

impl TypedTool for Pay {
    const NAME: &'static str = "pay";
    const DESCRIPTION: &'static str = "Pays an account.";
    type Args = Transfer;
    type Output = Receipt;

    async fn call(&self, args: Transfer, _: &ToolContext) -> Result<Receipt, ToolError> {
        if args.cents == 0 {
            return Err(ToolError::new("nothing to pay"));
        }
        let to = args.to.clone();
        let mut calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        calls.push(args);
        Ok(Receipt { id: 7, to })
    }
}

fn tool_results(result: &LoopResult) -> Vec<ToolResultBlock> {
    result
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|block| match block {
            ContentBlock::ToolResult(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn the_builder_runs_a_tool_loop_with_plain_and_typed_tools() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .tool_call("t1", "clock", json!({}))
            .tool_call("t2", "pay", json!({"to": "alice", "cents": 250}))
            .usage(20, 5),
        ScriptedTurn::new().text("Paid alice at noon.").usage(30, 4),
    ]);
    let pay = Pay::default();
    let calls = pay.calls.clone();
    let agent = Agent::builder()
        .provider(provider.clone())
        .model("scripted")
        .system("You pay people.")
        .model("scripted")
        .tool(Clock)
        .tool(pay)
        .build()
        .unwrap();

    let result = agent.run("Pay alice 2.50").await;

    assert!(matches!(result.status, LoopStatus::Complete { .. }));
    assert_eq!(result.final_text().as_deref(), Some("Paid alice at noon."));
    assert_eq!(result.tokens.input_tokens, 50);
    assert_eq!(
        *calls.lock().unwrap(),
        vec![Transfer {
            to: "alice".into(),
            cents: 250
        }]
    );
    let results = tool_results(&result);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].tool_use_id, "t1");
    assert_eq!(
        serde_json::from_str::<Value>(&results[1].content).unwrap(),
        json!({"id": 7, "to": "alice"})
    );
    assert!(!results[1].is_error);

    // Ids were generated: the prompt's and every committed message's are
    // distinct, and a second run gets fresh ones.
    let ids: BTreeSet<&str> = result.messages.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids.len(), result.messages.len());
    assert!(result.messages[0].id.ends_with("-prompt"));
    let requests = provider.requests();
    assert_eq!(
        requests[0].options.system_prompt.as_deref(),
        Some("You pay people.")
    );
    assert_eq!(requests[0].options.model, "scripted");
    let offered: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(offered, ["clock", "pay"]);
    assert_eq!(
        requests[0].tools[1].input_schema["required"],
        json!(["to", "cents"])
    );
}

#[tokio::test]
async fn invalid_typed_arguments_are_an_error_result_naming_the_problem() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .tool_call("t1", "pay", json!({"to": "bob"}))
            .tool_call("t2", "pay", json!({"to": "bob", "cents": "lots"}))
            .tool_call("t3", "pay", json!({"to": "bob", "cents": 0})),
        ScriptedTurn::new().text("I could not pay bob."),
    ]);
    let pay = Pay::default();
    let calls = pay.calls.clone();
    let agent = Agent::builder()
        .provider(provider)
        .model("scripted")
        .tool(pay)
        .build()
        .unwrap();

    let result = agent.run("Pay bob").await;

    assert!(matches!(result.status, LoopStatus::Complete { .. }));
    assert!(calls.lock().unwrap().is_empty(), "call never ran");
    let results = tool_results(&result);
    assert_eq!(results.len(), 3);
    assert!(results.iter().all(|r| r.is_error));
    let missing = results[0].content.clone();
    assert!(
        missing.starts_with("Invalid arguments for pay:"),
        "{missing}"
    );
    assert!(missing.contains("missing field `cents`"), "{missing}");
    let wrong_type = results[1].content.clone();
    assert!(wrong_type.contains("invalid type"), "{wrong_type}");
    assert_eq!(results[2].content.clone(), "nothing to pay");
}

#[tokio::test]
async fn text_yields_root_deltas_and_the_result() {
    let provider =
        ScriptedProvider::new([ScriptedTurn::new().text_chunks(&["It ", "is ", "noon."])]);
    let agent = Agent::builder()
        .provider(provider)
        .model("scripted")
        .build()
        .unwrap();

    let mut text = agent.stream("Time?").text();
    let mut deltas = Vec::new();
    while let Some(delta) = text.next().await {
        deltas.push(delta.unwrap());
    }

    assert_eq!(deltas, ["It ", "is ", "noon."]);
    assert_eq!(
        text.result().and_then(LoopResult::final_text).as_deref(),
        Some("It is noon.")
    );
}

#[tokio::test]
async fn text_ends_with_an_error_when_the_run_fails() {
    let provider = ScriptedProvider::new([ScriptedTurn::new()
        .text("Partial")
        .error(ProviderError::new(ProviderErrorKind::Api, "overloaded"))]);
    let agent = Agent::builder()
        .provider(provider)
        .model("scripted")
        .build()
        .unwrap();

    let items: Vec<_> = agent.stream("Hi").text().collect().await;

    let (last, deltas) = items.split_last().unwrap();
    assert!(deltas.iter().all(Result::is_ok));
    let error = last.as_ref().unwrap_err();
    assert!(matches!(error.result.status, LoopStatus::Error { .. }));
    assert!(error.to_string().starts_with("the run failed:"), "{error}");
    assert!(error.to_string().contains("overloaded"), "{error}");
}

#[tokio::test]
async fn the_event_stream_of_a_typed_tool_call() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .tool_call("t1", "pay", json!({"to": "alice", "cents": 1}))
            .usage(10, 2),
        ScriptedTurn::new().text("Done.").usage(12, 1),
    ]);
    let agent = Agent::builder()
        .provider(provider)
        .model("scripted")
        .tool(Pay::default())
        .build()
        .unwrap();

    let events: Vec<LoopEvent> = agent.stream("Pay alice a cent").collect().await;

    let result = events.last().and_then(LoopEvent::root_result).unwrap();
    let run_id = result.messages[0].id.strip_suffix("-prompt").unwrap();
    insta::assert_snapshot!(render_events(&events).replace(run_id, "RUN"));
}

#[test]
fn a_typed_tool_offers_one_schema_shared_by_every_run() {
    let first = Typed(Pay::default()).definition();
    let second = Typed(Pay::default()).definition();
    assert!(Arc::ptr_eq(&first.input_schema, &second.input_schema));
    assert_eq!(*first.input_schema, Typed(Pay::default()).input_schema());
    assert_eq!(
        (first.name.as_str(), first.description.as_str()),
        ("pay", "Pays an account.")
    );
    // Another typed tool gets its own schema, not the first one's.
    let other = Typed(Shout).definition();
    assert_eq!(*other.input_schema, Typed(Shout).input_schema());
    assert_ne!(other.input_schema, first.input_schema);
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Loud {
    /// What to say.
    text: String,
}

struct Shout;

impl TypedTool for Shout {
    const NAME: &'static str = "shout";
    const DESCRIPTION: &'static str = "Says it loud.";
    type Args = Loud;
    type Output = String;

    async fn call(&self, args: Loud, _: &ToolContext) -> Result<String, ToolError> {
        Ok(args.text.to_uppercase())
    }
}

#[test]
fn build_refuses_a_missing_provider_and_duplicate_tool_names() {
    assert_eq!(
        Agent::builder().tool(Clock).build().unwrap_err(),
        BuildError::MissingProvider
    );
    let provider = ScriptedProvider::new([]);
    let shared: Arc<dyn Tool> = Arc::new(Clock);
    assert_eq!(
        Agent::builder()
            .provider(provider)
            .model("scripted")
            .tool(Arc::new(Clock))
            .tool(shared)
            .build()
            .unwrap_err(),
        BuildError::DuplicateTool("clock".into())
    );
}

#[test]
fn build_refuses_a_missing_or_blank_model_naming_the_fix() {
    let missing = Agent::builder()
        .provider(ScriptedProvider::new([]))
        .build()
        .unwrap_err();
    assert_eq!(missing, BuildError::MissingModel);
    assert!(
        missing.to_string().contains("call `.model(..)`"),
        "{missing}"
    );
    let blank = Agent::builder()
        .provider(ScriptedProvider::new([]))
        .model("  ")
        .build()
        .unwrap_err();
    assert_eq!(blank, BuildError::MissingModel);
    let from_options = Agent::builder()
        .provider(ScriptedProvider::new([]))
        .options(agentloop::LoopOptions {
            request: agentloop::RequestOptions {
                model: "claude-sonnet-4-5".into(),
                ..Default::default()
            },
            ..Default::default()
        })
        .build()
        .unwrap();
    assert_eq!(from_options.options().request.model, "claude-sonnet-4-5");
}

#[test]
fn the_readme_example_is_the_quickstart_example() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let example =
        std::fs::read_to_string(format!("{root}/crates/agentloop/examples/quickstart.rs")).unwrap();
    let marker = "<!-- crates/agentloop/examples/quickstart.rs";
    let after_marker = &readme[readme.find(marker).expect("README marks the example")..];
    let block_start = after_marker.find("```rust,no_run\n").unwrap() + "```rust,no_run\n".len();
    let block = &after_marker[block_start..];
    let block = &block[..block.find("```").unwrap()];
    let code: String = example
        .lines()
        .filter(|line| !line.starts_with("//!"))
        .map(|line| format!("{line}\n"))
        .collect();
    assert_eq!(
        block, code,
        "README.md's example differs from examples/quickstart.rs"
    );
}

#[tokio::test]
async fn a_call_that_needs_approval_waits_and_resume_goes_on_in_place() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .tool_call("p1", "pay", json!({"to": "bob", "cents": 500}))
            .tool_call("c1", "clock", json!({})),
        ScriptedTurn::new().tool_call("p2", "pay", json!({"to": "eve", "cents": 900})),
        ScriptedTurn::new().text("Paid bob; not eve."),
    ]);
    let pay = Pay::default();
    let calls = pay.calls.clone();
    let agent = Agent::builder()
        .provider(provider.clone())
        .model("scripted")
        .tool(Clock)
        .tool(pay)
        .approval("pay", agentloop::ApprovalPolicy::Always)
        .build()
        .unwrap();

    let first = agent.run("Pay bob and eve").await;
    let LoopStatus::Suspended { pending, .. } = &first.status else {
        panic!("{:?}", first.status);
    };
    assert_eq!(pending.len(), 1, "the clock ran; only pay waits");
    assert!(calls.lock().unwrap().is_empty());

    let approve = [(
        "p1".to_owned(),
        agentloop::Decision::Approve { arguments: None },
    )];
    let second = agent.resume(&first, approve.into()).unwrap().result().await;
    assert!(matches!(second.status, LoopStatus::Suspended { .. }));
    let reject = [(
        "p2".to_owned(),
        agentloop::Decision::Reject {
            reason: "eve is not a payee".into(),
        },
    )];
    let done = agent.resume(&second, reject.into()).unwrap().result().await;
    assert_eq!(done.final_text().as_deref(), Some("Paid bob; not eve."));
    assert_eq!(
        calls.lock().unwrap().len(),
        1,
        "only the approved payment ran"
    );
    let results = tool_results(&done);
    assert_eq!(
        results.last().unwrap().content,
        "The user rejected this call: eve is not a payee"
    );
    assert!(results.last().unwrap().is_error);
    assert_eq!(
        agent.resume(&done, Default::default()).err(),
        Some(agentloop::DecisionError::NotWaiting)
    );
}

#[tokio::test]
async fn a_builder_hook_blocks_a_call_and_its_decision_is_an_event() {
    use agentloop::types::{HookDecision, HookInput, HookPoint, hook_fn};
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("p1", "pay", json!({"to": "eve", "cents": 900})),
        ScriptedTurn::new().text("Not paid."),
    ]);
    let pay = Pay::default();
    let calls = pay.calls.clone();
    let no_eve = hook_fn(
        "no-eve",
        [HookPoint::BeforeToolCall],
        |input: HookInput| async move {
            Ok(match input {
                HookInput::BeforeToolCall { arguments, .. } if arguments["to"] == "eve" => {
                    HookDecision::Block {
                        reason: "eve is not a payee".into(),
                    }
                }
                _ => HookDecision::Pass,
            })
        },
    );
    let agent = Agent::builder()
        .provider(provider.clone())
        .model("scripted")
        .tool(pay)
        .hook(no_eve)
        .build()
        .unwrap();
    let events: Vec<LoopEvent> = agent.stream("Pay eve").collect().await;
    let hooks: Vec<String> = events
        .iter()
        .filter(|e| e.kind.name() == "hook")
        .map(|e| serde_json::to_string(&e.kind).unwrap())
        .collect();
    assert_eq!(
        hooks,
        [
            r#"{"type":"hook","hook":"no-eve","point":"before_tool_call","tool_use_id":"p1","decision":"block","reason":"eve is not a payee"}"#
        ]
    );
    let done = events.last().unwrap().root_result().unwrap();
    assert_eq!(done.final_text().as_deref(), Some("Not paid."));
    assert!(
        calls.lock().unwrap().is_empty(),
        "the blocked payment never ran"
    );
    assert_eq!(
        tool_results(done)[0].content,
        "Blocked by hook `no-eve`: eve is not a payee"
    );
}
