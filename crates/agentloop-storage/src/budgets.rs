//! Budgets above one run: money (US dollars) and tokens a user, a project,
//! a task or a schedule may spend per period (a day, a month, or in total), reserved
//! before each model call and settled after it ([`BudgetsStore`]).
//!
//! A reservation takes a call's estimate against every budget of the
//! call's scopes in one atomic write, and only if each stays within its
//! limit with it (spent, plus what other calls hold, plus this estimate);
//! settling replaces the estimate with what the call spent. Spend is
//! kept per period key (`2026-11-29` for a day, `2026-11` for a month,
//! `total`, all UTC): a new period starts from nothing.
//!
//! A hold carries the time it was reserved. One its process never
//! settled (the process stopped mid-call) would hold its estimate for
//! good; a reservation therefore first releases the holds of its budgets
//! reserved before the bound it is given, so a stopped process locks a
//! budget for no longer than that bound. A released hold still counts
//! what its call spent if it is settled after all.

use agentloop_types::Spend;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::error::{StorageError, StorageResult};

/// Whose budget it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetScopeKind {
    /// A user's: every run on the projects the user owns.
    User,
    /// A project's: every run on its tasks.
    Project,
    /// A task's: every run of the task.
    Task,
    /// A schedule's: every run one of its ticks started, and the runs
    /// its chain started after it.
    Schedule,
}

impl BudgetScopeKind {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Project => "project",
            Self::Task => "task",
            Self::Schedule => "schedule",
        }
    }

    /// Parses a stored name.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "user" => Some(Self::User),
            "project" => Some(Self::Project),
            "task" => Some(Self::Task),
            "schedule" => Some(Self::Schedule),
            _ => None,
        }
    }
}

/// One owner of budgets: a kind and its id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct BudgetScope {
    /// Whose.
    pub kind: BudgetScopeKind,
    /// The user's, project's or task's id.
    pub id: String,
}

impl BudgetScope {
    /// The scope of `kind` and `id`.
    pub fn new(kind: BudgetScopeKind, id: impl Into<String>) -> Self {
        Self {
            kind,
            id: id.into(),
        }
    }
}

/// Nano-dollars in one US dollar: the unit cost is counted in.
const NANOS_PER_USD: f64 = 1e9;

/// What a budget counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetMetric {
    /// Cost in US dollars.
    Cost,
    /// Input plus output tokens.
    Tokens,
}

impl BudgetMetric {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cost => "cost",
            Self::Tokens => "tokens",
        }
    }

    /// Parses a stored name.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "cost" => Some(Self::Cost),
            "tokens" => Some(Self::Tokens),
            _ => None,
        }
    }

    /// The part of `spend` this metric counts, in stored units.
    pub fn of(self, spend: Spend) -> i64 {
        match self {
            Self::Cost => self.units(spend.cost),
            Self::Tokens => i64::try_from(spend.tokens).unwrap_or(i64::MAX),
        }
    }

    /// An amount (US dollars or tokens) in the units it is stored and
    /// summed in: whole nano-dollars, or tokens. Sums of units are exact,
    /// where sums of fractions of dollars are not; an amount too large
    /// for them is the largest (`as` saturates), a negative one none.
    pub fn units(self, amount: f64) -> i64 {
        let scaled = match self {
            Self::Cost => amount * NANOS_PER_USD,
            Self::Tokens => amount,
        };
        (scaled.round() as i64).max(0)
    }

    /// Stored units as an amount (US dollars or tokens).
    pub fn amount(self, units: i64) -> f64 {
        match self {
            Self::Cost => units as f64 / NANOS_PER_USD,
            Self::Tokens => units as f64,
        }
    }
}

/// The period a budget's spend starts again after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetPeriod {
    /// A UTC day.
    Day,
    /// A UTC calendar month.
    Month,
    /// Never: the budget counts everything.
    Total,
}

impl BudgetPeriod {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Day => "day",
            Self::Month => "month",
            Self::Total => "total",
        }
    }

    /// Parses a stored name.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "day" => Some(Self::Day),
            "month" => Some(Self::Month),
            "total" => Some(Self::Total),
            _ => None,
        }
    }

    /// The key of the period Unix millisecond `now` falls in:
    /// `2026-11-29`, `2026-11` or `total`.
    pub fn key(self, now: i64) -> String {
        let date = crate::time::rfc3339(now);
        match self {
            Self::Day => date[..10].to_owned(),
            Self::Month => date[..7].to_owned(),
            Self::Total => "total".to_owned(),
        }
    }
}

/// One budget of a scope: at most `limit` of `metric` per `period`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BudgetLimit {
    /// What it counts.
    pub metric: BudgetMetric,
    /// When its spend starts again.
    pub period: BudgetPeriod,
    /// The most that may be spent in one period (US dollars or tokens).
    pub limit: f64,
}

/// A budget with its spend in the current period.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetUsage {
    /// Whose.
    pub scope: BudgetScope,
    /// The budget.
    pub limit: BudgetLimit,
    /// The period the spend is of.
    pub period_key: String,
    /// Spent by settled calls.
    pub spent: f64,
    /// Held by calls not settled yet.
    pub reserved: f64,
}

/// A named budget, said for a person: `project p1: cost per month 5`.
pub fn describe(scope: &BudgetScope, limit: &BudgetLimit) -> String {
    let per = match limit.period {
        BudgetPeriod::Day => "per day",
        BudgetPeriod::Month => "per month",
        BudgetPeriod::Total => "in total",
    };
    let unit = match limit.metric {
        BudgetMetric::Cost => " USD",
        BudgetMetric::Tokens => " tokens",
    };
    format!(
        "{} {}: {} {per} {}{unit}",
        scope.kind.as_str(),
        scope.id,
        limit.metric.as_str(),
        limit.limit
    )
}

/// What a reservation came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Reservation {
    /// No budget applies: nothing is held.
    NoBudget,
    /// Every budget of the scopes holds the estimate.
    Reserved,
    /// This budget would go past its limit; nothing is held.
    Refused {
        /// Whose.
        scope: BudgetScope,
        /// The budget.
        limit: BudgetLimit,
    },
}

/// Checks a scope's budgets before they are stored: finite limits not
/// below zero, each metric and period once.
pub fn check_limits(limits: &[BudgetLimit]) -> StorageResult<()> {
    for (i, limit) in limits.iter().enumerate() {
        if !limit.limit.is_finite() || limit.limit < 0.0 {
            return Err(StorageError::Invalid(format!(
                "a budget's limit must be a number of at least 0, not {}",
                limit.limit
            )));
        }
        if limits[..i]
            .iter()
            .any(|l| l.metric == limit.metric && l.period == limit.period)
        {
            return Err(StorageError::Invalid(format!(
                "two budgets of {} per {}",
                limit.metric.as_str(),
                limit.period.as_str()
            )));
        }
    }
    Ok(())
}

/// Budgets and their spend, reserved and settled atomically.
#[async_trait]
pub trait BudgetsStore: Send + Sync {
    /// Replaces every budget of `scope` with `limits` (none: the scope
    /// has no budget). Spend already counted stays. Refused (`Invalid`):
    /// a limit below zero or not finite, a metric and period twice.
    async fn set_budgets(
        &self,
        scope: &BudgetScope,
        limits: &[BudgetLimit],
        now: i64,
    ) -> StorageResult<()>;

    /// The budgets of `scope`, with their spend in the periods `now`
    /// falls in, ordered by metric and period.
    async fn budgets(&self, scope: &BudgetScope, now: i64) -> StorageResult<Vec<BudgetUsage>>;

    /// Reserves `estimate` under the new hold id `hold` against every
    /// budget of `scopes`, in the periods `now` falls in, in one atomic
    /// write: all of them take it, or (one would go past its limit)
    /// none does. Holds of those budgets reserved before `expire_before`
    /// (Unix ms) are released first, in the same write, whatever comes
    /// of this one.
    async fn reserve_budgets(
        &self,
        hold: &str,
        scopes: &[BudgetScope],
        estimate: Spend,
        now: i64,
        expire_before: i64,
    ) -> StorageResult<Reservation>;

    /// Settles hold `hold`: what it still reserves is released and
    /// `actual` is counted as spent, in the periods it reserved in (a
    /// hold released by age counts its spend all the same). A hold
    /// unknown (settled already, or that reserved nothing) changes
    /// nothing.
    async fn settle_budgets(&self, hold: &str, actual: Spend) -> StorageResult<()>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_sum_exactly_in_units() {
        let cost = BudgetMetric::Cost;
        let tenth = cost.units(0.1);
        assert_eq!(tenth, 100_000_000);
        assert_eq!(cost.amount(3 * tenth), 0.3);
        assert_eq!(cost.units(0.1 + 0.2), cost.units(0.3));
        assert_eq!(cost.units(-1.0), 0);
        assert_eq!(
            BudgetMetric::Tokens.of(Spend {
                tokens: 7,
                cost: 1.0
            }),
            7
        );
    }

    #[test]
    fn periods_have_utc_keys() {
        let now = 1_796_000_000_000; // 2026-11-30T00:53:20Z
        assert_eq!(BudgetPeriod::Day.key(now), "2026-11-30");
        assert_eq!(BudgetPeriod::Month.key(now), "2026-11");
        assert_eq!(BudgetPeriod::Month.key(0), "1970-01");
        assert_eq!(BudgetPeriod::Day.key(0), "1970-01-01");
        assert_eq!(BudgetPeriod::Total.key(now), "total");
    }
}
