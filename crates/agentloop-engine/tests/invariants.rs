//! Randomised runs: random scripts with random tool counts, failures,
//! provider errors and cancellation points. After every run the engine's
//! invariants hold (see `common::check_invariants`).

mod common;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_types::{CancellationToken, LoopOptions, ProviderError, ProviderErrorKind};
use common::*;
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_for_random_runs(
        turns in prop::collection::vec(turn(), 1..6),
        cancel_at in prop::option::weighted(0.3, 0u64..120),
        concurrency in 1usize..4,
        max_iterations in 1u32..6,
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
            ];
            let options = LoopOptions {
                tool_concurrency: concurrency,
                max_iterations,
                ..LoopOptions::default()
            };
            let events = run_events(
                ScriptedProvider::new(script(&turns)),
                tools,
                options,
                user("go"),
                cancel,
            )
            .await;
            check_invariants(&events);
        });
    }
}
