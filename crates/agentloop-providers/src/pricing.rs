//! The model table: context window, output cap and prices of each model,
//! and the cost of a turn.
//!
//! The table is data (`pricing.json`, embedded at build time); callers can
//! load their own with [`PricingTable::from_json`] or override entries
//! with [`PricingTable::merged`]. Nothing is guessed: a model missing from
//! the table, or a price missing for tokens that were used, marks the cost
//! [`TokenTotals::cost_unreliable`] instead of pricing at zero, and
//! [`PricingTable::limits`] answers `None` for a model whose context
//! window is not known.

use std::sync::{Arc, OnceLock};

use agentloop_types::TokenTotals;
use serde::Deserialize;

const DEFAULT_TABLE: &str = include_str!("pricing.json");

/// Rates in US dollars per million tokens; `None` is unknown.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Rates {
    /// Input tokens.
    #[serde(default)]
    pub input: Option<f64>,
    /// Output tokens (reasoning included).
    #[serde(default)]
    pub output: Option<f64>,
    /// Tokens written to the prompt cache (5-minute lifetime).
    #[serde(default)]
    pub cache_write: Option<f64>,
    /// Tokens written with a 1-hour lifetime; `cache_write` when absent.
    #[serde(default)]
    pub cache_write_1h: Option<f64>,
    /// Tokens read from the prompt cache.
    #[serde(default)]
    pub cache_read: Option<f64>,
}

/// Rates that replace the standard ones for a whole request whose prompt
/// is longer than `above` tokens (Gemini Pro, Claude Sonnet's 1M window).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct LongContextPrice {
    /// Prompt tokens (input plus cache) beyond which these rates apply.
    pub above: u64,
    /// The rates; a rate left out keeps the standard one.
    #[serde(flatten)]
    pub rates: Rates,
}

/// One entry of the model table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ModelPrice {
    /// Model id, without a dated snapshot suffix.
    pub model: String,
    /// Tokens the model accepts in one request, input and output together.
    #[serde(default)]
    pub context_window: Option<u64>,
    /// Most output tokens one turn may produce.
    #[serde(default)]
    pub max_output: Option<u64>,
    /// Standard rates.
    #[serde(flatten)]
    pub rates: Rates,
    /// Per server-side web search; searches make the cost unreliable when
    /// absent.
    #[serde(default)]
    pub web_search: Option<f64>,
    /// Rates for long prompts, if the model has them.
    #[serde(default)]
    pub long_context: Option<LongContextPrice>,
}

/// The size limits of a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelLimits {
    /// Tokens one request may hold, input and output together.
    pub context_window: u64,
    /// Most output tokens per turn, when known.
    pub max_output: Option<u64>,
}

/// The output cap per model turn for a model whose output limit the table
/// does not know (a local or self-hosted model, an OpenAI-compatible
/// server's): 1024 tokens. Without a cap such a server lets a turn run to
/// the end of its context, and a small model that loops (repeating a tool
/// argument, say) then spends minutes on one turn.
pub const UNKNOWN_MODEL_MAX_TOKENS: u32 = 1024;

/// The output cap per model turn asked for a model the table knows, when
/// the caller names none: 4096 tokens, or the model's own limit when that
/// is lower.
pub const KNOWN_MODEL_MAX_TOKENS: u32 = 4096;

/// The model table: a list of [`ModelPrice`] entries.
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

fn merge_rates(base: &mut Rates, over: &Rates) {
    let pick = |b: &mut Option<f64>, o: Option<f64>| {
        if o.is_some() {
            *b = o;
        }
    };
    pick(&mut base.input, over.input);
    pick(&mut base.output, over.output);
    pick(&mut base.cache_write, over.cache_write);
    pick(&mut base.cache_write_1h, over.cache_write_1h);
    pick(&mut base.cache_read, over.cache_read);
}

impl PricingTable {
    /// Parses a table in the format of the built-in one.
    pub fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(json)
    }

    /// The built-in table of current Anthropic, OpenAI and Gemini models.
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

    /// This table with `overrides` applied: an entry with the id of an
    /// existing one replaces the fields it gives (a context window for a
    /// fine-tune, a negotiated price), other entries are added and win
    /// over snapshot-suffix matches of the built-in ones.
    pub fn merged(&self, overrides: &PricingTable) -> PricingTable {
        let mut models = self.models.clone();
        let mut added = Vec::new();
        for over in &overrides.models {
            match models.iter_mut().find(|m| m.model == over.model) {
                Some(base) => {
                    merge_rates(&mut base.rates, &over.rates);
                    base.context_window = over.context_window.or(base.context_window);
                    base.max_output = over.max_output.or(base.max_output);
                    base.web_search = over.web_search.or(base.web_search);
                    if over.long_context.is_some() {
                        base.long_context = over.long_context.clone();
                    }
                }
                None => added.push(over.clone()),
            }
        }
        added.extend(models);
        PricingTable { models: added }
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

    /// The limits of `model`; `None` when the model, or its context
    /// window, is not in the table: an unknown window is never guessed.
    pub fn limits(&self, model: &str) -> Option<ModelLimits> {
        let entry = self.lookup(model)?;
        Some(ModelLimits {
            context_window: entry.context_window?,
            max_output: entry.max_output,
        })
    }

    /// The output cap per turn to ask for `model` when the caller names
    /// none: [`KNOWN_MODEL_MAX_TOKENS`] (or the model's own lower limit)
    /// for a model whose output limit the table knows, else
    /// [`UNKNOWN_MODEL_MAX_TOKENS`].
    pub fn default_max_tokens(&self, model: &str) -> u32 {
        match self.lookup(model).and_then(|entry| entry.max_output) {
            Some(max_output) => u32::try_from(max_output.min(u64::from(KNOWN_MODEL_MAX_TOKENS)))
                .unwrap_or(KNOWN_MODEL_MAX_TOKENS)
                .max(1),
            None => UNKNOWN_MODEL_MAX_TOKENS,
        }
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
        let prompt = usage
            .input_tokens
            .saturating_add(usage.cache_creation_tokens)
            .saturating_add(usage.cache_read_tokens);
        let mut rates = price.rates.clone();
        if let Some(long) = price.long_context.as_ref().filter(|l| prompt > l.above) {
            merge_rates(&mut rates, &long.rates);
        }
        let mut unreliable = false;
        let mut cost = 0.0;
        let write_1h = extra.cache_write_1h.min(usage.cache_creation_tokens);
        let parts = [
            (usage.input_tokens, rates.input),
            (usage.output_tokens, rates.output),
            (usage.cache_creation_tokens - write_1h, rates.cache_write),
            (write_1h, rates.cache_write_1h.or(rates.cache_write)),
            (usage.cache_read_tokens, rates.cache_read),
        ];
        for (tokens, rate) in parts {
            match rate {
                _ if tokens == 0 => {}
                Some(rate) => cost += tokens as f64 * rate / 1_000_000.0,
                None => unreliable = true,
            }
        }
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
    fn the_default_output_cap_follows_what_the_table_knows() {
        let t = PricingTable::builtin();
        assert_eq!(t.default_max_tokens("claude-sonnet-4-5"), 4096);
        assert_eq!(t.default_max_tokens("smollm2-135m-instruct"), 1024);
        assert_eq!(t.default_max_tokens(""), UNKNOWN_MODEL_MAX_TOKENS);
        let small = PricingTable::from_json(
            r#"{"models": [{"model": "tiny", "context_window": 2048, "max_output": 512}]}"#,
        )
        .unwrap();
        assert_eq!(small.default_max_tokens("tiny"), 512);
    }

    #[test]
    fn cost_per_step_and_unknown_model() {
        let t = PricingTable::builtin();
        let mut usage = TokenTotals {
            input_tokens: 100_000,
            output_tokens: 100_000,
            cache_creation_tokens: 20_000,
            cache_read_tokens: 50_000,
            web_search_count: 2,
            ..Default::default()
        };
        t.apply_extra(
            "claude-sonnet-4-5",
            &mut usage,
            ExtraUsage {
                cache_write_1h: 10_000,
            },
        );
        // Writes: 10k at 5 minutes ($3.75/M) and 10k at 1 hour ($6/M).
        let expected = 0.3 + 1.5 + 0.0375 + 0.06 + 0.015 + 0.02;
        assert!((usage.cost - expected).abs() < 1e-9, "{}", usage.cost);
        assert!(!usage.cost_unreliable);

        t.apply("some-local-model", &mut usage);
        assert_eq!(usage.cost, 0.0);
        assert!(usage.cost_unreliable);

        t.apply("gpt-4.1-nano", &mut usage);
        assert!(usage.cost_unreliable, "web searches with no price");

        // OpenAI has no cache-write price: written tokens are not free.
        let mut writes = TokenTotals {
            input_tokens: 10,
            cache_creation_tokens: 10,
            ..Default::default()
        };
        t.apply("gpt-4.1", &mut writes);
        assert!(writes.cost_unreliable);
    }

    #[test]
    fn long_prompts_use_the_long_context_rates() {
        let t = PricingTable::builtin();
        let mut short = TokenTotals {
            input_tokens: 200_000,
            output_tokens: 1_000_000,
            ..Default::default()
        };
        t.apply("gemini-2.5-pro", &mut short);
        assert!((short.cost - (0.25 + 10.0)).abs() < 1e-9, "{}", short.cost);
        let mut long = TokenTotals {
            input_tokens: 150_000,
            cache_read_tokens: 100_000,
            output_tokens: 1_000_000,
            ..Default::default()
        };
        t.apply("gemini-2.5-pro", &mut long);
        let expected = 0.15 * 2.5 + 0.1 * 0.25 + 15.0;
        assert!((long.cost - expected).abs() < 1e-9, "{}", long.cost);
    }

    #[test]
    fn limits_are_known_or_absent_and_overridable() {
        let t = PricingTable::builtin();
        assert_eq!(
            t.limits("claude-sonnet-4-5-20250929"),
            Some(ModelLimits {
                context_window: 200_000,
                max_output: Some(64_000)
            })
        );
        assert_eq!(t.limits("llama3.1:8b"), None, "unknown, not guessed");
        let overrides = PricingTable::from_json(
            r#"{"models": [
                {"model": "claude-sonnet-4-5", "context_window": 1000000},
                {"model": "llama3.1:8b", "context_window": 131072}
            ]}"#,
        )
        .unwrap();
        let merged = t.merged(&overrides);
        let sonnet = merged.lookup("claude-sonnet-4-5").unwrap();
        assert_eq!(sonnet.context_window, Some(1_000_000));
        assert_eq!(sonnet.rates.input, Some(3.0), "prices kept");
        let local = merged.limits("llama3.1:8b").unwrap();
        assert_eq!((local.context_window, local.max_output), (131_072, None));
        let mut usage = TokenTotals {
            input_tokens: 5,
            ..Default::default()
        };
        merged.apply("llama3.1:8b", &mut usage);
        assert!(usage.cost_unreliable, "no price given: not free");
        for entry in &t.models {
            assert!(
                entry.context_window.is_some() && entry.max_output.is_some(),
                "{}",
                entry.model
            );
        }
    }
}
