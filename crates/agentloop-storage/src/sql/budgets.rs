/// Budgets for this driver. A reservation is one transaction: per budget,
/// a conditional `UPDATE` that adds the estimate only while spent plus
/// reserved plus it stays within the limit. On PostgreSQL the `UPDATE`
/// locks the spend row, and a transaction waiting on it reads the row
/// again once the other commits, so racing reservations see each other;
/// budgets are taken in one order, so two reservations never wait on
/// each other. On SQLite one writer at a time does the same.
///
/// A hold its process never settled is released by age, each in a
/// write of its own taken as a settlement is (its hold rows, then the
/// spend rows in the one order): its `amount` moves to `released`, and a
/// late settlement still counts what the call spent.
mod sql_budgets {
    use agentloop_types::Spend;
    use async_trait::async_trait;
    use sqlx::Row;

    use super::{DbRow, SqlStore};
    use crate::budgets::{
        BudgetLimit, BudgetMetric, BudgetPeriod, BudgetScope, BudgetScopeKind, BudgetUsage,
        BudgetsStore, Reservation, check_limits,
    };
    use crate::error::StorageResult;
    use crate::sql::{bad_value, db_err};

    /// A stored budget.
    fn budget(row: &DbRow) -> StorageResult<(BudgetScope, BudgetLimit)> {
        let kind: String = row.try_get("scope_kind").map_err(db_err)?;
        let metric: String = row.try_get("metric").map_err(db_err)?;
        let period: String = row.try_get("period").map_err(db_err)?;
        let scope = BudgetScope {
            kind: BudgetScopeKind::parse(&kind).ok_or_else(|| bad_value("scope_kind", &kind))?,
            id: row.try_get("scope_id").map_err(db_err)?,
        };
        let metric = BudgetMetric::parse(&metric).ok_or_else(|| bad_value("metric", &metric))?;
        let units: i64 = row.try_get("limit_value").map_err(db_err)?;
        let limit = BudgetLimit {
            metric,
            period: BudgetPeriod::parse(&period).ok_or_else(|| bad_value("period", &period))?,
            limit: metric.amount(units),
        };
        Ok((scope, limit))
    }

    /// The order budgets' spend rows are locked in.
    fn lock_order(kind: &str, id: &str, metric: &str, period: &str) -> String {
        format!("{kind}\u{0}{id}\u{0}{metric}\u{0}{period}")
    }

    /// `(scope_kind = $1 AND scope_id = $2) OR …` for `count` scopes.
    fn any_scope(count: usize) -> String {
        (0..count)
            .map(|i| format!("(scope_kind = ${} AND scope_id = ${})", 2 * i + 1, 2 * i + 2))
            .collect::<Vec<_>>()
            .join(" OR ")
    }

    /// One budget a hold took from: its spend row and the amount.
    type Held = (String, String, BudgetMetric, String, String, i64);

    /// The rows of a hold: `amount_column` is what it takes back.
    fn held_rows(rows: &[DbRow], amount_column: &str) -> StorageResult<Vec<Held>> {
        let mut held = Vec::with_capacity(rows.len());
        for row in rows {
            let metric: String = row.try_get("metric").map_err(db_err)?;
            let metric =
                BudgetMetric::parse(&metric).ok_or_else(|| bad_value("metric", &metric))?;
            held.push((
                row.try_get::<String, _>("scope_kind").map_err(db_err)?,
                row.try_get::<String, _>("scope_id").map_err(db_err)?,
                metric,
                row.try_get::<String, _>("period").map_err(db_err)?,
                row.try_get::<String, _>("period_key").map_err(db_err)?,
                row.try_get::<i64, _>(amount_column).map_err(db_err)?,
            ));
        }
        held.sort_by_key(|(kind, id, metric, period, _, _)| {
            lock_order(kind, id, metric.as_str(), period)
        });
        Ok(held)
    }

    /// Takes each held amount back from what its budget holds and counts
    /// `actual` as spent, in the one lock order.
    async fn give_back(
        tx: &mut sqlx::Transaction<'_, super::Db>,
        held: Vec<Held>,
        actual: Spend,
    ) -> StorageResult<()> {
        for (kind, id, metric, period, key, amount) in held {
            sqlx::query(
                "UPDATE budget_spend SET \
                 reserved = CASE WHEN reserved - $6 < 0 THEN 0 ELSE reserved - $6 END, \
                 spent = spent + $7 \
                 WHERE scope_kind = $1 AND scope_id = $2 AND metric = $3 \
                 AND period = $4 AND period_key = $5",
            )
            .bind(kind)
            .bind(id)
            .bind(metric.as_str())
            .bind(period)
            .bind(key)
            .bind(amount)
            .bind(metric.of(actual))
            .execute(&mut **tx)
            .await
            .map_err(db_err)?;
        }
        Ok(())
    }

    impl SqlStore {
        /// Releases what the holds on `scopes`' budgets reserved before
        /// `expire_before` still hold.
        async fn release_expired_holds(
            &self,
            scopes: &[BudgetScope],
            expire_before: i64,
        ) -> StorageResult<()> {
            let text = format!(
                "SELECT DISTINCT hold_id FROM budget_holds WHERE ({}) \
                 AND created_at < ${} AND amount > 0",
                any_scope(scopes.len()),
                2 * scopes.len() + 1
            );
            let mut query = sqlx::query(&text);
            for scope in scopes {
                query = query.bind(scope.kind.as_str()).bind(&scope.id);
            }
            let expired = query
                .bind(expire_before)
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?;
            for row in &expired {
                let hold: String = row.try_get("hold_id").map_err(db_err)?;
                let mut turn = self.write_turn().await;
                let mut tx = turn.begin(&self.pool).await.map_err(db_err)?;
                // The statement reads `amount` before it is set: a hold
                // settled or released meanwhile yields no row.
                let rows = sqlx::query(
                    "UPDATE budget_holds SET released = amount, amount = 0 \
                     WHERE hold_id = $1 AND created_at < $2 AND amount > 0 \
                     RETURNING scope_kind, scope_id, metric, period, period_key, \
                     released AS taken_back",
                )
                .bind(&hold)
                .bind(expire_before)
                .fetch_all(&mut *tx)
                .await
                .map_err(db_err)?;
                let held = held_rows(&rows, "taken_back")?;
                give_back(&mut tx, held, Spend::default()).await?;
                tx.commit().await.map_err(db_err)?;
            }
            Ok(())
        }
    }

    #[async_trait]
    impl BudgetsStore for SqlStore {
        async fn set_budgets(
            &self,
            scope: &BudgetScope,
            limits: &[BudgetLimit],
            now: i64,
        ) -> StorageResult<()> {
            check_limits(limits)?;
            let mut turn = self.write_turn().await;
            let mut tx = turn.begin(&self.pool).await.map_err(db_err)?;
            sqlx::query("DELETE FROM budgets WHERE scope_kind = $1 AND scope_id = $2")
                .bind(scope.kind.as_str())
                .bind(&scope.id)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            for limit in limits {
                sqlx::query(
                    "INSERT INTO budgets \
                     (scope_kind, scope_id, metric, period, limit_value, updated_at) \
                     VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .bind(scope.kind.as_str())
                .bind(&scope.id)
                .bind(limit.metric.as_str())
                .bind(limit.period.as_str())
                .bind(limit.metric.units(limit.limit))
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            }
            tx.commit().await.map_err(db_err)
        }

        async fn budgets(
            &self,
            scope: &BudgetScope,
            now: i64,
        ) -> StorageResult<Vec<BudgetUsage>> {
            let rows = sqlx::query(
                "SELECT b.scope_kind, b.scope_id, b.metric, b.period, b.limit_value, \
                 COALESCE(s.spent, 0) AS spent, COALESCE(s.reserved, 0) AS reserved \
                 FROM budgets b LEFT JOIN budget_spend s \
                 ON s.scope_kind = b.scope_kind AND s.scope_id = b.scope_id \
                 AND s.metric = b.metric AND s.period = b.period \
                 AND s.period_key = CASE b.period WHEN 'day' THEN $3 \
                     WHEN 'month' THEN $4 ELSE 'total' END \
                 WHERE b.scope_kind = $1 AND b.scope_id = $2 \
                 ORDER BY b.metric, b.period",
            )
            .bind(scope.kind.as_str())
            .bind(&scope.id)
            .bind(BudgetPeriod::Day.key(now))
            .bind(BudgetPeriod::Month.key(now))
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
            let mut usage: Vec<BudgetUsage> = rows
                .iter()
                .map(|row| {
                    let (scope, limit) = budget(row)?;
                    Ok(BudgetUsage {
                        period_key: limit.period.key(now),
                        scope,
                        limit,
                        spent: limit.metric.amount(row.try_get("spent").map_err(db_err)?),
                        reserved: limit
                            .metric
                            .amount(row.try_get("reserved").map_err(db_err)?),
                    })
                })
                .collect::<StorageResult<_>>()?;
            usage.sort_by_key(|u| (u.limit.metric, u.limit.period));
            Ok(usage)
        }

        async fn reserve_budgets(
            &self,
            hold: &str,
            scopes: &[BudgetScope],
            estimate: Spend,
            now: i64,
            expire_before: i64,
        ) -> StorageResult<Reservation> {
            if scopes.is_empty() {
                return Ok(Reservation::NoBudget);
            }
            // Read first, outside any write: a run whose scopes have no
            // budget writes nothing, and reads nothing more.
            let text = format!(
                "SELECT scope_kind, scope_id, metric, period, limit_value FROM budgets \
                 WHERE {}",
                any_scope(scopes.len())
            );
            let mut query = sqlx::query(&text);
            for scope in scopes {
                query = query.bind(scope.kind.as_str()).bind(&scope.id);
            }
            let rows = query.fetch_all(&self.pool).await.map_err(db_err)?;
            let mut budgets = rows.iter().map(budget).collect::<StorageResult<Vec<_>>>()?;
            if budgets.is_empty() {
                return Ok(Reservation::NoBudget);
            }
            self.release_expired_holds(scopes, expire_before).await?;
            // One order for every reservation and settlement (of the
            // stored names): none waits on another that waits on it.
            budgets.sort_by_key(|(scope, limit)| {
                lock_order(
                    scope.kind.as_str(),
                    &scope.id,
                    limit.metric.as_str(),
                    limit.period.as_str(),
                )
            });
            let mut turn = self.write_turn().await;
            let mut tx = turn.begin(&self.pool).await.map_err(db_err)?;
            for (scope, limit) in &budgets {
                let key = limit.period.key(now);
                let amount = limit.metric.of(estimate);
                sqlx::query(
                    "INSERT INTO budget_spend \
                     (scope_kind, scope_id, metric, period, period_key, spent, reserved) \
                     VALUES ($1, $2, $3, $4, $5, 0, 0) ON CONFLICT DO NOTHING",
                )
                .bind(scope.kind.as_str())
                .bind(&scope.id)
                .bind(limit.metric.as_str())
                .bind(limit.period.as_str())
                .bind(&key)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
                // The limit is read in the statement: one changed since
                // the read above counts.
                let taken = sqlx::query(
                    "UPDATE budget_spend SET reserved = reserved + $6 \
                     WHERE scope_kind = $1 AND scope_id = $2 AND metric = $3 \
                     AND period = $4 AND period_key = $5 \
                     AND spent + reserved + $6 <= (SELECT limit_value FROM budgets b \
                         WHERE b.scope_kind = $1 AND b.scope_id = $2 \
                         AND b.metric = $3 AND b.period = $4)",
                )
                .bind(scope.kind.as_str())
                .bind(&scope.id)
                .bind(limit.metric.as_str())
                .bind(limit.period.as_str())
                .bind(&key)
                .bind(amount)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?
                .rows_affected();
                if taken == 0 {
                    tx.rollback().await.map_err(db_err)?;
                    return Ok(Reservation::Refused {
                        scope: scope.clone(),
                        limit: *limit,
                    });
                }
                sqlx::query(
                    "INSERT INTO budget_holds (hold_id, scope_kind, scope_id, metric, period, \
                     period_key, amount, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                     ON CONFLICT (hold_id, scope_kind, scope_id, metric, period) \
                     DO UPDATE SET amount = budget_holds.amount + excluded.amount",
                )
                .bind(hold)
                .bind(scope.kind.as_str())
                .bind(&scope.id)
                .bind(limit.metric.as_str())
                .bind(limit.period.as_str())
                .bind(&key)
                .bind(amount)
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            }
            tx.commit().await.map_err(db_err)?;
            Ok(Reservation::Reserved)
        }

        async fn settle_budgets(&self, hold: &str, actual: Spend) -> StorageResult<()> {
            let mut turn = self.write_turn().await;
            let mut tx = turn.begin(&self.pool).await.map_err(db_err)?;
            // Deleting the hold first locks it: a settle racing this one
            // finds nothing to settle.
            let rows = sqlx::query(
                "DELETE FROM budget_holds WHERE hold_id = $1 \
                 RETURNING scope_kind, scope_id, metric, period, period_key, amount",
            )
            .bind(hold)
            .fetch_all(&mut *tx)
            .await
            .map_err(db_err)?;
            let held = held_rows(&rows, "amount")?;
            give_back(&mut tx, held, actual).await?;
            tx.commit().await.map_err(db_err)
        }
    }
}
