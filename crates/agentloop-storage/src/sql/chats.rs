/// Chats, messages and checkpoints for this driver.
mod sql_chats {
    use agentloop_types::{Message, TokenTotals};
    use async_trait::async_trait;

    use super::{SqlStore, rows};
    use crate::codec::to_i64;
    use crate::error::{StorageError, StorageResult};
    use crate::message_cache::{Lookup, MessageCursor};
    use crate::model::{Chat, Checkpoint, StoredMessage};
    use crate::sql::{Query, db_err, found, insert_err};
    use crate::store::{ChatStore, LoggedEvent, from_json_text, json_text};


    pub(super) const INSERT_CHAT: &str = "INSERT INTO chats (id, project_id, title, settings, \
         totals, parent_chat_id, parent_tool_use_id, created_at, updated_at, next_seq, \
         message_rev) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";

    /// Binds [`INSERT_CHAT`]: `chat`'s row with its message counters at
    /// `next_seq` and `message_rev` (a chat created holding messages
    /// starts past them).
    pub(super) fn bind_chat<'q>(
        query: Query<'q, super::Db>,
        chat: &'q Chat,
        next_seq: i64,
        message_rev: i64,
    ) -> StorageResult<Query<'q, super::Db>> {
        let (parent, tool_use) = match &chat.minion {
            Some(link) => (
                Some(link.parent_chat_id.as_str()),
                Some(link.tool_use_id.as_str()),
            ),
            None => (None, None),
        };
        Ok(query
            .bind(&chat.id)
            .bind(&chat.project_id)
            .bind(&chat.title)
            .bind(json_text(&chat.settings)?)
            .bind(json_text(&chat.totals)?)
            .bind(parent)
            .bind(tool_use)
            .bind(chat.created_at)
            .bind(chat.updated_at)
            .bind(next_seq)
            .bind(message_rev))
    }

    /// Inserts `chat`'s row (see [`bind_chat`]).
    async fn insert_chat<'e>(
        db: impl sqlx::Executor<'e, Database = super::Db>,
        chat: &Chat,
        next_seq: i64,
        message_rev: i64,
    ) -> StorageResult<()> {
        bind_chat(sqlx::query(INSERT_CHAT), chat, next_seq, message_rev)?
            .execute(db)
            .await
            .map_err(|e| insert_err(e, "chat", &chat.id))?;
        Ok(())
    }

    pub(super) const INSERT_MESSAGE: &str =
        "INSERT INTO messages (chat_id, seq, id, body, rev) VALUES ($1, $2, $3, $4, $5)";

    /// Binds [`INSERT_MESSAGE`]: message `id` of chat `chat_id` at `seq`,
    /// its JSON `body` written at the chat's revision `rev`.
    pub(super) fn bind_message<'q>(
        query: Query<'q, super::Db>,
        chat_id: &'q str,
        seq: i64,
        id: &'q str,
        body: &'q str,
        rev: i64,
    ) -> Query<'q, super::Db> {
        query.bind(chat_id).bind(seq).bind(id).bind(body).bind(rev)
    }

    /// Inserts a message's row (see [`bind_message`]).
    async fn insert_message<'e>(
        db: impl sqlx::Executor<'e, Database = super::Db>,
        chat_id: &str,
        seq: i64,
        id: &str,
        body: &str,
        rev: i64,
    ) -> StorageResult<()> {
        bind_message(sqlx::query(INSERT_MESSAGE), chat_id, seq, id, body, rev)
            .execute(db)
            .await
            .map_err(|e| insert_err(e, "message", id))?;
        Ok(())
    }

    #[async_trait]
    impl ChatStore for SqlStore {
        async fn create_chat(&self, chat: &Chat) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            insert_chat(&self.pool, chat, 0, 0).await
        }

        async fn get_chat(&self, id: &str) -> StorageResult<Chat> {
            let row = sqlx::query("SELECT * FROM chats WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?
                .ok_or_else(|| StorageError::not_found("chat", id))?;
            rows::chat(&row)
        }

        async fn list_chats(&self, project_id: &str) -> StorageResult<Vec<Chat>> {
            sqlx::query("SELECT * FROM chats WHERE project_id = $1 ORDER BY created_at, id")
                .bind(project_id)
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?
                .iter()
                .map(rows::chat)
                .collect()
        }

        async fn list_minion_chats(&self, parent_chat_id: &str) -> StorageResult<Vec<Chat>> {
            sqlx::query("SELECT * FROM chats WHERE parent_chat_id = $1 ORDER BY created_at, id")
                .bind(parent_chat_id)
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?
                .iter()
                .map(rows::chat)
                .collect()
        }

        async fn update_chat(&self, chat: &Chat) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            let done = sqlx::query(
                "UPDATE chats SET title = $2, settings = $3, totals = $4, updated_at = $5 \
                 WHERE id = $1",
            )
            .bind(&chat.id)
            .bind(&chat.title)
            .bind(json_text(&chat.settings)?)
            .bind(json_text(&chat.totals)?)
            .bind(chat.updated_at)
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
            found(done.rows_affected(), "chat", &chat.id)
        }

        async fn add_chat_totals(
            &self,
            chat_id: &str,
            delta: TokenTotals,
            updated_at: i64,
        ) -> StorageResult<TokenTotals> {
            let mut turn = self.write_turn().await;
            let mut tx = turn.begin(&self.pool).await.map_err(db_err)?;
            let locked = sqlx::query("UPDATE chats SET next_seq = next_seq WHERE id = $1")
                .bind(chat_id)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            found(locked.rows_affected(), "chat", chat_id)?;
            let row = sqlx::query("SELECT totals FROM chats WHERE id = $1")
                .bind(chat_id)
                .fetch_one(&mut *tx)
                .await
                .map_err(db_err)?;
            let stored: String = sqlx::Row::try_get(&row, "totals").map_err(db_err)?;
            let totals = from_json_text::<TokenTotals>(&stored)? + delta;
            sqlx::query("UPDATE chats SET totals = $2, updated_at = $3 WHERE id = $1")
                .bind(chat_id)
                .bind(json_text(&totals)?)
                .bind(updated_at)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            tx.commit().await.map_err(db_err)?;
            Ok(totals)
        }

        async fn delete_chat(&self, id: &str) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            self.message_cache.forget(id);
            let done = sqlx::query("DELETE FROM chats WHERE id = $1")
                .bind(id)
                .execute(&self.pool)
                .await
                .map_err(db_err)?;
            found(done.rows_affected(), "chat", id)
        }

        async fn save_message(&self, chat_id: &str, message: &Message) -> StorageResult<u64> {
            self.save(chat_id, message, None).await
        }

        async fn save_logged_message(
            &self,
            chat_id: &str,
            message: &Message,
            logged: LoggedEvent<'_>,
        ) -> StorageResult<u64> {
            self.save(chat_id, message, Some(logged)).await
        }

        async fn list_messages(&self, chat_id: &str) -> StorageResult<Vec<StoredMessage>> {
            // The cursor is read before the rows (see `message_cache`).
            let cursor = self.message_cursor(chat_id).await?;
            match self.message_cache.lookup(chat_id, cursor) {
                Lookup::Current(messages) => return Ok(messages),
                Lookup::Behind(rev) => {
                    let changed = self.messages_where(chat_id, "rev > $2", rev).await?;
                    if let Some(messages) = self.message_cache.merge(chat_id, cursor, changed) {
                        return Ok(messages);
                    }
                }
                Lookup::Missing => {}
            }
            let messages = self.all_messages(chat_id).await?;
            self.message_cache.put(chat_id, cursor, &messages);
            Ok(messages)
        }

        async fn get_message(
            &self,
            chat_id: &str,
            message_id: &str,
        ) -> StorageResult<StoredMessage> {
            let sql = format!(
                "SELECT seq, {} AS body FROM messages WHERE chat_id = $1 AND id = $2",
                super::MESSAGE_BODY
            );
            let row = sqlx::query(&sql)
                .bind(chat_id)
                .bind(message_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?
                .ok_or_else(|| StorageError::not_found("message", message_id))?;
            rows::message(&row)
        }

        async fn truncate_messages(
            &self,
            chat_id: &str,
            after_seq: Option<u64>,
        ) -> StorageResult<u64> {
            let mut turn = self.write_turn().await;
            let after = after_seq.map(to_i64).transpose()?.unwrap_or(-1);
            let mut tx = turn.begin(&self.pool).await.map_err(db_err)?;
            reset_messages(&mut tx, chat_id).await?;
            let done = sqlx::query("DELETE FROM messages WHERE chat_id = $1 AND seq > $2")
                .bind(chat_id)
                .bind(after)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            tx.commit().await.map_err(db_err)?;
            self.message_cache.forget(chat_id);
            Ok(done.rows_affected())
        }

        async fn restore_messages(
            &self,
            chat_id: &str,
            messages: &[StoredMessage],
        ) -> StorageResult<()> {
            let mut turn = self.write_turn().await;
            let mut tx = turn.begin(&self.pool).await.map_err(db_err)?;
            reset_messages(&mut tx, chat_id).await?;
            let existing = sqlx::query("SELECT seq FROM messages WHERE chat_id = $1 LIMIT 1")
                .bind(chat_id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?;
            if existing.is_some() {
                return Err(StorageError::Invalid(format!(
                    "chat {chat_id} has messages"
                )));
            }
            let mut next = 0i64;
            for stored in messages {
                let seq = to_i64(stored.seq)?;
                next = next.max(seq + 1);
                let body = json_text(&stored.message)?;
                // Revision 0: the reset above makes readers read the chat whole.
                insert_message(&mut *tx, chat_id, seq, &stored.message.id, &body, 0).await?;
            }
            sqlx::query(
                "UPDATE chats SET next_seq = CASE WHEN next_seq > $2 THEN next_seq ELSE $2 END \
                 WHERE id = $1",
            )
            .bind(chat_id)
            .bind(next)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            tx.commit().await.map_err(db_err)?;
            self.message_cache.forget(chat_id);
            Ok(())
        }

        async fn create_checkpoint(&self, checkpoint: &Checkpoint) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            sqlx::query(
                "INSERT INTO checkpoints (chat_id, name, message_seq, totals, created_at) \
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(&checkpoint.chat_id)
            .bind(&checkpoint.name)
            .bind(checkpoint.message_seq.map(to_i64).transpose()?)
            .bind(json_text(&checkpoint.totals)?)
            .bind(checkpoint.created_at)
            .execute(&self.pool)
            .await
            .map_err(|e| match insert_err(e, "checkpoint", &checkpoint.name) {
                StorageError::Invalid(_) => StorageError::not_found("chat", &checkpoint.chat_id),
                other => other,
            })?;
            Ok(())
        }

        async fn list_checkpoints(&self, chat_id: &str) -> StorageResult<Vec<Checkpoint>> {
            self.get_chat(chat_id).await?;
            sqlx::query("SELECT * FROM checkpoints WHERE chat_id = $1 ORDER BY created_at, name")
                .bind(chat_id)
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?
                .iter()
                .map(rows::checkpoint)
                .collect()
        }

        async fn delete_checkpoint(&self, chat_id: &str, name: &str) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            let done = sqlx::query("DELETE FROM checkpoints WHERE chat_id = $1 AND name = $2")
                .bind(chat_id)
                .bind(name)
                .execute(&self.pool)
                .await
                .map_err(db_err)?;
            found(done.rows_affected(), "checkpoint", name)
        }

        async fn rollback_to_checkpoint(
            &self,
            chat_id: &str,
            name: &str,
        ) -> StorageResult<Checkpoint> {
            let mut turn = self.write_turn().await;
            let mut tx = turn.begin(&self.pool).await.map_err(db_err)?;
            reset_messages(&mut tx, chat_id).await?;
            let row = sqlx::query("SELECT * FROM checkpoints WHERE chat_id = $1 AND name = $2")
                .bind(chat_id)
                .bind(name)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?
                .ok_or_else(|| StorageError::not_found("checkpoint", name))?;
            let checkpoint = rows::checkpoint(&row)?;
            let keep = checkpoint
                .message_seq
                .map(to_i64)
                .transpose()?
                .unwrap_or(-1);
            sqlx::query("DELETE FROM messages WHERE chat_id = $1 AND seq > $2")
                .bind(chat_id)
                .bind(keep)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            sqlx::query(
                "DELETE FROM checkpoints WHERE chat_id = $1 AND message_seq IS NOT NULL \
                 AND message_seq > $2",
            )
            .bind(chat_id)
            .bind(keep)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            sqlx::query("UPDATE chats SET totals = $2 WHERE id = $1")
                .bind(chat_id)
                .bind(json_text(&checkpoint.totals)?)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            tx.commit().await.map_err(db_err)?;
            self.message_cache.forget(chat_id);
            Ok(checkpoint)
        }
    }

    impl SqlStore {
        /// Saves `message` (see [`ChatStore::save_message`]): with its
        /// body, or for one a run `logged`, with the event that holds it
        /// and an empty body.
        async fn save(
            &self,
            chat_id: &str,
            message: &Message,
            logged: Option<LoggedEvent<'_>>,
        ) -> StorageResult<u64> {
            let mut turn = self.write_turn().await;
            let body = match logged {
                Some(_) => String::new(),
                None => json_text(message)?,
            };
            let (event_run, event_seq) = match logged {
                Some(logged) => (Some(logged.run_id), Some(to_i64(logged.seq)?)),
                None => (None, None),
            };
            let mut tx = turn.begin(&self.pool).await.map_err(db_err)?;
            // Writing the chat row first takes its lock, so appends to one
            // chat are serialised on every backend, and numbers the write
            // for readers that keep a decoded copy.
            let rev: i64 = sqlx::query_scalar(
                "UPDATE chats SET message_rev = message_rev + 1 WHERE id = $1 \
                 RETURNING message_rev",
            )
            .bind(chat_id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?
            .ok_or_else(|| StorageError::not_found("chat", chat_id))?;
            let replaced = sqlx::query(
                "UPDATE messages SET body = $3, rev = $4, event_run_id = $5, event_seq = $6 \
                 WHERE chat_id = $1 AND id = $2 RETURNING seq",
            )
            .bind(chat_id)
            .bind(&message.id)
            .bind(&body)
            .bind(rev)
            .bind(event_run)
            .bind(event_seq)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?;
            let seq: i64 = match replaced {
                Some(row) => sqlx::Row::try_get(&row, "seq").map_err(db_err)?,
                None => {
                    let row = sqlx::query(
                        "UPDATE chats SET next_seq = next_seq + 1 WHERE id = $1 \
                         RETURNING next_seq - 1 AS seq",
                    )
                    .bind(chat_id)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(db_err)?;
                    let seq: i64 = sqlx::Row::try_get(&row, "seq").map_err(db_err)?;
                    bind_message(
                        sqlx::query(
                            "INSERT INTO messages \
                             (chat_id, seq, id, body, rev, event_run_id, event_seq) \
                             VALUES ($1, $2, $3, $4, $5, $6, $7)",
                        ),
                        chat_id,
                        seq,
                        &message.id,
                        &body,
                        rev,
                    )
                    .bind(event_run)
                    .bind(event_seq)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| insert_err(e, "message", &message.id))?;
                    seq
                }
            };
            tx.commit().await.map_err(db_err)?;
            crate::codec::to_u64(seq)
        }

        /// Where the chat's messages stand; `NotFound` for an unknown chat.
        async fn message_cursor(&self, chat_id: &str) -> StorageResult<MessageCursor> {
            let (created_at, rev, resets): (i64, i64, i64) = sqlx::query_as(
                "SELECT created_at, message_rev, message_resets FROM chats WHERE id = $1",
            )
            .bind(chat_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?
            .ok_or_else(|| StorageError::not_found("chat", chat_id))?;
            Ok(MessageCursor {
                created_at,
                rev,
                resets,
            })
        }

        /// Every message of the chat, read as one JSON array of
        /// `[seq, message]` pairs built by the database: one row instead
        /// of one per message (each row costs a round trip through the
        /// SQLite driver's worker thread) and one parse.
        async fn all_messages(&self, chat_id: &str) -> StorageResult<Vec<StoredMessage>> {
            let sql = format!(
                "SELECT '[' || COALESCE(string_agg('[' || seq || ',' || {} || ']', ',' \
                 ORDER BY seq), '') || ']' FROM messages WHERE chat_id = $1",
                super::MESSAGE_BODY
            );
            let array: String = sqlx::query_scalar(&sql)
            .bind(chat_id)
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)?;
            let pairs: Vec<(u64, agentloop_types::Message)> = from_json_text(&array)?;
            Ok(pairs
                .into_iter()
                .map(|(seq, message)| StoredMessage { seq, message })
                .collect())
        }

        /// The chat's messages where `condition` (on `$2` = `value`)
        /// holds, in seq order.
        async fn messages_where(
            &self,
            chat_id: &str,
            condition: &str,
            value: i64,
        ) -> StorageResult<Vec<StoredMessage>> {
            let sql = format!(
                "SELECT seq, {} AS body FROM messages WHERE chat_id = $1 AND {condition} \
                 ORDER BY seq",
                super::MESSAGE_BODY
            );
            sqlx::query(&sql)
                .bind(chat_id)
                .bind(value)
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?
                .iter()
                .map(rows::message)
                .collect()
        }
    }

    /// Takes the chat row's lock and counts a deletion or restore of its
    /// messages, inside `tx`; `NotFound` for an unknown chat.
    async fn reset_messages(
        tx: &mut sqlx::Transaction<'_, super::Db>,
        chat_id: &str,
    ) -> StorageResult<()> {
        let locked =
            sqlx::query("UPDATE chats SET message_resets = message_resets + 1 WHERE id = $1")
                .bind(chat_id)
                .execute(&mut **tx)
                .await
                .map_err(db_err)?;
        found(locked.rows_affected(), "chat", chat_id)
    }
}
