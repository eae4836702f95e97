//! Whatever the model says, every strategy ends with one terminal event, a
//! valid history and totals that add up.

mod common;

use std::sync::Arc;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::skills::{Skill, prepare};
use agentloop_engine::{RunDeps, StrategyRegistry};
use agentloop_types::{LoopOptions, ProviderError, ProviderErrorKind};
use common::*;
use futures::StreamExt;
use proptest::prelude::*;
use serde_json::json;

fn turn() -> impl Strategy<Value = ScriptedTurn> {
    let id = "[a-z]{1,3}";
    prop_oneof![
        Just(ScriptedTurn::new().text("plain answer").usage(2, 1)),
        id.prop_map(|id| ScriptedTurn::new().tool_call(&id, "echo", json!({"text": id}))),
        id.prop_map(|id| ScriptedTurn::new()
            .tool_call(&format!("{id}1"), "echo", json!({"text": "a"}))
            .tool_call(&format!("{id}2"), "nope", json!({}))),
        (id, any::<bool>(), any::<bool>()).prop_map(|(id, finish, answer)| {
            let mut input = json!({"message": "thinking", "finish": finish});
            if answer {
                input["final_answer"] = json!("done");
            }
            ScriptedTurn::new()
                .tool_call(&id, "agent_decide_next", input)
                .usage(1, 1)
        }),
        (id, any::<bool>()).prop_map(|(id, go_on)| ScriptedTurn::new().tool_call(
            &id,
            "agent_observe_decide",
            json!({"message": "seen", "should_continue": go_on})
        )),
        Just(ScriptedTurn::new().text("{\"message\": \"ask\", \"request_input\": \"Why?\"}")),
        Just(ScriptedTurn::new().text("[\"one\", \"two\"]")),
        id.prop_map(|id| ScriptedTurn::new().tool_call(&id, "ask_user", json!({"question": "?"}))),
        id.prop_map(|id| ScriptedTurn::new().tool_call(&id, "helper", json!({"task": "sub"}))),
        Just(ScriptedTurn::new().error(ProviderError::new(ProviderErrorKind::Api, "down"))),
        Just(ScriptedTurn::new().text("cut").cut()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn every_strategy_keeps_the_invariants(
        turns in prop::collection::vec(turn(), 0..14),
        pick in 0usize..5,
    ) {
        let registry = StrategyRegistry::default();
        let names = registry.names();
        let strategy = registry.get(&names[pick]).unwrap();
        // Unique call ids across the script, as providers guarantee.
        let turns: Vec<ScriptedTurn> = turns
            .into_iter()
            .enumerate()
            .map(|(i, mut turn)| {
                for step in &mut turn.steps {
                    if let agentloop_engine::scripted::ScriptStep::ToolCall { id, .. } = step {
                        *id = format!("{id}-{i}");
                    }
                }
                turn
            })
            .collect();
        let provider = ScriptedProvider::new(turns);
        let skill = Arc::new(Skill::new("helper", "Help.").with_tools([echo()]));
        let deps = RunDeps::new(provider)
            .with_tools([echo(), asking()])
            .with_run_id("run");
        let prepared = prepare(LoopOptions::default(), user("task"), deps, &[skill]);
        let events: Vec<_> = futures::executor::block_on(
            strategy
                .run(prepared.options, prepared.context, prepared.deps)
                .collect(),
        );
        check_invariants(&events);
    }
}
