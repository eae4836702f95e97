//! `Agent::run_typed`: a typed answer through each API's request form,
//! retried after an answer that does not fit, and typed errors otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agentloop::engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop::prelude::*;
use agentloop::types::{
    ApiKind, FINAL_OUTPUT_TOOL, LoopError, OutputMode, OutputSchema, StopReason,
};
use serde_json::json;

/// A city, as the model should describe it.
#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct City {
    /// Its name.
    name: String,
    /// People living there.
    population: u64,
}

fn agent(api: ApiKind, turns: Vec<ScriptedTurn>) -> (Agent, std::sync::Arc<ScriptedProvider>) {
    let provider = ScriptedProvider::speaking(api, turns);
    let agent = Agent::builder()
        .provider(provider.clone())
        .model("scripted")
        .build()
        .unwrap();
    (agent, provider)
}

fn oslo() -> City {
    City {
        name: "Oslo".into(),
        population: 709_000,
    }
}

#[tokio::test]
async fn a_typed_answer_through_every_api_form() {
    let text = r#"{"name":"Oslo","population":709000}"#;
    for api in [
        ApiKind::OpenaiChat,
        ApiKind::OpenaiResponses,
        ApiKind::Gemini,
    ] {
        let (agent, provider) = agent(api, vec![ScriptedTurn::new().text(text)]);
        let city: City = agent.run_typed("The capital of Norway?").await.unwrap();
        assert_eq!(city, oslo(), "{api:?}");
        let sent = provider.requests()[0].response_format.clone().unwrap();
        assert_eq!(sent.name, "City");
        assert_eq!(sent.schema["required"], json!(["name", "population"]));
        assert!(sent.schema.get("$schema").is_none());
    }
    // Anthropic: through the final_output tool.
    let call = ScriptedTurn::new().tool_call(
        "t1",
        FINAL_OUTPUT_TOOL,
        json!({"name": "Oslo", "population": 709000}),
    );
    let (agent, provider) = agent(ApiKind::AnthropicMessages, vec![call]);
    let city: City = agent.run_typed("The capital of Norway?").await.unwrap();
    assert_eq!(city, oslo());
    let request = &provider.requests()[0];
    assert_eq!(request.response_format, None);
    assert_eq!(request.tools[0].name, FINAL_OUTPUT_TOOL);
}

#[tokio::test]
async fn an_answer_that_does_not_fit_is_retried_then_typed() {
    let (agent, provider) = agent(
        ApiKind::OpenaiChat,
        vec![
            ScriptedTurn::new().text(r#"{"name":"Oslo","population":-5}"#),
            ScriptedTurn::new().text(r#"{"name":"Oslo","population":709000}"#),
        ],
    );
    let city: City = agent.run_typed("The capital of Norway?").await.unwrap();
    assert_eq!(city, oslo());
    assert_eq!(provider.requests().len(), 2);
}

#[tokio::test]
async fn the_agents_mode_and_retries_are_kept() {
    let provider =
        ScriptedProvider::speaking(ApiKind::OpenaiChat, [ScriptedTurn::new().text("Oslo!")]);
    let agent = Agent::builder()
        .provider(provider.clone())
        .model("scripted")
        .configure(|o| {
            o.output_schema = Some(
                OutputSchema::new("unused", json!({}))
                    .with_mode(OutputMode::Tool)
                    .with_max_retries(0),
            );
        })
        .build()
        .unwrap();
    let error = agent.run_typed::<City>("The capital?").await.unwrap_err();
    let TypedRunError::Ended(ended) = error else {
        panic!("{error:?}");
    };
    let LoopStatus::Error {
        error: LoopError::OutputInvalid { answer, .. },
    } = &ended.result.status
    else {
        panic!("{:?}", ended.result.status);
    };
    assert_eq!(answer, "Oslo!");
    let request = &provider.requests()[0];
    assert_eq!(request.tools[0].name, FINAL_OUTPUT_TOOL, "tool mode kept");
    assert_eq!(
        request.tools[0].input_schema["required"],
        json!(["name", "population"])
    );
}

#[tokio::test]
async fn a_refusal_is_a_typed_error() {
    let (agent, _) = agent(
        ApiKind::OpenaiChat,
        vec![ScriptedTurn::new().text("No.").stop(StopReason::REFUSAL)],
    );
    let error = agent
        .run_typed::<City>("Something not allowed")
        .await
        .unwrap_err();
    assert!(
        matches!(
            &error,
            TypedRunError::Ended(ended) if matches!(
                ended.result.status,
                LoopStatus::Error { error: LoopError::Refused { .. } }
            )
        ),
        "{error:?}"
    );
    assert_eq!(error.to_string(), "the run failed: the model refused");
}
