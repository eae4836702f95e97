//! The caching benchmark's mock applies the documented rules, and the
//! breakpoint policy makes every step after the first read its prefix.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../examples/support/cache_mock.rs"]
mod cache_mock;

use agentloop_providers::{HttpProvider, PromptCache, ProviderConfig};
use cache_mock::{CacheMock, request_at};

#[tokio::test]
async fn each_step_reads_what_the_previous_one_wrote() {
    let provider = HttpProvider::new(ProviderConfig::anthropic("k")).unwrap();
    let mut mock = CacheMock::default();
    let mut previous_total = 0;
    for step in 0..6 {
        let body = provider.request_body(&request_at(step)).await.unwrap();
        let usage = mock.request(&body);
        if step == 0 {
            assert_eq!(usage.read, 0, "nothing cached yet");
            assert!(usage.write > 1024);
        } else {
            assert_eq!(usage.read, previous_total, "step {step}: {usage:?}");
        }
        assert!(
            usage.input < 50,
            "only what follows the last mark: {usage:?}"
        );
        previous_total = usage.read + usage.write + usage.input;
    }
}

#[tokio::test]
async fn without_marks_nothing_is_cached_and_caching_costs_less() {
    let plain = cache_mock::run(30, PromptCache::disabled()).await.unwrap();
    assert_eq!(plain.cache_read_tokens + plain.cache_creation_tokens, 0);
    let cached = cache_mock::run(30, PromptCache::default()).await.unwrap();
    assert_eq!(
        cached.input_tokens + cached.cache_read_tokens + cached.cache_creation_tokens,
        plain.input_tokens
    );
    assert!(!cached.cost_unreliable && !plain.cost_unreliable);
    assert!(
        cached.cost < plain.cost / 3.0,
        "{} vs {}",
        cached.cost,
        plain.cost
    );
}
