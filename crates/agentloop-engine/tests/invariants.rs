//! Randomised runs: random scripts with random tool counts, failures,
//! provider errors and cancellation points. After every run the engine's
//! invariants hold (see `common::check_invariants`).

mod common;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::{RunDeps, cancel_waiting};
use agentloop_types::{
    CancellationToken, Decision, LoopOptions, LoopStatus, ProviderError, ProviderErrorKind, Wait,
};
use common::*;
use futures::StreamExt;
use proptest::prelude::*;
use serde_json::json;

#[derive(Debug, Clone)]
enum Call {
    Echo,
    Slow(u64),
    Alone(u64),
    Fail,
    Panic,
    Unknown,
    BadJson,
    Ask,
    Return,
    /// A call that waits for approval.
    Guarded,
}

#[derive(Debug, Clone)]
struct Turn {
    calls: Vec<Call>,
    text_chunks: usize,
    delay: u64,
    error: bool,
    cut: bool,
    input_tokens: u64,
}

fn call() -> impl Strategy<Value = Call> {
    prop_oneof![
        4 => Just(Call::Echo),
        3 => (1u64..40).prop_map(Call::Slow),
        1 => (1u64..40).prop_map(Call::Alone),
        1 => Just(Call::Fail),
        1 => Just(Call::Panic),
        1 => Just(Call::Unknown),
        1 => Just(Call::BadJson),
        1 => Just(Call::Ask),
        1 => Just(Call::Return),
        2 => Just(Call::Guarded),
    ]
}

fn turn() -> impl Strategy<Value = Turn> {
    (
        prop::collection::vec(call(), 0..5),
        0usize..3,
        0u64..30,
        prop::bool::weighted(0.08),
        prop::bool::weighted(0.04),
        0u64..1000,
    )
        .prop_map(
            |(calls, text_chunks, delay, error, cut, input_tokens)| Turn {
                calls,
                text_chunks,
                delay,
                error,
                cut,
                input_tokens,
            },
        )
}

fn script(turns: &[Turn]) -> Vec<ScriptedTurn> {
    turns
        .iter()
        .enumerate()
        .map(|(t, turn)| {
            let mut scripted = ScriptedTurn::new().usage(turn.input_tokens, 7);
            if turn.text_chunks > 0 {
                let chunks: Vec<String> = (0..turn.text_chunks).map(|i| format!("w{i} ")).collect();
                let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
                scripted = scripted.text_chunks(&chunks);
            }
            scripted = scripted.delay_ms(turn.delay);
            for (c, call) in turn.calls.iter().enumerate() {
                let id = format!("t{t}_{c}");
                scripted = match call {
                    Call::Echo => scripted.tool_call(&id, "echo", json!({"text": id})),
                    Call::Slow(ms) => {
                        scripted.tool_call(&id, "slow", json!({"ms": ms, "steps": 2}))
                    }
                    Call::Alone(ms) => scripted.tool_call(&id, "solo", json!({"ms": ms})),
                    Call::Fail => scripted.tool_call(&id, "fail", json!({})),
                    Call::Panic => scripted.tool_call(&id, "boom", json!({})),
                    Call::Unknown => scripted.tool_call(&id, "nope", json!({})),
                    Call::BadJson => scripted.tool_call_raw(&id, "echo", &["{\"te"]),
                    Call::Ask => scripted.tool_call(&id, "ask_user", json!({"question": "?"})),
                    Call::Return => scripted.tool_call(&id, "return", json!({"value": 1})),
                    Call::Guarded => scripted.tool_call(&id, "write", json!({"path": id})),
                };
            }
            if turn.error {
                scripted = scripted.error(ProviderError::new(ProviderErrorKind::Api, "boom"));
            } else if turn.cut {
                scripted = scripted.cut();
            }
            scripted
        })
        .collect()
}

fn random_decision(wait: &Wait, pick: u8) -> Decision {
    match (wait, pick % 4) {
        (Wait::Question { .. }, 0) => Decision::Reject {
            reason: "no".into(),
        },
        (Wait::Question { .. }, _) => Decision::Answer { text: "yes".into() },
        (Wait::Approval { .. }, 0) => Decision::Approve { arguments: None },
        (Wait::Approval { .. }, 1) => Decision::ApproveAlways,
        (Wait::Approval { .. }, 2) => Decision::Approve {
            arguments: Some(json!({"path": "edited"})),
        },
        (Wait::Approval { .. }, _) => Decision::Reject {
            reason: "no".into(),
        },
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_for_random_runs(
        turns in prop::collection::vec(turn(), 1..6),
        cancel_at in prop::option::weighted(0.3, 0u64..120),
        concurrency in 1usize..4,
        max_iterations in 1u32..6,
        choices in prop::collection::vec(0u8..6, 12),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        runtime.block_on(async {
            let cancel = CancellationToken::new();
            if let Some(ms) = cancel_at {
                cancel_after(&cancel, ms);
            }
            let tools = vec![
                echo(),
                slow("slow", false),
                slow("solo", true),
                failing(),
                panicking(),
                asking(),
                returning(),
                writer().0,
            ];
            let options = LoopOptions {
                tool_concurrency: concurrency,
                max_iterations,
                ..LoopOptions::default()
            };
            let provider = ScriptedProvider::new(script(&turns));
            let events = run_events(
                provider.clone(),
                tools.clone(),
                options.clone(),
                user("go"),
                cancel,
            )
            .await;
            let mut result = check_invariants(&events);
            // While the run waits for a person, decide at random (or
            // cancel); every resumed part keeps the invariants and the
            // whole history stays valid.
            let mut choices = choices.iter().copied().cycle();
            while let LoopStatus::Suspended { pending, state: Some(state) } = &result.status {
                let choice = choices.next().unwrap_or_default();
                let events = if choice == 5 {
                    let deps = RunDeps::new(provider.clone()).with_tools(tools.clone());
                    cancel_waiting(options.clone(), (**state).clone(), deps)
                        .unwrap()
                        .collect()
                        .await
                } else {
                    let decisions = pending
                        .iter()
                        .map(|item| {
                            let pick = choices.next().unwrap_or_default();
                            (item.call.id.clone(), random_decision(&item.wait, pick))
                        })
                        .collect();
                    decide_events(
                        provider.clone(),
                        tools.clone(),
                        options.clone(),
                        (**state).clone(),
                        decisions,
                    )
                    .await
                };
                result = check_resumed(result.tokens, &events);
            }
        });
    }
}
