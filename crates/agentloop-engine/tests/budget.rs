//! A run's [`Budget`]: asked before each model call (a compaction's
//! summarising call too) with the largest earlier call's spend, settled
//! after it with the call's usage; a refusal stops the run before the
//! call, ending it `limit_exceeded` (limit `budget`) with the budget
//! named.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::{RunDeps, run};
use agentloop_types::{
    Budget, BudgetCall, BudgetHold, BudgetRefusal, CompactionOptions, CompactionStrategy,
    LimitKind, LoopOptions, LoopStatus, Spend, async_trait,
};
use common::routed::{Routed, is_summary};
use common::{check_invariants, echo, user};
use futures::StreamExt;
use serde_json::json;

/// Lets `allowed` calls through, then refuses; records what it was told.
#[derive(Default)]
struct Counting {
    allowed: u32,
    asked: Mutex<Vec<BudgetCall>>,
    settled: Mutex<Vec<(String, Spend)>>,
}

#[async_trait]
impl Budget for Counting {
    async fn reserve(&self, call: &BudgetCall) -> Result<Option<BudgetHold>, BudgetRefusal> {
        let mut asked = self.asked.lock().unwrap();
        asked.push(call.clone());
        if asked.len() as u32 > self.allowed {
            return Err(BudgetRefusal {
                budget: "project p1: cost per day 1 USD".to_owned(),
            });
        }
        Ok(Some(BudgetHold {
            id: format!("hold-{}", call.iteration),
            estimate: Spend::default(),
        }))
    }

    async fn settle(&self, hold: BudgetHold, actual: Spend) {
        self.settled.lock().unwrap().push((hold.id, actual));
    }
}

#[tokio::test]
async fn a_refused_call_is_not_made_and_the_run_ends_naming_the_budget() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .tool_call("c1", "echo", json!({ "text": "one" }))
            .usage(100, 20),
        ScriptedTurn::new()
            .tool_call("c2", "echo", json!({ "text": "two" }))
            .usage(300, 40),
        ScriptedTurn::new().text("never asked"),
    ]);
    let budget = Arc::new(Counting {
        allowed: 2,
        ..Counting::default()
    });
    let deps = RunDeps::new(provider.clone())
        .with_tools([echo()])
        .with_run_id("run")
        .with_budget(budget.clone());
    let events: Vec<_> = run(LoopOptions::default(), user("go"), deps)
        .collect()
        .await;
    let result = check_invariants(&events);
    assert_eq!(
        result.status,
        LoopStatus::LimitExceeded {
            limit: LimitKind::Budget,
            budget: Some("project p1: cost per day 1 USD".to_owned()),
        }
    );
    // The third call was never made.
    assert_eq!(provider.remaining(), 1);
    assert_eq!(provider.requests().len(), 2);
    // Each call was asked with the largest earlier one's spend.
    let asked = budget.asked.lock().unwrap();
    let earlier: Vec<Option<u64>> = asked
        .iter()
        .map(|c| c.largest_earlier.map(|s| s.tokens))
        .collect();
    assert_eq!(earlier, [None, Some(120), Some(340)]);
    assert!(asked.iter().all(|c| c.run_id == "run"));
    assert_eq!(
        asked.iter().map(|c| c.iteration).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    // The two calls made were settled with their usage.
    let settled = budget.settled.lock().unwrap();
    let settled: Vec<(&str, u64)> = settled
        .iter()
        .map(|(id, s)| (id.as_str(), s.tokens))
        .collect();
    assert_eq!(settled, [("hold-1", 120), ("hold-2", 340)]);
    // The history is whole: every call has its result.
    assert_eq!(result.tokens.total_tokens(), 460);
}

#[tokio::test]
async fn a_run_within_its_budget_is_not_touched() {
    let provider = ScriptedProvider::new([ScriptedTurn::new().text("done").usage(10, 5)]);
    let budget = Arc::new(Counting {
        allowed: 5,
        ..Counting::default()
    });
    let deps = RunDeps::new(provider)
        .with_run_id("run")
        .with_budget(budget.clone());
    let events: Vec<_> = run(LoopOptions::default(), user("hi"), deps)
        .collect()
        .await;
    let result = check_invariants(&events);
    assert!(
        matches!(result.status, LoopStatus::Complete { .. }),
        "{:?}",
        result.status
    );
    assert_eq!(budget.settled.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_skills_model_calls_spend_against_the_runs_budget() {
    use agentloop_engine::skills::{Skill, run_with_skills};
    let skill = Arc::new(Skill::new("research", "Find facts."));
    let provider = ScriptedProvider::new([
        ScriptedTurn::new()
            .tool_call("s1", "research", json!({ "task": "Find the capital" }))
            .usage(10, 5),
        ScriptedTurn::new().text("Paris").usage(200, 30),
        ScriptedTurn::new().text("It is Paris.").usage(20, 4),
    ]);
    let budget = Arc::new(Counting {
        allowed: 5,
        ..Counting::default()
    });
    let deps = RunDeps::new(provider)
        .with_run_id("run")
        .with_budget(budget.clone());
    let events: Vec<_> = run_with_skills(LoopOptions::default(), user("capital?"), deps, &[skill])
        .collect()
        .await;
    let result = check_invariants(&events);
    assert!(matches!(result.status, LoopStatus::Complete { .. }));
    // The skill's child run asked too, under its own run id.
    let asked: Vec<String> = budget
        .asked
        .lock()
        .unwrap()
        .iter()
        .map(|c| c.run_id.clone())
        .collect();
    assert_eq!(asked.len(), 3, "{asked:?}");
    assert_eq!(
        asked.iter().filter(|run| *run == "run").count(),
        2,
        "{asked:?}"
    );
    let settled: Vec<u64> = budget
        .settled
        .lock()
        .unwrap()
        .iter()
        .map(|(_, spend)| spend.tokens)
        .collect();
    assert!(
        settled.contains(&230),
        "the skill's call settled: {settled:?}"
    );
}

#[tokio::test]
async fn a_budget_that_refuses_a_skills_call_stops_the_skill_not_the_run() {
    use agentloop_engine::skills::{Skill, run_with_skills};
    let skill = Arc::new(Skill::new("research", "Find facts."));
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("s1", "research", json!({ "task": "Find the capital" })),
        ScriptedTurn::new().text("I could not look it up."),
    ]);
    // The run's first call passes; the skill's is refused.
    let budget = Arc::new(Counting {
        allowed: 1,
        ..Counting::default()
    });
    let deps = RunDeps::new(provider.clone())
        .with_run_id("run")
        .with_budget(budget.clone());
    let events: Vec<_> = run_with_skills(LoopOptions::default(), user("capital?"), deps, &[skill])
        .collect()
        .await;
    let result = check_invariants(&events);
    // The run's own next call is refused as well: the budget is spent.
    assert_eq!(
        result.status,
        LoopStatus::LimitExceeded {
            limit: LimitKind::Budget,
            budget: Some("project p1: cost per day 1 USD".to_owned()),
        }
    );
    let results: Vec<_> = result
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .collect();
    assert_eq!(results.len(), 1, "the skill's call has its result");
    assert!(results[0].is_error, "{}", results[0].content);
    // Only the run's first call went out.
    assert_eq!(provider.requests().len(), 1);
}

/// A run that summarises its older turns once its requests pass half of
/// a 2,000-token window: echo turns of some 170 tokens each.
fn summarising(provider: Arc<Routed>, budget: Arc<Counting>) -> (LoopOptions, RunDeps) {
    let options = LoopOptions {
        context_window: Some(2_000),
        compaction: CompactionOptions {
            strategy: CompactionStrategy::Summarise,
            threshold: 0.5,
            keep_last_turns: 2,
        },
        ..LoopOptions::default()
    };
    let deps = RunDeps::new(provider)
        .with_tools([echo()])
        .with_run_id("run")
        .with_budget(budget);
    (options, deps)
}

fn echo_turns(n: usize) -> Vec<ScriptedTurn> {
    let mut turns: Vec<ScriptedTurn> = (1..=n)
        .map(|k| {
            let note = format!("note {k}: {}", "lorem ipsum ".repeat(27));
            ScriptedTurn::new()
                .tool_call(&format!("t{k}"), "echo", json!({ "text": note }))
                .usage(100, 10)
        })
        .collect();
    turns.push(ScriptedTurn::new().text("All echoed.").usage(100, 5));
    turns
}

fn summaries() -> Vec<ScriptedTurn> {
    (0..4)
        .map(|_| {
            ScriptedTurn::new()
                .text("Summary: notes echoed.")
                .usage(40, 12)
        })
        .collect()
}

#[tokio::test]
async fn a_summarising_call_is_reserved_and_settled_like_any_model_call() {
    let provider = Routed::new(echo_turns(8), summaries());
    let budget = Arc::new(Counting {
        allowed: 100,
        ..Counting::default()
    });
    let (options, deps) = summarising(provider.clone(), budget.clone());
    let events: Vec<_> = run(options, user("Echo my notes."), deps).collect().await;
    let result = check_invariants(&events);
    assert!(matches!(result.status, LoopStatus::Complete { .. }));
    let requests = provider.requests();
    let summarised = requests.iter().filter(|r| is_summary(r)).count();
    assert!(summarised >= 1, "the run summarised");
    // Every call made, summaries included, was asked for and settled,
    // each with its own usage.
    assert_eq!(budget.asked.lock().unwrap().len(), requests.len());
    let settled: Vec<u64> = budget
        .settled
        .lock()
        .unwrap()
        .iter()
        .map(|(_, s)| s.tokens)
        .collect();
    assert_eq!(settled.len(), requests.len());
    let kinds: Vec<u64> = requests
        .iter()
        .zip(&settled)
        .map(|(r, tokens)| if is_summary(r) { 52 } else { *tokens })
        .collect();
    assert_eq!(settled, kinds, "a summary settles its 52 tokens");
}

#[tokio::test]
async fn a_refused_summary_is_not_made_and_the_run_ends_naming_the_budget() {
    // Where the first summary comes, found from a run that may spend.
    let provider = Routed::new(echo_turns(8), summaries());
    let (options, deps) = summarising(
        provider.clone(),
        Arc::new(Counting {
            allowed: 100,
            ..Counting::default()
        }),
    );
    let _: Vec<_> = run(options, user("Echo my notes."), deps).collect().await;
    let first = provider
        .requests()
        .iter()
        .position(is_summary)
        .expect("the run summarised");

    let provider = Routed::new(echo_turns(8), summaries());
    let budget = Arc::new(Counting {
        allowed: first as u32,
        ..Counting::default()
    });
    let (options, deps) = summarising(provider.clone(), budget.clone());
    let events: Vec<_> = run(options, user("Echo my notes."), deps).collect().await;
    let result = check_invariants(&events);
    assert_eq!(
        result.status,
        LoopStatus::LimitExceeded {
            limit: LimitKind::Budget,
            budget: Some("project p1: cost per day 1 USD".to_owned()),
        }
    );
    let requests = provider.requests();
    assert_eq!(requests.len(), first, "the summary was never asked for");
    assert!(!requests.iter().any(is_summary));
}
