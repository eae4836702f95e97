//! Budgets of the in-memory backend: one lock makes each reservation
//! atomic.

use agentloop_types::Spend;
use async_trait::async_trait;

use super::{Budgets, Hold, MemoryStore};
use crate::budgets::{
    BudgetLimit, BudgetScope, BudgetUsage, BudgetsStore, Reservation, check_limits,
};
use crate::error::StorageResult;

impl MemoryStore {
    fn budgets_lock(&self) -> std::sync::MutexGuard<'_, Budgets> {
        self.budgets.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Releases what the holds on `scopes`' budgets reserved before
/// `expire_before` still hold (each such hold whole, as the SQL stores
/// do); the holds stay, to count their spend if they are settled after
/// all.
fn release_expired(budgets: &mut Budgets, scopes: &[BudgetScope], expire_before: i64) {
    let Budgets { spend, holds, .. } = budgets;
    let expired = holds
        .values_mut()
        .filter(|h| h.at < expire_before && h.taken.iter().any(|(key, _)| scopes.contains(&key.0)));
    for hold in expired {
        for (key, amount) in &mut hold.taken {
            let counted = spend.entry(key.clone()).or_default();
            counted.reserved = (counted.reserved - *amount).max(0);
            *amount = 0;
        }
    }
}

#[async_trait]
impl BudgetsStore for MemoryStore {
    async fn set_budgets(
        &self,
        scope: &BudgetScope,
        limits: &[BudgetLimit],
        _now: i64,
    ) -> StorageResult<()> {
        check_limits(limits)?;
        let mut budgets = self.budgets_lock();
        if limits.is_empty() {
            budgets.limits.remove(scope);
        } else {
            let mut limits = limits.to_vec();
            limits.sort_by_key(|l| (l.metric, l.period));
            budgets.limits.insert(scope.clone(), limits);
        }
        Ok(())
    }

    async fn budgets(&self, scope: &BudgetScope, now: i64) -> StorageResult<Vec<BudgetUsage>> {
        let budgets = self.budgets_lock();
        Ok(budgets
            .limits
            .get(scope)
            .into_iter()
            .flatten()
            .map(|limit| {
                let period_key = limit.period.key(now);
                let key = (
                    scope.clone(),
                    limit.metric,
                    limit.period,
                    period_key.clone(),
                );
                let counted = budgets.spend.get(&key).copied().unwrap_or_default();
                BudgetUsage {
                    scope: scope.clone(),
                    limit: *limit,
                    period_key,
                    spent: limit.metric.amount(counted.spent),
                    reserved: limit.metric.amount(counted.reserved),
                }
            })
            .collect())
    }

    async fn reserve_budgets(
        &self,
        hold: &str,
        scopes: &[BudgetScope],
        estimate: Spend,
        now: i64,
        expire_before: i64,
    ) -> StorageResult<Reservation> {
        let mut budgets = self.budgets_lock();
        release_expired(&mut budgets, scopes, expire_before);
        let mut taken = Vec::new();
        for scope in scopes {
            for limit in budgets.limits.get(scope).into_iter().flatten() {
                let amount = limit.metric.of(estimate);
                let key = (
                    scope.clone(),
                    limit.metric,
                    limit.period,
                    limit.period.key(now),
                );
                let counted = budgets.spend.get(&key).copied().unwrap_or_default();
                let within = counted
                    .spent
                    .saturating_add(counted.reserved)
                    .saturating_add(amount)
                    <= limit.metric.units(limit.limit);
                if !within {
                    return Ok(Reservation::Refused {
                        scope: scope.clone(),
                        limit: *limit,
                    });
                }
                taken.push((key, amount));
            }
        }
        if taken.is_empty() {
            return Ok(Reservation::NoBudget);
        }
        for (key, amount) in &taken {
            let counted = budgets.spend.entry(key.clone()).or_default();
            counted.reserved = counted.reserved.saturating_add(*amount);
        }
        let held = budgets.holds.entry(hold.to_owned()).or_insert(Hold {
            at: now,
            taken: Vec::new(),
        });
        held.taken.extend(taken);
        Ok(Reservation::Reserved)
    }

    async fn settle_budgets(&self, hold: &str, actual: Spend) -> StorageResult<()> {
        let mut budgets = self.budgets_lock();
        let Some(held) = budgets.holds.remove(hold) else {
            return Ok(());
        };
        for (key, amount) in held.taken {
            let metric = key.1;
            let counted = budgets.spend.entry(key).or_default();
            counted.reserved = (counted.reserved - amount).max(0);
            counted.spent = counted.spent.saturating_add(metric.of(actual));
        }
        Ok(())
    }
}
