//! `agentloop::eval` through the front door: an [`Agent`] as the subject
//! of a dataset.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use agentloop::Agent;
use agentloop::engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop::eval::{Format, Runner, dataset};

#[test]
fn an_agent_is_the_subject_of_an_eval() {
    let data = dataset::parse(
        "cases:\n  - name: greets\n    prompt: Hi\n    expect: {contains: Hello}\n  \
         - name: answers\n    prompt: 2+2?\n    expect: {equals: \"4\"}\n",
        Format::Yaml,
        "greetings.yaml".as_ref(),
    )
    .unwrap();
    // A shared scripted provider plays its turns in order, one per case.
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().text("Hello there"),
        ScriptedTurn::new().text("5"),
    ]);
    let agent = Agent::builder()
        .provider(provider)
        .model("scripted")
        .build()
        .unwrap();
    let report = futures::executor::block_on(Runner::new(Arc::new(agent)).run(&data)).unwrap();
    assert!(report.cases[0].passed);
    assert!(!report.cases[1].passed);
    assert_eq!(report.summary.passed, 1);
}
