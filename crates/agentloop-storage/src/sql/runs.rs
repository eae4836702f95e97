/// Runs and run events for this driver.
mod sql_runs {
    use agentloop_types::LoopEvent;
    use async_trait::async_trait;

    use super::{SqlStore, rows};
    use crate::codec::to_i64;
    use crate::error::{StorageError, StorageResult};
    use crate::group_commit::{Append, CommitBatch, EventRow};
    use crate::model::{LeaseRenewal, RunRecord, RunStatus, StoredMessage};
    use crate::sql::{Query, db_err, found, insert_err};
    use crate::store::{ChatStore, RunStore, from_json_text, json_text};

    pub(super) fn opt_json<T: serde::Serialize>(
        value: Option<&T>,
    ) -> StorageResult<Option<String>> {
        value.map(json_text).transpose()
    }

    pub(super) const INSERT_RUN: &str = "INSERT INTO runs (id, chat_id, status, state, result, \
         pending_tool_call, lease_owner, lease_expires_at, created_at, updated_at, end_reason) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";

    /// Binds [`INSERT_RUN`]: the run record `run`.
    pub(super) fn bind_run<'q>(
        query: Query<'q, super::Db>,
        run: &'q RunRecord,
    ) -> StorageResult<Query<'q, super::Db>> {
        Ok(query
            .bind(&run.id)
            .bind(run.chat_id.as_deref())
            .bind(run.status.as_str())
            .bind(opt_json(run.state.as_ref())?)
            .bind(opt_json(run.result.as_ref())?)
            .bind(opt_json(run.pending_tool_call.as_ref())?)
            .bind(run.lease_owner.as_deref())
            .bind(run.lease_expires_at)
            .bind(run.created_at)
            .bind(run.updated_at)
            .bind(opt_json(run.end_reason.as_ref())?))
    }

    impl SqlStore {
        /// [`RunStore::renew_leases`](crate::store::RunStore::renew_leases):
        /// the runs' leases, renewed.
        pub(super) async fn renew_run_leases(
            &self,
            owner: &str,
            run_ids: &[String],
            expires_at: i64,
        ) -> StorageResult<Vec<LeaseRenewal>> {
            let _turn = self.write_turn().await;
            let mut renewed: std::collections::HashSet<String> =
                std::collections::HashSet::with_capacity(run_ids.len());
            for batch in run_ids.chunks(LEASES_PER_RENEWAL) {
                // One statement renews the batch; rows not ours are not
                // returned.
                let mut renew = sqlx::QueryBuilder::<super::Db>::new(
                    "UPDATE runs SET lease_expires_at = ",
                );
                renew
                    .push_bind(expires_at)
                    .push(" WHERE lease_owner = ")
                    .push_bind(owner)
                    .push(" AND id IN (");
                let mut ids = renew.separated(", ");
                for id in batch {
                    ids.push_bind(id.as_str());
                }
                renew.push(") RETURNING id");
                let rows = renew
                    .build()
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)?;
                for row in &rows {
                    renewed.insert(sqlx::Row::try_get(row, "id").map_err(db_err)?);
                }
            }
            Ok(run_ids
                .iter()
                .map(|id| {
                    if renewed.contains(id) {
                        LeaseRenewal::Renewed
                    } else {
                        LeaseRenewal::Lost
                    }
                })
                .collect())
        }
    }

    #[async_trait]
    impl RunStore for SqlStore {
        async fn renew_leases(
            &self,
            owner: &str,
            run_ids: &[String],
            expires_at: i64,
        ) -> StorageResult<Vec<crate::model::LeaseRenewal>> {
            self.renew_run_leases(owner, run_ids, expires_at).await
        }

        async fn create_run(&self, run: &RunRecord) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            bind_run(sqlx::query(INSERT_RUN), run)?
                .execute(&self.pool)
                .await
                .map_err(|e| insert_err(e, "run", &run.id))?;
            Ok(())
        }

        async fn get_run(&self, id: &str) -> StorageResult<RunRecord> {
            let row = sqlx::query("SELECT * FROM runs WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?
                .ok_or_else(|| StorageError::not_found("run", id))?;
            rows::run(&row)
        }

        async fn list_runs(&self, chat_id: &str) -> StorageResult<Vec<RunRecord>> {
            sqlx::query("SELECT * FROM runs WHERE chat_id = $1 ORDER BY created_at, id")
                .bind(chat_id)
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?
                .iter()
                .map(rows::run)
                .collect()
        }

        async fn list_runs_in(
            &self,
            chat_id: &str,
            statuses: &[RunStatus],
        ) -> StorageResult<Vec<RunRecord>> {
            if statuses.is_empty() {
                return Ok(Vec::new());
            }
            // The statuses are the enum's own names, never caller text.
            let names: Vec<String> = statuses
                .iter()
                .map(|s| format!("'{}'", s.as_str()))
                .collect();
            let sql = format!(
                "SELECT * FROM runs WHERE chat_id = $1 AND status IN ({}) ORDER BY created_at, id",
                names.join(", ")
            );
            sqlx::query(&sql)
                .bind(chat_id)
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?
                .iter()
                .map(rows::run)
                .collect()
        }

        async fn last_run(&self, chat_id: &str) -> StorageResult<Option<RunRecord>> {
            sqlx::query("SELECT * FROM runs WHERE chat_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1")
                .bind(chat_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?
                .as_ref()
                .map(rows::run)
                .transpose()
        }

        async fn list_claimable_runs(&self, now: i64, limit: u32) -> StorageResult<Vec<RunRecord>> {
            sqlx::query(
                "SELECT * FROM runs WHERE status IN ('pending', 'running') AND \
                 (lease_owner IS NULL OR lease_expires_at IS NULL OR lease_expires_at <= $1) \
                 ORDER BY created_at, id LIMIT $2",
            )
            .bind(now)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?
            .iter()
            .map(rows::run)
            .collect()
        }

        async fn update_run(&self, run: &RunRecord) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            update_run_in(&self.pool, run).await
        }

        async fn resume_run(&self, run_id: &str, now: i64) -> StorageResult<bool> {
            let _turn = self.write_turn().await;
            let done = sqlx::query(
                "UPDATE runs SET status = 'running', updated_at = $2 \
                 WHERE id = $1 AND status = 'suspended'",
            )
            .bind(run_id)
            .bind(now)
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
            if done.rows_affected() == 0 {
                self.get_run(run_id).await?;
                return Ok(false);
            }
            Ok(true)
        }

        async fn acquire_lease(
            &self,
            run_id: &str,
            owner: &str,
            now: i64,
            expires_at: i64,
        ) -> StorageResult<bool> {
            let _turn = self.write_turn().await;
            let done = sqlx::query(
                "UPDATE runs SET lease_owner = $2, lease_expires_at = $4 WHERE id = $1 AND \
                 (lease_owner IS NULL OR lease_owner = $2 OR lease_expires_at IS NULL \
                 OR lease_expires_at <= $3)",
            )
            .bind(run_id)
            .bind(owner)
            .bind(now)
            .bind(expires_at)
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
            if done.rows_affected() == 0 {
                self.get_run(run_id).await?;
                return Ok(false);
            }
            Ok(true)
        }

        async fn release_lease(&self, run_id: &str, owner: &str) -> StorageResult<bool> {
            let _turn = self.write_turn().await;
            let done = sqlx::query(
                "UPDATE runs SET lease_owner = NULL, lease_expires_at = NULL \
                 WHERE id = $1 AND lease_owner = $2",
            )
            .bind(run_id)
            .bind(owner)
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
            if done.rows_affected() == 0 {
                self.get_run(run_id).await?;
                return Ok(false);
            }
            Ok(true)
        }

        async fn append_events(&self, run_id: &str, events: &[LoopEvent]) -> StorageResult<()> {
            if events.is_empty() {
                self.get_run(run_id).await?;
                return Ok(());
            }
            let mut rows = Vec::with_capacity(events.len());
            for event in events {
                rows.push(EventRow {
                    seq: to_i64(event.seq)?,
                    body: self.event_body(run_id, event).await?,
                });
            }
            let append = Append {
                run_id: run_id.to_owned(),
                rows,
            };
            self.writer.write(self, append).await
        }

        async fn watch_appends(&self) -> StorageResult<Option<crate::store::AppendWatch>> {
            super::watch_appends(&self.pool).await
        }

        async fn list_events(
            &self,
            run_id: &str,
            after: Option<u64>,
            limit: u32,
        ) -> StorageResult<Vec<LoopEvent>> {
            self.get_run(run_id).await?;
            let after = after.map(to_i64).transpose()?.unwrap_or(-1);
            let rows = sqlx::query(
                "SELECT body FROM run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
            )
            .bind(run_id)
            .bind(after)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
            let mut history: Option<Vec<StoredMessage>> = None;
            let mut events = Vec::with_capacity(rows.len());
            for row in &rows {
                let body: String = sqlx::Row::try_get(row, "body").map_err(db_err)?;
                events.push(self.event_of(run_id, &body, &mut history).await?);
            }
            Ok(events)
        }
    }

    /// Writes `run`'s record as it stands (see [`RunStore::update_run`])
    /// through `db`: the pool, or a transaction that writes more with it.
    pub(super) async fn update_run_in<'e>(
        db: impl sqlx::Executor<'e, Database = super::Db>,
        run: &RunRecord,
    ) -> StorageResult<()> {
        let done = sqlx::query(
            "UPDATE runs SET status = $2, state = $3, result = $4, pending_tool_call = $5, \
             updated_at = $6, end_reason = $7 WHERE id = $1",
        )
        .bind(&run.id)
        .bind(run.status.as_str())
        .bind(opt_json(run.state.as_ref())?)
        .bind(opt_json(run.result.as_ref())?)
        .bind(opt_json(run.pending_tool_call.as_ref())?)
        .bind(run.updated_at)
        .bind(opt_json(run.end_reason.as_ref())?)
        .execute(db)
        .await
        .map_err(db_err)?;
        found(done.rows_affected(), "run", &run.id)
    }

    /// The key a stored root `finished` event holds in place of its
    /// history: the seq of the chat's message the history ends with. The
    /// history is the chat's messages through that seq, stored once in
    /// the messages table; reading the event puts them back.
    const HISTORY_THROUGH: &str = "history_through_seq";

    impl SqlStore {
        /// The stored body of `event`: as it is, except a root `finished`
        /// event whose history is the start of its run's chat, which names
        /// the seq that history runs through instead of repeating it.
        async fn event_body(&self, run_id: &str, event: &LoopEvent) -> StorageResult<String> {
            let Some(result) = event.root_result().filter(|r| !r.messages.is_empty()) else {
                return json_text(event);
            };
            let Some(chat_id) = self.run_chat(run_id).await? else {
                return json_text(event);
            };
            let stored = self.list_messages(&chat_id).await?;
            let history = &result.messages[..];
            let through = match stored.get(history.len() - 1) {
                Some(last)
                    if stored
                        .iter()
                        .zip(history)
                        .all(|(stored, message)| stored.message == *message) =>
                {
                    last.seq
                }
                // A history the chat does not hold as it is: kept whole.
                _ => return json_text(event),
            };
            // The history left out before serialising: it is not written
            // only to be dropped.
            let without = LoopEvent {
                seq: event.seq,
                path: event.path.clone(),
                kind: agentloop_types::EventKind::Finished(agentloop_types::FinishedEvent {
                    result: Box::new(agentloop_types::LoopResult {
                        messages: Default::default(),
                        ..agentloop_types::LoopResult::clone(result)
                    }),
                }),
            };
            let mut value = serde_json::to_value(&without)?;
            if let Some(object) = value.as_object_mut() {
                object.insert(HISTORY_THROUGH.to_owned(), through.into());
            }
            json_text(&value)
        }

        /// The event stored as `body` in run `run_id`'s log, its history
        /// read back from the chat (`history` keeps the chat's messages
        /// once read).
        async fn event_of(
            &self,
            run_id: &str,
            body: &str,
            history: &mut Option<Vec<StoredMessage>>,
        ) -> StorageResult<LoopEvent> {
            if !body.contains(HISTORY_THROUGH) {
                return from_json_text(body);
            }
            let mut value: serde_json::Value = from_json_text(body)?;
            let through = value
                .as_object_mut()
                .and_then(|object| object.remove(HISTORY_THROUGH))
                .and_then(|through| through.as_u64());
            if let Some(through) = through {
                if history.is_none() {
                    let chat = self.run_chat(run_id).await?;
                    *history = Some(match chat {
                        Some(chat_id) => self.list_messages(&chat_id).await?,
                        None => Vec::new(),
                    });
                }
                let messages: Vec<&agentloop_types::Message> = history
                    .iter()
                    .flatten()
                    .filter(|m| m.seq <= through)
                    .map(|m| &m.message)
                    .collect();
                if let Some(result) = value.get_mut("result").and_then(|r| r.as_object_mut()) {
                    result.insert("messages".to_owned(), serde_json::to_value(messages)?);
                }
            }
            Ok(serde_json::from_value(value)?)
        }

        /// The chat run `run_id` runs in, if any.
        async fn run_chat(&self, run_id: &str) -> StorageResult<Option<String>> {
            let chat: Option<Option<String>> =
                sqlx::query_scalar("SELECT chat_id FROM runs WHERE id = $1")
                    .bind(run_id)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db_err)?;
            chat.ok_or_else(|| StorageError::not_found("run", run_id))
        }
    }

    /// Runs per lease renewal statement (one parameter each, under
    /// SQLite's oldest limit of 999).
    const LEASES_PER_RENEWAL: usize = 500;

    /// Rows per `INSERT` statement of a batch (three parameters each,
    /// under SQLite's oldest limit of 999).
    const ROWS_PER_INSERT: usize = 300;

    /// Inserts `appends`' events in `tx`, in order, many rows a statement.
    async fn insert_events(
        tx: &mut sqlx::Transaction<'_, super::Db>,
        appends: &[Append],
    ) -> Result<(), sqlx::Error> {
        let rows: Vec<(&str, &EventRow)> = appends
            .iter()
            .flat_map(|a| a.rows.iter().map(move |row| (a.run_id.as_str(), row)))
            .collect();
        for chunk in rows.chunks(ROWS_PER_INSERT) {
            let mut insert =
                sqlx::QueryBuilder::<super::Db>::new("INSERT INTO run_events (run_id, seq, body) ");
            insert.push_values(chunk, |mut values, (run_id, row)| {
                values
                    .push_bind(*run_id)
                    .push_bind(row.seq)
                    .push_bind(row.body.as_str());
            });
            insert.build().execute(&mut **tx).await?;
        }
        Ok(())
    }

    #[async_trait]
    impl CommitBatch<Append> for SqlStore {
        async fn commit_batch(&self, batch: &[Append]) -> StorageResult<()> {
            let mut turn = self.write_turn().await;
            let mut tx = turn.begin(&self.pool).await.map_err(db_err)?;
            insert_events(&mut tx, batch).await.map_err(db_err)?;
            let mut runs: Vec<&str> = batch.iter().map(|a| a.run_id.as_str()).collect();
            runs.sort_unstable();
            runs.dedup();
            super::announce_appends(&mut tx, &runs)
                .await
                .map_err(db_err)?;
            tx.commit().await.map_err(db_err)
        }

        async fn commit_one(&self, append: &Append) -> StorageResult<()> {
            let mut turn = self.write_turn().await;
            self.get_run(&append.run_id).await?;
            let mut tx = turn.begin(&self.pool).await.map_err(db_err)?;
            for row in &append.rows {
                sqlx::query("INSERT INTO run_events (run_id, seq, body) VALUES ($1, $2, $3)")
                    .bind(&append.run_id)
                    .bind(row.seq)
                    .bind(&row.body)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| insert_err(e, "event", &row.seq.to_string()))?;
            }
            super::announce_appends(&mut tx, &[append.run_id.as_str()])
                .await
                .map_err(db_err)?;
            tx.commit().await.map_err(db_err)
        }
    }
}
