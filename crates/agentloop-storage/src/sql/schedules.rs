/// Schedules for this driver.
mod sql_schedules {
    use async_trait::async_trait;
    use sqlx::Row;

    use super::{DbRow, SqlStore};
    use crate::error::{StorageError, StorageResult};
    use crate::model::AgentType;
    use crate::schedules::{Schedule, SchedulesStore, TickOutcome};
    use crate::sql::{bad_value, db_err, found, insert_err};
    use crate::store::{from_json_text, json_text};

    const COLUMNS: &str = "id, project_id, task_id, cron, time_zone, agent, prompt, paused, \
                           next_fire_at, last_fired_at, last_outcome, created_by, created_at, \
                           updated_at";

    #[async_trait]
    impl SchedulesStore for SqlStore {
        async fn create_schedule(&self, schedule: &Schedule) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            let outcome = schedule.last_outcome.as_ref().map(json_text).transpose()?;
            sqlx::query(&format!(
                "INSERT INTO schedules ({COLUMNS}) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
            ))
            .bind(&schedule.id)
            .bind(&schedule.project_id)
            .bind(&schedule.task_id)
            .bind(&schedule.cron)
            .bind(&schedule.time_zone)
            .bind(schedule.agent.as_str())
            .bind(schedule.prompt.as_deref())
            .bind(schedule.paused)
            .bind(schedule.next_fire_at)
            .bind(schedule.last_fired_at)
            .bind(outcome)
            .bind(&schedule.created_by)
            .bind(schedule.created_at)
            .bind(schedule.updated_at)
            .execute(&self.pool)
            .await
            .map_err(|e| insert_err(e, "schedule", &schedule.id))?;
            Ok(())
        }

        async fn get_schedule(&self, id: &str) -> StorageResult<Schedule> {
            let row = sqlx::query(&format!("SELECT {COLUMNS} FROM schedules WHERE id = $1"))
                .bind(id)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?
                .ok_or_else(|| StorageError::not_found("schedule", id))?;
            schedule(&row)
        }

        async fn list_schedules(&self, project_id: &str) -> StorageResult<Vec<Schedule>> {
            sqlx::query(&format!(
                "SELECT {COLUMNS} FROM schedules WHERE project_id = $1 ORDER BY created_at, id"
            ))
            .bind(project_id)
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?
            .iter()
            .map(schedule)
            .collect()
        }

        async fn update_schedule(&self, schedule: &Schedule) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            let done = sqlx::query(
                "UPDATE schedules SET cron = $2, time_zone = $3, agent = $4, prompt = $5, \
                 paused = $6, next_fire_at = $7, updated_at = $8 WHERE id = $1",
            )
            .bind(&schedule.id)
            .bind(&schedule.cron)
            .bind(&schedule.time_zone)
            .bind(schedule.agent.as_str())
            .bind(schedule.prompt.as_deref())
            .bind(schedule.paused)
            .bind(schedule.next_fire_at)
            .bind(schedule.updated_at)
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
            found(done.rows_affected(), "schedule", &schedule.id)
        }

        async fn delete_schedule(&self, id: &str) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            let done = sqlx::query("DELETE FROM schedules WHERE id = $1")
                .bind(id)
                .execute(&self.pool)
                .await
                .map_err(db_err)?;
            found(done.rows_affected(), "schedule", id)
        }

        async fn schedule_of_agent_run(
            &self,
            agent_run_id: &str,
        ) -> StorageResult<Option<String>> {
            let row = sqlx::query("SELECT schedule_id FROM schedule_runs WHERE agent_run_id = $1")
                .bind(agent_run_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?;
            row.map(|row| row.try_get("schedule_id").map_err(db_err))
                .transpose()
        }

        async fn latest_run_schedule(&self, task_id: &str) -> StorageResult<Option<String>> {
            let row = sqlx::query(
                "SELECT s.schedule_id FROM agent_runs a \
                 LEFT JOIN schedule_runs s ON s.agent_run_id = a.id \
                 WHERE a.task_id = $1 ORDER BY a.created_at DESC, a.id DESC LIMIT 1",
            )
            .bind(task_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?;
            Ok(match row {
                Some(row) => row
                    .try_get::<Option<String>, _>("schedule_id")
                    .map_err(db_err)?,
                None => None,
            })
        }

        async fn due_schedules(&self, now: i64, limit: u32) -> StorageResult<Vec<Schedule>> {
            sqlx::query(&format!(
                "SELECT {COLUMNS} FROM schedules WHERE paused = FALSE AND next_fire_at <= $1 \
                 ORDER BY next_fire_at, id LIMIT $2"
            ))
            .bind(now)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?
            .iter()
            .map(schedule)
            .collect()
        }

        async fn next_schedule_tick(&self) -> StorageResult<Option<i64>> {
            let row = sqlx::query("SELECT MIN(next_fire_at) AS next FROM schedules WHERE paused = FALSE")
                .fetch_one(&self.pool)
                .await
                .map_err(db_err)?;
            row.try_get::<Option<i64>, _>("next").map_err(db_err)
        }

        async fn claim_schedule_tick(
            &self,
            id: &str,
            due_at: i64,
            next_at: i64,
            fired_at: i64,
        ) -> StorageResult<bool> {
            let _turn = self.write_turn().await;
            let done = sqlx::query(
                "UPDATE schedules SET next_fire_at = $3, last_fired_at = $4 \
                 WHERE id = $1 AND next_fire_at = $2 AND paused = FALSE",
            )
            .bind(id)
            .bind(due_at)
            .bind(next_at)
            .bind(fired_at)
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
            Ok(done.rows_affected() == 1)
        }

        async fn record_tick_outcome(&self, id: &str, outcome: &TickOutcome) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            let done = sqlx::query("UPDATE schedules SET last_outcome = $2 WHERE id = $1")
                .bind(id)
                .bind(json_text(outcome)?)
                .execute(&self.pool)
                .await
                .map_err(db_err)?;
            found(done.rows_affected(), "schedule", id)
        }
    }

    fn schedule(row: &DbRow) -> StorageResult<Schedule> {
        let agent: String = row.try_get("agent").map_err(db_err)?;
        let outcome: Option<String> = row.try_get("last_outcome").map_err(db_err)?;
        Ok(Schedule {
            id: row.try_get("id").map_err(db_err)?,
            project_id: row.try_get("project_id").map_err(db_err)?,
            task_id: row.try_get("task_id").map_err(db_err)?,
            cron: row.try_get("cron").map_err(db_err)?,
            time_zone: row.try_get("time_zone").map_err(db_err)?,
            agent: AgentType::parse(&agent).ok_or_else(|| bad_value("agent", &agent))?,
            prompt: row.try_get("prompt").map_err(db_err)?,
            paused: row.try_get("paused").map_err(db_err)?,
            next_fire_at: row.try_get("next_fire_at").map_err(db_err)?,
            last_fired_at: row.try_get("last_fired_at").map_err(db_err)?,
            last_outcome: outcome.as_deref().map(from_json_text).transpose()?,
            created_by: row.try_get("created_by").map_err(db_err)?,
            created_at: row.try_get("created_at").map_err(db_err)?,
            updated_at: row.try_get("updated_at").map_err(db_err)?,
        })
    }
}
