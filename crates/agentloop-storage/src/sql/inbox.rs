/// Messages kept for a run going on (steering) for this driver.
mod sql_inbox {
    use agentloop_types::{Message, SteerStrategy};
    use async_trait::async_trait;

    use super::SqlStore;
    use crate::error::{StorageError, StorageResult};
    use crate::model::QueuedMessage;
    use crate::sql::{db_err, insert_err};
    use crate::store::{InboxStore, from_json_text, json_text};

    #[async_trait]
    impl InboxStore for SqlStore {
        async fn enqueue_message(
            &self,
            chat_id: &str,
            message: &Message,
            strategy: SteerStrategy,
            now: i64,
        ) -> StorageResult<()> {
            let body = json_text(message)?;
            let _turn = self.write_turn().await;
            sqlx::query(
                "INSERT INTO inbox_messages (chat_id, id, body, strategy, created_at) \
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(chat_id)
            .bind(&message.id)
            .bind(&body)
            .bind(strategy.as_str())
            .bind(now)
            .execute(&self.pool)
            .await
            .map_err(|e| insert_err(e, "inbox message", &message.id))?;
            Ok(())
        }

        async fn queued_messages(&self, chat_id: &str) -> StorageResult<Vec<QueuedMessage>> {
            let rows: Vec<(String, String, i64)> = sqlx::query_as(
                "SELECT body, strategy, created_at FROM inbox_messages \
                 WHERE chat_id = $1 AND delivered_at IS NULL ORDER BY seq",
            )
            .bind(chat_id)
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
            rows.into_iter()
                .map(|(body, strategy, queued_at)| {
                    Ok(QueuedMessage {
                        message: from_json_text(&body)?,
                        strategy: SteerStrategy::parse(&strategy).ok_or_else(|| {
                            StorageError::Serialization(format!(
                                "inbox message of chat {chat_id} has unknown strategy {strategy:?}"
                            ))
                        })?,
                        queued_at,
                    })
                })
                .collect()
        }

        async fn mark_delivered(
            &self,
            chat_id: &str,
            ids: &[String],
            now: i64,
        ) -> StorageResult<u64> {
            if ids.is_empty() {
                return Ok(0);
            }
            let _turn = self.write_turn().await;
            let mut marked = 0;
            for id in ids {
                let done = sqlx::query(
                    "UPDATE inbox_messages SET delivered_at = $3 \
                     WHERE chat_id = $1 AND id = $2 AND delivered_at IS NULL",
                )
                .bind(chat_id)
                .bind(id)
                .bind(now)
                .execute(&self.pool)
                .await
                .map_err(db_err)?;
                marked += done.rows_affected();
            }
            Ok(marked)
        }
    }
}
