/// Runs' kept steps for this driver.
mod sql_steps {
    use async_trait::async_trait;
    use sqlx::Row;

    use super::{DbRow, SqlStore};
    use crate::codec::{to_i64, to_u64};
    use crate::error::{StorageError, StorageResult};
    use crate::model::RunRecord;
    use crate::sql::db_err;
    use crate::steps::{RunStep, StepStore};
    use crate::store::{from_json_text, json_text};

    /// Keeps `step` and drops its run's steps beyond the latest `keep`,
    /// inside `tx` (see [`StepStore::keep_step`]).
    async fn keep_in(
        tx: &mut sqlx::Transaction<'_, super::Db>,
        step: &RunStep,
        keep: Option<u32>,
    ) -> StorageResult<()> {
        if keep == Some(0) {
            sqlx::query("DELETE FROM run_steps WHERE run_id = $1")
                .bind(&step.run_id)
                .execute(&mut **tx)
                .await
                .map_err(db_err)?;
            return Ok(());
        }
        let seq = to_i64(step.seq)?;
        sqlx::query(
            "INSERT INTO run_steps \
             (run_id, seq, created_at, message_count, last_message_id, state) \
             VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (run_id, seq) DO UPDATE SET created_at = excluded.created_at, \
             message_count = excluded.message_count, \
             last_message_id = excluded.last_message_id, state = excluded.state",
        )
        .bind(&step.run_id)
        .bind(seq)
        .bind(step.created_at)
        .bind(to_i64(step.message_count)?)
        .bind(step.last_message_id.as_deref())
        .bind(json_text(&step.state)?)
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
        if let Some(keep) = keep {
            // The seq of the oldest step kept; older ones go (none when
            // the run has no more than `keep`).
            sqlx::query(
                "DELETE FROM run_steps WHERE run_id = $1 AND seq < \
                 (SELECT seq FROM run_steps WHERE run_id = $1 \
                  ORDER BY seq DESC LIMIT 1 OFFSET $2)",
            )
            .bind(&step.run_id)
            .bind(i64::from(keep.saturating_sub(1)))
            .execute(&mut **tx)
            .await
            .map_err(db_err)?;
        }
        Ok(())
    }

    #[async_trait]
    impl StepStore for SqlStore {
        async fn keep_step(&self, step: &RunStep, keep: Option<u32>) -> StorageResult<()> {
            let mut turn = self.write_turn().await;
            let mut tx = turn.begin(&self.pool).await.map_err(db_err)?;
            keep_in(&mut tx, step, keep).await?;
            tx.commit().await.map_err(db_err)
        }

        async fn update_run_keeping_step(
            &self,
            run: &RunRecord,
            step: &RunStep,
            keep: Option<u32>,
        ) -> StorageResult<()> {
            let mut turn = self.write_turn().await;
            let mut tx = turn.begin(&self.pool).await.map_err(db_err)?;
            super::sql_runs::update_run_in(&mut *tx, run).await?;
            keep_in(&mut tx, step, keep).await?;
            tx.commit().await.map_err(db_err)
        }

        async fn list_steps(&self, run_id: &str) -> StorageResult<Vec<RunStep>> {
            sqlx::query("SELECT * FROM run_steps WHERE run_id = $1 ORDER BY seq")
                .bind(run_id)
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?
                .iter()
                .map(step)
                .collect()
        }

        async fn get_step(&self, run_id: &str, seq: u64) -> StorageResult<RunStep> {
            let row = sqlx::query("SELECT * FROM run_steps WHERE run_id = $1 AND seq = $2")
                .bind(run_id)
                .bind(to_i64(seq)?)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?
                .ok_or_else(|| StorageError::not_found("step", format!("{run_id}@{seq}")))?;
            step(&row)
        }
    }

    fn step(row: &DbRow) -> StorageResult<RunStep> {
        let state: String = row.try_get("state").map_err(db_err)?;
        Ok(RunStep {
            run_id: row.try_get("run_id").map_err(db_err)?,
            seq: to_u64(row.try_get("seq").map_err(db_err)?)?,
            created_at: row.try_get("created_at").map_err(db_err)?,
            message_count: to_u64(row.try_get("message_count").map_err(db_err)?)?,
            last_message_id: row.try_get("last_message_id").map_err(db_err)?,
            state: from_json_text(&state)?,
        })
    }
}
