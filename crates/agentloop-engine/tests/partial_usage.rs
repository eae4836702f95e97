//! A turn that fails after its usage arrived still counts that usage: the
//! run's totals and its `tokens_consumed` events include what was billed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_engine::{RunDeps, run};
use agentloop_types::{
    EventKind, LoopOptions, LoopStatus, Message, PartialTurn, ProviderError, ProviderErrorKind,
    TokenTotals, TokensConsumedEvent,
};
use futures::StreamExt;

#[tokio::test]
async fn a_cut_turn_keeps_its_billed_tokens() {
    let billed = TokenTotals {
        input_tokens: 1200,
        output_tokens: 80,
        cost_unreliable: true,
        ..TokenTotals::default()
    };
    let error = ProviderError {
        kind: ProviderErrorKind::Connection,
        message: "the stream ended before message_stop".to_owned(),
        status: None,
        error_type: None,
        request_id: None,
        partial: Some(Box::new(PartialTurn {
            stop_reason: None,
            usage: Some(billed),
        })),
    };
    let provider = ScriptedProvider::new([ScriptedTurn::new().text("half an ans").error(error)]);
    let mut events = run(
        LoopOptions::default(),
        vec![Message::user_text("u1", "hi")],
        RunDeps::new(provider),
    );
    let mut consumed = TokenTotals::default();
    let mut result = None;
    while let Some(event) = events.next().await {
        if let EventKind::TokensConsumed(TokensConsumedEvent { tokens }) = &event.kind {
            consumed += *tokens;
        }
        if let Some(r) = event.root_result() {
            result = Some(r.clone());
        }
    }
    let result = result.unwrap();
    assert!(
        matches!(result.status, LoopStatus::Error { .. }),
        "{:?}",
        result.status
    );
    assert_eq!(result.tokens.input_tokens, 1200);
    assert_eq!(result.tokens.output_tokens, 80);
    assert!(result.tokens.cost_unreliable);
    assert_eq!(
        consumed.input_tokens, 1200,
        "a tokens_consumed event says so"
    );
}
