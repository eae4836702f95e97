//! Whatever the model says, every strategy ends with one terminal event, a
//! valid history and totals that add up.

mod common;

use std::sync::Arc;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::skills::{Skill, prepare};
use agentloop_engine::{RunDeps, StrategyRegistry};
use agentloop_types::{Decision, LoopOptions, LoopStatus, ProviderError, ProviderErrorKind, Wait};
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
        id.prop_map(|id| ScriptedTurn::new().tool_call(&id, "write", json!({"path": id}))),
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
        answers in prop::collection::vec(any::<bool>(), 8),
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
        let skill = Arc::new(Skill::new("helper", "Help.").with_tools([echo(), writer().0]));
        let deps = RunDeps::new(provider.clone())
            .with_tools([echo(), asking(), writer().0])
            .with_run_id("run");
        let prepared = prepare(LoopOptions::default(), user("task"), deps, &[skill]);
        let tools = prepared.deps.tools.clone();
        let options = prepared.options.clone();
        let events: Vec<_> = futures::executor::block_on(
            strategy
                .run(prepared.options, prepared.context, prepared.deps)
                .collect(),
        );
        let mut result = check_invariants(&events);
        // Whatever waits for a person is decided (approve or reject, answer
        // or decline) and the run goes on in place, in its strategy.
        let mut answers = answers.iter().copied().cycle();
        while let LoopStatus::Suspended { pending, state: Some(state) } = &result.status {
            let decisions = pending
                .iter()
                .map(|item| {
                    let yes = answers.next().unwrap_or_default();
                    let decision = match (&item.wait, yes) {
                        (Wait::Approval { .. }, true) => Decision::Approve { arguments: None },
                        (Wait::Question { .. }, true) => Decision::Answer { text: "yes".into() },
                        (_, false) => Decision::Reject { reason: "no".into() },
                    };
                    (item.call.id.clone(), decision)
                })
                .collect();
            let events = futures::executor::block_on(decide_events(
                provider.clone(),
                tools.clone(),
                options.clone(),
                (**state).clone(),
                decisions,
            ));
            result = check_resumed(result.tokens, &events);
        }
    }
}
