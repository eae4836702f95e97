/// The webhook delivery log for this driver.
mod sql_webhooks {
    use async_trait::async_trait;
    use sqlx::Row;

    use super::{DbRow, SqlStore};
    use crate::error::StorageResult;
    use crate::model::{WebhookDelivery, WebhookDeliveryState};
    use crate::sql::{bad_value, db_err};
    use crate::store::{WEBHOOK_DELIVERIES_KEPT, WebhookStore, from_json_text, json_text};

    #[async_trait]
    impl WebhookStore for SqlStore {
        async fn save_webhook_delivery(&self, delivery: &WebhookDelivery) -> StorageResult<()> {
            let mut turn = self.write_turn().await;
            let mut tx = turn.begin(&self.pool).await.map_err(db_err)?;
            sqlx::query(
                "INSERT INTO webhook_deliveries \
                 (id, project_id, event, url, state, attempts, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7) \
                 ON CONFLICT (id) DO UPDATE SET state = excluded.state, attempts = excluded.attempts",
            )
            .bind(&delivery.id)
            .bind(&delivery.project_id)
            .bind(&delivery.event)
            .bind(&delivery.url)
            .bind(delivery.state.as_str())
            .bind(json_text(&delivery.attempts)?)
            .bind(delivery.created_at)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            sqlx::query(
                "DELETE FROM webhook_deliveries WHERE project_id = $1 AND id NOT IN \
                 (SELECT id FROM webhook_deliveries WHERE project_id = $1 \
                  ORDER BY created_at DESC, id DESC LIMIT $2)",
            )
            .bind(&delivery.project_id)
            .bind(i64::from(WEBHOOK_DELIVERIES_KEPT))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            tx.commit().await.map_err(db_err)
        }

        async fn list_webhook_deliveries(
            &self,
            project_id: &str,
            limit: u32,
        ) -> StorageResult<Vec<WebhookDelivery>> {
            let mut newest = sqlx::query(
                "SELECT id, project_id, event, url, state, attempts, created_at \
                 FROM webhook_deliveries WHERE project_id = $1 \
                 ORDER BY created_at DESC, id DESC LIMIT $2",
            )
            .bind(project_id)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?
            .iter()
            .map(delivery)
            .collect::<StorageResult<Vec<_>>>()?;
            newest.reverse();
            Ok(newest)
        }
    }

    fn delivery(row: &DbRow) -> StorageResult<WebhookDelivery> {
        let state: String = row.try_get("state").map_err(db_err)?;
        let attempts: String = row.try_get("attempts").map_err(db_err)?;
        Ok(WebhookDelivery {
            id: row.try_get("id").map_err(db_err)?,
            project_id: row.try_get("project_id").map_err(db_err)?,
            event: row.try_get("event").map_err(db_err)?,
            url: row.try_get("url").map_err(db_err)?,
            state: WebhookDeliveryState::parse(&state)
                .ok_or_else(|| bad_value("webhook delivery state", &state))?,
            attempts: from_json_text(&attempts)?,
            created_at: row.try_get("created_at").map_err(db_err)?,
        })
    }
}
