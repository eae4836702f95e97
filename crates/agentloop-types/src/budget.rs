//! The budget port: spend above one run (a user's, a project's, a task's)
//! reserved before each model call and settled after it.
//!
//! A driver given a [`Budget`] asks it before every model request with an
//! estimate of the call ([`BudgetCall`]); a refusal ends the run
//! `limit_exceeded` (limit `budget`) naming the budget, with no request
//! sent. After the call the driver settles the hold with what the call
//! actually spent (nothing when it failed before its usage arrived). A
//! host that stores budgets where several processes share them reserves
//! in one atomic write, so processes racing one budget overspend it by
//! no more than the difference between a call's estimate and its actual
//! spend.

use async_trait::async_trait;

use crate::tokens::TokenTotals;

/// Tokens and cost a model call is expected to spend, or spent.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spend {
    /// Input plus output tokens.
    pub tokens: u64,
    /// Cost in US dollars.
    pub cost: f64,
}

impl Spend {
    /// What a turn's totals spent.
    pub fn of(totals: &TokenTotals) -> Self {
        Self {
            tokens: totals.total_tokens(),
            cost: totals.cost,
        }
    }

    /// The larger of each part of `self` and `other`.
    pub fn max(self, other: Spend) -> Self {
        Self {
            tokens: self.tokens.max(other.tokens),
            cost: self.cost.max(other.cost),
        }
    }
}

/// One model call about to go out, as the driver tells its [`Budget`].
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetCall {
    /// The run's id.
    pub run_id: String,
    /// The run's model turn this call is (1 for the first).
    pub iteration: u32,
    /// The largest spend of one of the run's earlier calls in this
    /// execution; `None` before its first. The port makes its estimate
    /// from it.
    pub largest_earlier: Option<Spend>,
    /// The request's cap on output tokens, when it sets one.
    pub max_output_tokens: Option<u32>,
}

/// Spend held for one model call until it is settled.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetHold {
    /// Names the hold to the port that gave it (a port may leave it
    /// empty when it holds nothing).
    pub id: String,
    /// What was reserved.
    pub estimate: Spend,
}

/// A model call refused: it would take a budget past its limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the budget {budget} is spent")]
pub struct BudgetRefusal {
    /// Which budget, said for a person (e.g. `project p1 cost per month:
    /// 5 USD`).
    pub budget: String,
}

/// Spend reserved before each model call and settled after it.
#[async_trait]
pub trait Budget: Send + Sync {
    /// Reserves the call's estimate against every budget that applies:
    /// `Ok(Some(hold))` when all took it (or the port wants to hear what
    /// the call spent all the same), `Ok(None)` when nothing is to be
    /// settled, `Err` naming a budget that would go past its limit (then
    /// none holds anything).
    async fn reserve(&self, call: &BudgetCall) -> Result<Option<BudgetHold>, BudgetRefusal>;

    /// Replaces the hold's reservation with what the call spent.
    async fn settle(&self, hold: BudgetHold, actual: Spend);
}

/// A budget shows only that it is one (a tool's context is printed).
impl std::fmt::Debug for dyn Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Budget")
    }
}
