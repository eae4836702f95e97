//! Any nesting of skill calls keeps event depth, paths and the tool-result
//! invariants right.

mod common;

use agentloop_types::{FinishedEvent, ToolEndEvent, ToolStartEvent};
use std::collections::HashMap;
use std::sync::Arc;

use agentloop_engine::RunDeps;
use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::skills::{Skill, run_with_skills};
use agentloop_types::{EventKind, LoopOptions, LoopStatus, RunPath, validate_history};
use common::*;
use futures::StreamExt;
use proptest::prelude::*;
use serde_json::json;

const LEVELS: usize = 4;

/// One call a run makes, in its own model turn.
#[derive(Debug, Clone)]
enum Call {
    /// Calls the next-level skill, whose child run makes these calls.
    Skill(Vec<Call>),
    /// Calls the next-level skill with invalid arguments.
    BadSkill,
    /// Calls the echo tool.
    Echo,
}

fn calls(levels: u32) -> impl Strategy<Value = Vec<Call>> {
    let leaf = prop_oneof![
        1 => Just(Call::Echo),
        1 => Just(Call::BadSkill),
        2 => Just(Call::Skill(vec![])),
    ];
    let call = leaf.prop_recursive(levels, 24, 3, |inner| {
        prop_oneof![
            1 => Just(Call::Echo),
            1 => Just(Call::BadSkill),
            4 => prop::collection::vec(inner, 1..3).prop_map(Call::Skill),
        ]
    });
    prop::collection::vec(call, 1..4)
}

/// Skills `s1` .. `sN`; each may call the next and echo.
fn chain() -> Vec<Arc<Skill>> {
    let mut skills: Vec<Arc<Skill>> = Vec::new();
    for level in (1..=LEVELS).rev() {
        let mut skill =
            Skill::new(format!("s{level}"), format!("Level {level} work.")).with_tools([echo()]);
        if let Some(next) = skills.last() {
            skill = skill.with_skills([next.clone()]);
        }
        skills.push(Arc::new(skill));
    }
    skills.reverse();
    skills
}

/// The turns the provider plays, in request order, and the number of child
/// runs they start.
fn script(calls: &[Call], depth: usize, ids: &mut u32, turns: &mut Vec<ScriptedTurn>) -> usize {
    let mut children = 0;
    for call in calls {
        *ids += 1;
        let id = format!("c{ids}");
        let skill = format!("s{}", depth + 1);
        match call {
            Call::Echo => {
                turns.push(ScriptedTurn::new().tool_call(&id, "echo", json!({"text": id})))
            }
            Call::BadSkill => {
                turns.push(ScriptedTurn::new().tool_call(&id, &skill, json!({"task": []})))
            }
            Call::Skill(inner) => {
                turns.push(ScriptedTurn::new().tool_call(&id, &skill, json!({"task": id})));
                children += 1 + script(inner, depth + 1, ids, turns);
            }
        }
    }
    turns.push(
        ScriptedTurn::new()
            .text(&format!("done at {depth}"))
            .usage(1, 1),
    );
    children
}

/// Skill calls deeper than the chain are cut to echo calls.
fn clamp(calls: Vec<Call>, depth: usize) -> Vec<Call> {
    calls
        .into_iter()
        .map(|call| match call {
            Call::Skill(_) | Call::BadSkill if depth + 1 > LEVELS => Call::Echo,
            Call::Skill(inner) => Call::Skill(clamp(inner, depth + 1)),
            other => other,
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn nesting_keeps_depth_and_invariants(calls in calls(4)) {
        let calls = clamp(calls, 0);
        let mut turns = Vec::new();
        let mut ids = 0;
        let children = script(&calls, 0, &mut ids, &mut turns);
        let provider = ScriptedProvider::new(turns);
        let skills = chain();
        let deps = RunDeps::new(provider.clone()).with_run_id("run");
        let events: Vec<_> = futures::executor::block_on(
            run_with_skills(LoopOptions::default(), user("go"), deps, &skills[..1]).collect(),
        );
        let result = check_invariants(&events);
        prop_assert!(matches!(result.status, LoopStatus::Complete { .. }), "complete");
        prop_assert_eq!(provider.remaining(), 0);

        let mut open: HashMap<(RunPath, String), (u32, bool)> = HashMap::new();
        let mut finished = 0;
        for event in &events {
            match &event.kind {
                EventKind::ToolStart(ToolStartEvent { tool_use_id, name, is_skill, depth, .. }) => {
                    let level = event.path.depth() as u32 + 1;
                    prop_assert_eq!(*depth, level, "depth of {}", tool_use_id);
                    prop_assert_eq!(*is_skill, name.starts_with('s'));
                    if *is_skill {
                        prop_assert_eq!(name, &format!("s{level}"));
                    }
                    open.insert((event.path.clone(), tool_use_id.clone()), (*depth, *is_skill));
                }
                EventKind::ToolEnd(ToolEndEvent { tool_use_id, depth, is_skill, .. }) => {
                    let start = open.remove(&(event.path.clone(), tool_use_id.clone()));
                    prop_assert_eq!(start, Some((*depth, *is_skill)));
                }
                EventKind::Finished(FinishedEvent { result }) => {
                    finished += 1;
                    prop_assert!(matches!(result.status, LoopStatus::Complete { .. }), "complete");
                    prop_assert!(validate_history(&result.messages, false).is_ok());
                    if let Some(call) = event.path.0.last() {
                        prop_assert!(open.contains_key(&(
                            RunPath(event.path.0[..event.path.0.len() - 1].to_vec()),
                            call.clone()
                        )), "a child run ends inside its call");
                    }
                }
                _ => {}
            }
        }
        prop_assert!(open.is_empty(), "every start has an end");
        prop_assert_eq!(finished, children + 1);
    }
}
