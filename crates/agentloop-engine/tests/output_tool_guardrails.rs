//! Output and tool guardrails: every outcome pinned as an event snapshot —
//! an answer that passes or trips, structured output that passes or trips
//! (as text and through `final_output`), a guardrail that fails to answer,
//! a classifier guardrail that is itself a model call, and tool calls
//! checked before they run and after.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::{RunDeps, collect, run};
use agentloop_types::transcript::render_events;
use agentloop_types::{
    ApiKind, EventKind, GuardrailVerdict, HookError, LoopError, LoopEvent, LoopOptions, LoopResult,
    LoopStatus, OutputGuardrail, OutputSchema, ToolGuardrail,
};
use common::*;
use futures::StreamExt;
use serde_json::{Value, json};

/// Trips when the answer (or the output's `city`) contains `word`.
struct Forbid {
    name: &'static str,
    word: &'static str,
}

#[agentloop_types::async_trait]
impl OutputGuardrail for Forbid {
    fn name(&self) -> &str {
        self.name
    }
    async fn check(
        &self,
        answer: &str,
        output: Option<&Value>,
    ) -> Result<GuardrailVerdict, HookError> {
        let in_output = output
            .and_then(|o| o["city"].as_str())
            .is_some_and(|c| c.contains(self.word));
        Ok(if answer.contains(self.word) || in_output {
            GuardrailVerdict::Trip {
                reason: format!("mentions {}", self.word),
            }
        } else {
            GuardrailVerdict::Pass
        })
    }
}

struct Broken;

#[agentloop_types::async_trait]
impl OutputGuardrail for Broken {
    fn name(&self) -> &str {
        "broken"
    }
    async fn check(&self, _: &str, _: Option<&Value>) -> Result<GuardrailVerdict, HookError> {
        Err(HookError::new("classifier unavailable"))
    }
}

/// A guardrail that is a model call: a classifier run answering SAFE or
/// UNSAFE.
struct Classifier {
    provider: Arc<ScriptedProvider>,
}

#[agentloop_types::async_trait]
impl OutputGuardrail for Classifier {
    fn name(&self) -> &str {
        "classifier"
    }
    async fn check(&self, answer: &str, _: Option<&Value>) -> Result<GuardrailVerdict, HookError> {
        let mut options = LoopOptions::default();
        options.request.system_prompt = Some("Answer SAFE or UNSAFE.".into());
        let verdict = collect(run(
            options,
            user(answer),
            RunDeps::new(self.provider.clone()).with_run_id("classify"),
        ))
        .await;
        match verdict.final_text().as_deref() {
            Some("SAFE") => Ok(GuardrailVerdict::Pass),
            Some(other) => Ok(GuardrailVerdict::Trip {
                reason: format!("the classifier said {other}"),
            }),
            None => Err(HookError::new("the classifier gave no answer")),
        }
    }
}

/// Refuses calls whose `text` starts with `rm`, withholds results that
/// hold `secret`.
struct ToolCheck;

#[agentloop_types::async_trait]
impl ToolGuardrail for ToolCheck {
    fn name(&self) -> &str {
        "tool-check"
    }
    async fn check_call(&self, _: &str, arguments: &Value) -> Result<GuardrailVerdict, HookError> {
        Ok(
            if arguments["text"].as_str().unwrap_or("").starts_with("rm") {
                GuardrailVerdict::Trip {
                    reason: "deleting is not allowed".into(),
                }
            } else {
                GuardrailVerdict::Pass
            },
        )
    }
    async fn check_result(
        &self,
        _: &str,
        _: &Value,
        result: &str,
        _: bool,
    ) -> Result<GuardrailVerdict, HookError> {
        Ok(if result.contains("secret") {
            GuardrailVerdict::Trip {
                reason: "the result holds a secret".into(),
            }
        } else {
            GuardrailVerdict::Pass
        })
    }
}

fn city_schema() -> OutputSchema {
    OutputSchema::new(
        "city",
        json!({
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"]
        }),
    )
}

async fn events(
    provider: &Arc<ScriptedProvider>,
    options: LoopOptions,
    deps: impl FnOnce(RunDeps) -> RunDeps,
) -> Vec<LoopEvent> {
    let base = RunDeps::new(provider.clone())
        .with_tools([echo()])
        .with_run_id("run");
    run(options, user("go"), deps(base)).collect().await
}

fn snapshot(name: &str, events: &[LoopEvent]) -> LoopResult {
    let result = check_invariants(events);
    insta::assert_snapshot!(name, render_events(events));
    result
}

fn blocked(result: &LoopResult) -> (String, String, String) {
    match &result.status {
        LoopStatus::Error {
            error: LoopError::Blocked { by, name, reason },
        } => (by.clone(), name.clone(), reason.clone()),
        other => panic!("not blocked: {other:?}"),
    }
}

fn pii() -> Arc<dyn OutputGuardrail> {
    Arc::new(Forbid {
        name: "pii",
        word: "555-",
    })
}

#[tokio::test]
async fn an_answer_that_passes_completes() {
    let provider = ScriptedProvider::new([ScriptedTurn::new().text("Call the front desk.")]);
    let events = events(&provider, LoopOptions::default(), |d| {
        d.with_output_guardrail(pii())
    })
    .await;
    let result = snapshot("output_guardrail_pass", &events);
    assert_eq!(result.status.name(), "complete");
}

#[tokio::test]
async fn an_answer_that_trips_ends_the_run_blocked_naming_the_guardrail() {
    let provider = ScriptedProvider::new([ScriptedTurn::new().text("Call Bob at 555-1234.")]);
    let events = events(&provider, LoopOptions::default(), |d| {
        d.with_output_guardrail(pii())
    })
    .await;
    let result = snapshot("output_guardrail_trip", &events);
    assert_eq!(
        blocked(&result),
        ("guardrail".into(), "pii".into(), "mentions 555-".into())
    );
    assert_eq!(
        result.status.name(),
        "error",
        "a withheld answer is no completion"
    );
}

#[tokio::test]
async fn structured_output_is_checked_as_text_and_through_final_output() {
    // Native: the provider holds the answer to the schema; the guardrail
    // sees the validated output.
    let native = |text: &str| {
        ScriptedProvider::speaking(ApiKind::OpenaiChat, [ScriptedTurn::new().text(text)])
    };
    let options = LoopOptions {
        output_schema: Some(city_schema()),
        ..Default::default()
    };
    let forbid_paris = || -> Arc<dyn OutputGuardrail> {
        Arc::new(Forbid {
            name: "no-paris",
            word: "Paris",
        })
    };
    let passed = events(&native(r#"{"city":"Lyon"}"#), options.clone(), |d| {
        d.with_output_guardrail(forbid_paris())
    })
    .await;
    let result = check_invariants(&passed);
    assert!(matches!(
        &result.status,
        LoopStatus::Complete { output: Some(o), .. } if o["city"] == "Lyon"
    ));
    let tripped = events(&native(r#"{"city":"Paris"}"#), options.clone(), |d| {
        d.with_output_guardrail(forbid_paris())
    })
    .await;
    let result = snapshot("output_guardrail_structured_trip", &tripped);
    assert_eq!(blocked(&result).1, "no-paris");

    // Tool mode: the answer is the `final_output` call's input.
    let tool_mode = ScriptedProvider::new([ScriptedTurn::new().tool_call(
        "f1",
        "final_output",
        json!({"city": "Paris"}),
    )]);
    let tripped = events(&tool_mode, options, |d| {
        d.with_output_guardrail(forbid_paris())
    })
    .await;
    let result = snapshot("output_guardrail_final_output_trip", &tripped);
    assert_eq!(blocked(&result).1, "no-paris");
}

#[tokio::test]
async fn a_guardrail_that_fails_to_answer_trips_and_says_why() {
    let provider = ScriptedProvider::new([ScriptedTurn::new().text("Fine.")]);
    let events = events(&provider, LoopOptions::default(), |d| {
        d.with_output_guardrail(Arc::new(Broken))
    })
    .await;
    let result = snapshot("output_guardrail_failed", &events);
    assert_eq!(
        blocked(&result),
        (
            "guardrail".into(),
            "broken".into(),
            "the check failed".into()
        )
    );
}

#[tokio::test]
async fn a_classifier_guardrail_is_a_model_call_of_its_own() {
    for (verdict, status) in [("SAFE", "complete"), ("UNSAFE", "error")] {
        let classifier = ScriptedProvider::new([ScriptedTurn::new().text(verdict)]);
        let provider = ScriptedProvider::new([ScriptedTurn::new().text("Here is the plan.")]);
        let guard = Arc::new(Classifier {
            provider: classifier.clone(),
        });
        let events = events(&provider, LoopOptions::default(), |d| {
            d.with_output_guardrail(guard)
        })
        .await;
        let result = check_invariants(&events);
        assert_eq!(result.status.name(), status, "{verdict}");
        let asked = classifier.requests();
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0].messages[0].text(), "Here is the plan.");
    }
}

#[tokio::test]
async fn a_tool_guardrail_refuses_a_call_before_it_runs() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("t1", "echo", json!({"text": "rm -rf /"})),
        ScriptedTurn::new().text("Understood."),
    ]);
    let events = events(&provider, LoopOptions::default(), |d| {
        d.with_tool_guardrail(Arc::new(ToolCheck))
    })
    .await;
    let result = snapshot("tool_guardrail_before_trip", &events);
    assert_eq!(result.status.name(), "complete");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.kind, EventKind::ToolStart(_))),
        "a refused call never starts"
    );
    let sent = &provider.requests()[1];
    let answer = sent
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .next()
        .unwrap();
    assert!(answer.is_error);
    assert_eq!(
        answer.content,
        "Blocked by guardrail `tool-check`: deleting is not allowed"
    );
}

#[tokio::test]
async fn a_tool_guardrail_withholds_a_result_after_the_call() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("t1", "echo", json!({"text": "the secret is 42"})),
        ScriptedTurn::new().text("Understood."),
    ]);
    let events = events(&provider, LoopOptions::default(), |d| {
        d.with_tool_guardrail(Arc::new(ToolCheck))
    })
    .await;
    snapshot("tool_guardrail_after_trip", &events);
    let sent = &provider.requests()[1];
    let answer = sent
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .next()
        .unwrap();
    assert!(answer.is_error);
    assert_eq!(
        answer.content,
        "The result was withheld by guardrail `tool-check`: the result holds a secret"
    );
}

#[tokio::test]
async fn a_tool_guardrail_that_passes_changes_nothing() {
    let provider = ScriptedProvider::new([
        ScriptedTurn::new().tool_call("t1", "echo", json!({"text": "hello"})),
        ScriptedTurn::new().text("Done."),
    ]);
    let events = events(&provider, LoopOptions::default(), |d| {
        d.with_tool_guardrail(Arc::new(ToolCheck))
    })
    .await;
    let result = snapshot("tool_guardrail_pass", &events);
    assert_eq!(result.status.name(), "complete");
    let sent = &provider.requests()[1];
    let answer = sent
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .next()
        .unwrap();
    assert_eq!((answer.content.as_str(), answer.is_error), ("hello", false));
}
