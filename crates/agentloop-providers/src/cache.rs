//! Prompt caching: what to ask of each API.
//!
//! Anthropic caches only up to blocks marked with `cache_control` (at most
//! four per request), so the adapter marks them by this policy:
//!
//! 1. the last tool definition (tools come first in the cached prefix);
//! 2. the end of the system prompt (tools and system, reused by every
//!    step of a run);
//! 3. the last block of the latest user message (the moving end: the next
//!    step reads everything up to here from the cache);
//! 4. the last block of the user message before it (where the previous
//!    request wrote, so a step that added more than the API's 20-block
//!    lookback still reads the previous prefix).
//!
//! Each mark is placed on the last block that may carry one (thinking
//! blocks may not), and only where that part exists. Prefixes shorter than
//! the model's minimum are simply not cached by the API. OpenAI caches
//! long prefixes automatically; `prompt_cache_key` groups requests that
//! share a prefix so they reach the same cache. Cached tokens are reported
//! in `TokenTotals::cache_read_tokens` (and writes, for Anthropic, in
//! `cache_creation_tokens`) and priced at their own rates.

use serde_json::{Value, json};

/// How long an Anthropic cache entry lives after its last use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CacheTtl {
    /// Five minutes, written at 1.25 times the input price.
    #[default]
    FiveMinutes,
    /// One hour, written at twice the input price.
    OneHour,
}

/// Prompt-caching settings of a [`ProviderConfig`](crate::ProviderConfig).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptCache {
    /// Mark Anthropic requests with `cache_control` breakpoints (default
    /// on).
    pub enabled: bool,
    /// Lifetime of Anthropic cache entries.
    pub ttl: CacheTtl,
    /// OpenAI `prompt_cache_key`: requests with the same key and prefix
    /// are routed to the same cache (e.g. one key per chat).
    pub key: Option<String>,
}

impl Default for PromptCache {
    fn default() -> Self {
        Self {
            enabled: true,
            ttl: CacheTtl::FiveMinutes,
            key: None,
        }
    }
}

impl PromptCache {
    /// No breakpoints and no key.
    pub fn disabled() -> Self {
        Self {
            enabled: false,
            ..Self::default()
        }
    }

    /// The `cache_control` value for Anthropic.
    pub(crate) fn control(&self) -> Value {
        match self.ttl {
            CacheTtl::FiveMinutes => json!({"type": "ephemeral"}),
            CacheTtl::OneHour => json!({"type": "ephemeral", "ttl": "1h"}),
        }
    }
}

/// Content blocks Anthropic lets carry `cache_control`.
fn can_carry_mark(block: &Value) -> bool {
    !matches!(
        block.get("type").and_then(Value::as_str),
        Some("thinking" | "redacted_thinking") | None
    )
}

/// Marks the last block of `blocks` that may carry a breakpoint; `false`
/// when none may.
pub(crate) fn mark_last(blocks: &mut [Value], control: &Value) -> bool {
    match blocks.iter_mut().rev().find(|b| can_carry_mark(b)) {
        Some(Value::Object(block)) => {
            block.insert("cache_control".into(), control.clone());
            true
        }
        _ => false,
    }
}
