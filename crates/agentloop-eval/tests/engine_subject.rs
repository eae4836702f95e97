//! The loop as the subject ([`EngineSubject`]): a conversation case, its
//! steps counted from where the conversation left off, and its tool calls.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_eval::{EngineSubject, Format, Runner, dataset};
use agentloop_types::{LoopOptions, ModelProvider};
use serde_json::json;

const DATASET: &str = r#"
name: conversation
cases:
  - name: continues
    messages:
      - {role: system, content: Be brief.}
      - {role: user, content: Hi}
      - {role: assistant, content: Hello}
      - {role: user, content: Look it up}
    expect:
      contains: done
      max_steps: 2
      tools:
        calls: [{name: lookup, args: {q: x}}]
        order: exact
  - name: one-step-only
    prompt: Look it up
    expect:
      max_steps: 1
"#;

#[test]
fn a_conversation_case_counts_only_the_steps_it_adds() {
    let data = dataset::parse(DATASET, Format::Yaml, "c.yaml".as_ref()).unwrap();
    let subject = EngineSubject::new(
        Arc::new(|| {
            ScriptedProvider::new([
                ScriptedTurn::new().tool_call("t1", "lookup", json!({"q": "x", "limit": 3})),
                ScriptedTurn::new().text("done"),
            ]) as Arc<dyn ModelProvider>
        }),
        LoopOptions {
            max_iterations: 5,
            ..LoopOptions::default()
        },
    );
    let report = futures::executor::block_on(Runner::new(Arc::new(subject)).run(&data)).unwrap();
    let continues = &report.cases[0];
    assert!(continues.passed, "{continues:#?}");
    assert_eq!(continues.runs[0].steps, 2);
    assert_eq!(continues.runs[0].tools, ["lookup"]);
    let one_step = &report.cases[1];
    assert!(!one_step.passed);
    assert_eq!(
        one_step.runs[0].failures(),
        ["max_steps: 2 model turns, at most 1 expected"]
    );
}
