//! Token totals with cost (seed 000's `TokenTotals`).

use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};

/// Tokens and cost of one model turn, or the sum of several.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct TokenTotals {
    /// Input tokens billed at the full rate.
    pub input_tokens: u64,
    /// Output tokens, reasoning included.
    pub output_tokens: u64,
    /// Output tokens spent on reasoning (a part of `output_tokens`).
    pub reasoning_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_creation_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Server-side web searches.
    pub web_search_count: u64,
    /// Cost in US dollars.
    pub cost: f64,
    /// True when some part of `cost` could not be priced (unknown model).
    pub cost_unreliable: bool,
}

impl TokenTotals {
    /// Input plus output tokens, cache included.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_creation_tokens)
            .saturating_add(self.cache_read_tokens)
            .saturating_add(self.output_tokens)
    }
}

// Saturating: a provider reporting absurd counts must not panic the loop.
impl AddAssign for TokenTotals {
    fn add_assign(&mut self, rhs: Self) {
        self.input_tokens = self.input_tokens.saturating_add(rhs.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(rhs.output_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(rhs.reasoning_tokens);
        self.cache_creation_tokens = self
            .cache_creation_tokens
            .saturating_add(rhs.cache_creation_tokens);
        self.cache_read_tokens = self.cache_read_tokens.saturating_add(rhs.cache_read_tokens);
        self.web_search_count = self.web_search_count.saturating_add(rhs.web_search_count);
        self.cost += rhs.cost;
        self.cost_unreliable |= rhs.cost_unreliable;
    }
}

impl Add for TokenTotals {
    type Output = Self;

    fn add(mut self, rhs: Self) -> Self {
        self += rhs;
        self
    }
}

impl std::iter::Sum for TokenTotals {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Self::default(), Add::add)
    }
}
