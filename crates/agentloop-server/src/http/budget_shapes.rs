//! The bodies and answers of the budgets' routes (see [`super::budgets`]):
//! a scope's budgets to set, and each budget with its spend.

use agentloop_storage::budgets::{
    BudgetLimit, BudgetMetric, BudgetPeriod, BudgetScopeKind, BudgetUsage,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::requests::RequestBody;

/// What a budget counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MetricName {
    /// Cost in US dollars.
    Cost,
    /// Input plus output tokens.
    Tokens,
}

/// When a budget's spend starts again (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PeriodName {
    /// Each day.
    Day,
    /// Each calendar month.
    Month,
    /// Never.
    Total,
}

/// One budget to set.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BudgetInput {
    /// What it counts.
    pub metric: MetricName,
    /// When its spend starts again.
    pub period: PeriodName,
    /// The most the scope's runs may spend in one period: US dollars, or
    /// tokens; at least 0.
    #[schemars(range(min = 0))]
    pub limit: f64,
}

/// `PUT …/budgets`: the scope's budgets, replacing those it had (an
/// empty list removes them). Spend already counted stays.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BudgetsChange {
    /// At most one per metric and period.
    #[schemars(length(max = 6))]
    pub budgets: Vec<BudgetInput>,
}

impl RequestBody for BudgetsChange {}

/// A budget with its spend in the current period.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "Budget")]
pub struct BudgetShape {
    /// What it counts.
    pub metric: MetricName,
    /// When its spend starts again.
    pub period: PeriodName,
    /// The current period: `2026-11-29`, `2026-11` or `total`.
    pub period_key: String,
    /// The most that may be spent in one period.
    pub limit: f64,
    /// Spent by the model calls settled in this period.
    pub spent: f64,
    /// Held by model calls in flight.
    pub reserved: f64,
}

/// A scope's budgets.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "Budgets")]
pub struct BudgetsShape {
    /// `user`, `project`, `task` or `schedule`.
    pub scope: String,
    /// The user's, project's or task's id.
    pub scope_id: String,
    /// Its budgets, by metric and period.
    pub budgets: Vec<BudgetShape>,
}

impl BudgetsShape {
    /// The budgets of scope `kind` `id`, with their spend.
    pub fn new(kind: BudgetScopeKind, id: String, usage: &[BudgetUsage]) -> Self {
        Self {
            scope: kind.as_str().to_owned(),
            scope_id: id,
            budgets: usage.iter().map(BudgetShape::from).collect(),
        }
    }
}

impl From<&BudgetUsage> for BudgetShape {
    fn from(usage: &BudgetUsage) -> Self {
        Self {
            metric: match usage.limit.metric {
                BudgetMetric::Cost => MetricName::Cost,
                BudgetMetric::Tokens => MetricName::Tokens,
            },
            period: match usage.limit.period {
                BudgetPeriod::Day => PeriodName::Day,
                BudgetPeriod::Month => PeriodName::Month,
                BudgetPeriod::Total => PeriodName::Total,
            },
            period_key: usage.period_key.clone(),
            limit: usage.limit.limit,
            spent: usage.spent,
            reserved: usage.reserved,
        }
    }
}

impl From<&BudgetInput> for BudgetLimit {
    fn from(input: &BudgetInput) -> Self {
        Self {
            metric: match input.metric {
                MetricName::Cost => BudgetMetric::Cost,
                MetricName::Tokens => BudgetMetric::Tokens,
            },
            period: match input.period {
                PeriodName::Day => BudgetPeriod::Day,
                PeriodName::Month => BudgetPeriod::Month,
                PeriodName::Total => BudgetPeriod::Total,
            },
            limit: input.limit,
        }
    }
}

/// The limits a change sets.
pub fn limits(change: &BudgetsChange) -> Vec<BudgetLimit> {
    change.budgets.iter().map(BudgetLimit::from).collect()
}
