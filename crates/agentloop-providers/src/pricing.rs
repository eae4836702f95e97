//! Prices of models, and the cost of a turn.
//!
//! The prices are data (`pricing.json`, embedded at build time); callers
//! can load their own table with [`PricingTable::from_json`]. A model not in
//! the table is never priced at zero silently: its cost is marked
//! [`TokenTotals::cost_unreliable`].

use std::sync::{Arc, OnceLock};

use agentloop_types::TokenTotals;
use serde::Deserialize;

const DEFAULT_TABLE: &str = include_str!("pricing.json");

/// What one model costs, in US dollars.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ModelPrice {
    /// Model id, without a dated snapshot suffix.
    pub model: String,
    /// Per million input tokens.
    pub input: f64,
    /// Per million output tokens (reasoning included).
    pub output: f64,
    /// Per million tokens written to the prompt cache (5-minute lifetime).
    #[serde(default)]
    pub cache_write: f64,
    /// Per million tokens written to the prompt cache with a 1-hour
    /// lifetime; `cache_write` when absent.
    #[serde(default)]
    pub cache_write_1h: Option<f64>,
    /// Per million tokens read from the prompt cache.
    #[serde(default)]
    pub cache_read: f64,
    /// Per server-side web search; searches make the cost unreliable when
    /// absent.
    #[serde(default)]
    pub web_search: Option<f64>,
}

/// A table of [`ModelPrice`]s.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PricingTable {
    /// The entries.
    pub models: Vec<ModelPrice>,
}

/// Token counts a turn reports beyond [`TokenTotals`], needed for pricing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ExtraUsage {
    /// Of `cache_creation_tokens`, those written with a 1-hour lifetime.
    pub cache_write_1h: u64,
}

impl PricingTable {
    /// Parses a table in the format of the built-in one.
    pub fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(json)
    }

    /// The built-in table of current Anthropic and OpenAI models.
    pub fn builtin() -> Arc<Self> {
        static TABLE: OnceLock<Arc<PricingTable>> = OnceLock::new();
        TABLE
            .get_or_init(|| {
                // The embedded table is checked by a unit test; an empty table
                // (every cost unreliable) is the safe fallback.
                Arc::new(Self::from_json(DEFAULT_TABLE).unwrap_or(Self { models: Vec::new() }))
            })
            .clone()
    }

    /// The entry for `model`: an exact match, or the entry whose id followed
    /// by a dated snapshot suffix (or `-latest`) is `model`.
    pub fn lookup(&self, model: &str) -> Option<&ModelPrice> {
        self.models.iter().find(|p| p.model == model).or_else(|| {
            self.models.iter().find(|p| {
                model
                    .strip_prefix(p.model.as_str())
                    .and_then(|rest| rest.strip_prefix('-'))
                    .is_some_and(is_snapshot_suffix)
            })
        })
    }

    /// Sets `cost` and `cost_unreliable` on `usage` for `model`.
    pub fn apply(&self, model: &str, usage: &mut TokenTotals) {
        self.apply_extra(model, usage, ExtraUsage::default());
    }

    pub(crate) fn apply_extra(&self, model: &str, usage: &mut TokenTotals, extra: ExtraUsage) {
        let Some(price) = self.lookup(model) else {
            usage.cost = 0.0;
            usage.cost_unreliable = true;
            return;
        };
        let per_m = |tokens: u64, rate: f64| tokens as f64 * rate / 1_000_000.0;
        let write_1h = extra.cache_write_1h.min(usage.cache_creation_tokens);
        let write_5m = usage.cache_creation_tokens - write_1h;
        let mut cost = per_m(usage.input_tokens, price.input)
            + per_m(usage.output_tokens, price.output)
            + per_m(write_5m, price.cache_write)
            + per_m(write_1h, price.cache_write_1h.unwrap_or(price.cache_write))
            + per_m(usage.cache_read_tokens, price.cache_read);
        let mut unreliable = false;
        if usage.web_search_count > 0 {
            match price.web_search {
                Some(each) => cost += usage.web_search_count as f64 * each,
                None => unreliable = true,
            }
        }
        // Rounded to a billionth of a dollar so sums print cleanly.
        usage.cost = (cost * 1e9).round() / 1e9;
        usage.cost_unreliable = unreliable;
    }
}

fn is_snapshot_suffix(rest: &str) -> bool {
    rest == "latest"
        || (!rest.is_empty()
            && rest.chars().all(|c| c.is_ascii_digit() || c == '-')
            && rest.chars().filter(char::is_ascii_digit).count() >= 4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_table_parses_and_matches_snapshots() {
        let table = PricingTable::from_json(DEFAULT_TABLE).unwrap();
        assert!(table.models.len() > 20);
        let t = PricingTable::builtin();
        assert_eq!(
            t.lookup("claude-sonnet-4-5-20250929").unwrap().model,
            "claude-sonnet-4-5"
        );
        assert_eq!(
            t.lookup("gpt-4.1-nano-2025-04-14").unwrap().model,
            "gpt-4.1-nano"
        );
        assert_eq!(t.lookup("gpt-5-nano").unwrap().model, "gpt-5-nano");
        assert_eq!(
            t.lookup("claude-3-7-sonnet-latest").unwrap().model,
            "claude-3-7-sonnet"
        );
        // A newer model is not priced as an older one with a shared prefix.
        assert!(t.lookup("gpt-5.2").is_none());
        assert!(t.lookup("claude-opus-4-6").is_none());
    }

    #[test]
    fn cost_per_step_and_unknown_model() {
        let t = PricingTable::builtin();
        let mut usage = TokenTotals {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cache_creation_tokens: 200_000,
            cache_read_tokens: 1_000_000,
            web_search_count: 2,
            ..Default::default()
        };
        t.apply_extra(
            "claude-sonnet-4-5",
            &mut usage,
            ExtraUsage {
                cache_write_1h: 100_000,
            },
        );
        let expected = 3.0 + 1.5 + 0.375 + 0.6 + 0.3 + 0.02;
        assert!((usage.cost - expected).abs() < 1e-9, "{}", usage.cost);
        assert!(!usage.cost_unreliable);

        t.apply("some-local-model", &mut usage);
        assert_eq!(usage.cost, 0.0);
        assert!(usage.cost_unreliable);

        t.apply("gpt-4.1-nano", &mut usage);
        assert!(usage.cost_unreliable, "web searches with no price");
    }
}
