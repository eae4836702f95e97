/// Runs, run events, tasks, agent runs and conversations for this driver.
mod sql_runs {
    use agentloop_types::LoopEvent;
    use async_trait::async_trait;

    use super::{SqlStore, rows};
    use crate::codec::to_i64;
    use crate::error::{StorageError, StorageResult};
    use crate::group_commit::{Append, CommitAppends, EventRow};
    use crate::model::{
        AgentRun, AgentRunDecision, AgentRunStart, AgentRunStatus, Conversation, EndReason,
        LeaseRenewal, RunRecord, RunStatus, Task,
    };
    use crate::sql::{db_err, found, insert_err, is_unique};
    use crate::store::{RunStore, TaskStore, from_json_text, json_text};

    fn opt_json<T: serde::Serialize>(value: Option<&T>) -> StorageResult<Option<String>> {
        value.map(json_text).transpose()
    }

    /// Inserts the run record `run` (on the pool, or in a transaction).
    async fn insert_run<'e>(
        db: impl sqlx::Executor<'e, Database = super::Db>,
        run: &RunRecord,
    ) -> StorageResult<()> {
        sqlx::query(
            "INSERT INTO runs (id, chat_id, status, state, result, pending_tool_call, \
             lease_owner, lease_expires_at, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
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
        .execute(db)
        .await
        .map_err(|e| insert_err(e, "run", &run.id))?;
        Ok(())
    }

    /// Inserts the agent run `run` unless a unique rule refuses it (its id
    /// is taken, or its task already has an active run); whether it was
    /// inserted. A refusal leaves the statement's transaction usable.
    async fn insert_agent_run<'e>(
        db: impl sqlx::Executor<'e, Database = super::Db>,
        run: &AgentRun,
    ) -> StorageResult<bool> {
        let inserted = sqlx::query(
            "INSERT INTO agent_runs (id, task_id, agent_type, status, conversation_id, \
             created_at, completed_at, end_reason) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
             ON CONFLICT DO NOTHING",
        )
        .bind(&run.id)
        .bind(&run.task_id)
        .bind(run.agent_type.as_str())
        .bind(run.status.as_str())
        .bind(run.conversation_id.as_deref())
        .bind(run.created_at)
        .bind(run.completed_at)
        .bind(opt_json(run.end_reason.as_ref())?)
        .execute(db)
        .await
        .map_err(db_err)?;
        Ok(inserted.rows_affected() > 0)
    }

    /// Why the agent run `run` was refused by [`insert_agent_run`]: its id
    /// exists, or else its task already has an active run.
    async fn agent_run_refused(store: &SqlStore, run: &AgentRun) -> StorageError {
        match store.get_agent_run(&run.id).await {
            Ok(_) => StorageError::exists("agent run", &run.id),
            Err(_) => StorageError::ActiveAgentRunExists {
                task_id: run.task_id.clone(),
            },
        }
    }

    /// Inserts `conversation` (on the pool, or in a transaction).
    async fn insert_conversation<'e>(
        db: impl sqlx::Executor<'e, Database = super::Db>,
        conversation: &Conversation,
    ) -> StorageResult<()> {
        sqlx::query(
            "INSERT INTO conversations (id, task_id, chat_id, session_id, created_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(&conversation.id)
        .bind(&conversation.task_id)
        .bind(conversation.chat_id.as_deref())
        .bind(conversation.session_id.as_deref())
        .bind(conversation.created_at)
        .execute(db)
        .await
        .map_err(|e| insert_err(e, "conversation", &conversation.id))?;
        Ok(())
    }

    #[async_trait]
    impl RunStore for SqlStore {
        async fn create_run(&self, run: &RunRecord) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            insert_run(&self.pool, run).await
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
            let done = sqlx::query(
                "UPDATE runs SET status = $2, state = $3, result = $4, pending_tool_call = $5, \
                 updated_at = $6 WHERE id = $1",
            )
            .bind(&run.id)
            .bind(run.status.as_str())
            .bind(opt_json(run.state.as_ref())?)
            .bind(opt_json(run.result.as_ref())?)
            .bind(opt_json(run.pending_tool_call.as_ref())?)
            .bind(run.updated_at)
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
            found(done.rows_affected(), "run", &run.id)
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

        async fn renew_leases(
            &self,
            owner: &str,
            run_ids: &[String],
            expires_at: i64,
        ) -> StorageResult<Vec<LeaseRenewal>> {
            let _turn = self.write_turn().await;
            let mut found: std::collections::HashMap<String, Option<AgentRunStatus>> =
                std::collections::HashMap::with_capacity(run_ids.len());
            for batch in run_ids.chunks(LEASES_PER_RENEWAL) {
                // One statement renews the batch and reads each renewed
                // run's agent run status; rows not ours are not returned.
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
                renew.push(
                    ") RETURNING id, \
                     (SELECT status FROM agent_runs WHERE agent_runs.id = runs.id) AS agent_status",
                );
                let rows = renew
                    .build()
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_err)?;
                for row in &rows {
                    let id: String = sqlx::Row::try_get(row, "id").map_err(db_err)?;
                    let status: Option<String> =
                        sqlx::Row::try_get(row, "agent_status").map_err(db_err)?;
                    let status = status
                        .map(|s| {
                            AgentRunStatus::parse(&s)
                                .ok_or_else(|| crate::sql::bad_value("status", &s))
                        })
                        .transpose()?;
                    found.insert(id, status);
                }
            }
            Ok(run_ids
                .iter()
                .map(|id| match found.get(id) {
                    Some(agent_run) => LeaseRenewal::Renewed {
                        agent_run: *agent_run,
                    },
                    None => LeaseRenewal::Lost,
                })
                .collect())
        }

        async fn append_events(&self, run_id: &str, events: &[LoopEvent]) -> StorageResult<()> {
            if events.is_empty() {
                self.get_run(run_id).await?;
                return Ok(());
            }
            let rows = events
                .iter()
                .map(|event| {
                    Ok(EventRow {
                        seq: to_i64(event.seq)?,
                        body: json_text(event)?,
                    })
                })
                .collect::<StorageResult<Vec<_>>>()?;
            let append = Append {
                run_id: run_id.to_owned(),
                rows,
            };
            self.writer.append(self, append).await
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
            rows.iter()
                .map(|row| {
                    let body: String = sqlx::Row::try_get(row, "body").map_err(db_err)?;
                    from_json_text(&body)
                })
                .collect()
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
    impl CommitAppends for SqlStore {
        async fn commit_batch(&self, batch: &[Append]) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            let mut tx = self.pool.begin().await.map_err(db_err)?;
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
            let _turn = self.write_turn().await;
            self.get_run(&append.run_id).await?;
            let mut tx = self.pool.begin().await.map_err(db_err)?;
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

    #[async_trait]
    impl TaskStore for SqlStore {
        async fn create_task(&self, task: &Task) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            sqlx::query(
                "INSERT INTO tasks (id, project_id, title, workflow_complete, created_at, \
                 updated_at) VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(&task.id)
            .bind(&task.project_id)
            .bind(&task.title)
            .bind(task.workflow_complete)
            .bind(task.created_at)
            .bind(task.updated_at)
            .execute(&self.pool)
            .await
            .map_err(|e| insert_err(e, "task", &task.id))?;
            Ok(())
        }

        async fn get_task(&self, id: &str) -> StorageResult<Task> {
            let row = sqlx::query("SELECT * FROM tasks WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?
                .ok_or_else(|| StorageError::not_found("task", id))?;
            rows::task(&row)
        }

        async fn delete_task(&self, id: &str) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            let mut tx = self.pool.begin().await.map_err(db_err)?;
            // Writing the task row first takes its lock (the write lock on
            // SQLite), so the check below and the deletes see one state.
            let touched = sqlx::query("UPDATE tasks SET updated_at = updated_at WHERE id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            found(touched.rows_affected(), "task", id)?;
            let active: Option<String> = sqlx::query_scalar(
                "SELECT id FROM agent_runs WHERE task_id = $1 AND status IN ('running', 'waiting')",
            )
            .bind(id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?;
            if active.is_some() {
                return Err(StorageError::ActiveAgentRunExists {
                    task_id: id.to_owned(),
                });
            }
            // The agent runs' records carry their event logs (which go
            // with them); the conversations' chats carry the messages.
            sqlx::query("DELETE FROM runs WHERE id IN (SELECT id FROM agent_runs WHERE task_id = $1)")
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            let chats: Vec<String> = sqlx::query_scalar(
                "DELETE FROM chats WHERE id IN \
                 (SELECT chat_id FROM conversations WHERE task_id = $1) RETURNING id",
            )
            .bind(id)
            .fetch_all(&mut *tx)
            .await
            .map_err(db_err)?;
            // Agent runs, their decisions and the conversations go with it.
            sqlx::query("DELETE FROM tasks WHERE id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            tx.commit().await.map_err(db_err)?;
            for chat in chats {
                self.message_cache.forget(&chat);
            }
            Ok(())
        }

        async fn list_tasks(&self, project_id: &str) -> StorageResult<Vec<Task>> {
            sqlx::query("SELECT * FROM tasks WHERE project_id = $1 ORDER BY created_at, id")
                .bind(project_id)
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?
                .iter()
                .map(rows::task)
                .collect()
        }

        async fn set_workflow_complete(
            &self,
            task_id: &str,
            complete: bool,
            now: i64,
        ) -> StorageResult<Vec<AgentRun>> {
            let _turn = self.write_turn().await;
            let mut tx = self.pool.begin().await.map_err(db_err)?;
            let done = sqlx::query(
                "UPDATE tasks SET workflow_complete = $2, updated_at = $3 WHERE id = $1",
            )
            .bind(task_id)
            .bind(complete)
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            found(done.rows_affected(), "task", task_id)?;
            let mut finished = Vec::new();
            if complete {
                finished = sqlx::query(
                    "UPDATE agent_runs SET status = 'completed', completed_at = $2, \
                     end_reason = $3 WHERE task_id = $1 AND status IN ('running', 'waiting') \
                     RETURNING *",
                )
                .bind(task_id)
                .bind(now)
                .bind(json_text(&EndReason::workflow_complete())?)
                .fetch_all(&mut *tx)
                .await
                .map_err(db_err)?
                .iter()
                .map(rows::agent_run)
                .collect::<StorageResult<Vec<_>>>()?;
            }
            tx.commit().await.map_err(db_err)?;
            finished.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
            Ok(finished)
        }

        async fn create_agent_run(&self, run: &AgentRun) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            if insert_agent_run(&self.pool, run).await? {
                Ok(())
            } else {
                Err(agent_run_refused(self, run).await)
            }
        }

        async fn start_agent_run(&self, start: &AgentRunStart) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            let AgentRunStart {
                agent_run,
                chat,
                first_message,
                conversation,
                record,
            } = start;
            let mut tx = self.pool.begin().await.map_err(db_err)?;
            // A new chat holding one message: its counters start past it.
            super::sql_chats::insert_chat(&mut *tx, chat, 1, 1).await?;
            let body = json_text(first_message)?;
            super::sql_chats::insert_message(&mut *tx, &chat.id, 0, &first_message.id, &body, 1)
                .await?;
            insert_conversation(&mut *tx, conversation).await?;
            insert_run(&mut *tx, record).await?;
            // The agent run goes last, as it names its conversation: a task
            // with an active run refuses it here, and everything written
            // before is rolled back.
            if !insert_agent_run(&mut *tx, agent_run).await? {
                tx.rollback().await.map_err(db_err)?;
                return Err(agent_run_refused(self, agent_run).await);
            }
            tx.commit().await.map_err(db_err)
        }

        async fn get_agent_run(&self, id: &str) -> StorageResult<AgentRun> {
            let row = sqlx::query("SELECT * FROM agent_runs WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?
                .ok_or_else(|| StorageError::not_found("agent run", id))?;
            rows::agent_run(&row)
        }

        async fn list_agent_runs(&self, task_id: &str) -> StorageResult<Vec<AgentRun>> {
            sqlx::query("SELECT * FROM agent_runs WHERE task_id = $1 ORDER BY created_at, id")
                .bind(task_id)
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?
                .iter()
                .map(rows::agent_run)
                .collect()
        }

        async fn active_agent_run(&self, task_id: &str) -> StorageResult<Option<AgentRun>> {
            sqlx::query(
                "SELECT * FROM agent_runs WHERE task_id = $1 AND status IN ('running', 'waiting')",
            )
            .bind(task_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?
                .as_ref()
                .map(rows::agent_run)
                .transpose()
        }

        async fn list_active_agent_runs(&self) -> StorageResult<Vec<AgentRun>> {
            sqlx::query("SELECT * FROM agent_runs WHERE status = 'running' ORDER BY created_at, id")
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?
                .iter()
                .map(rows::agent_run)
                .collect()
        }

        async fn set_agent_run_status(
            &self,
            id: &str,
            status: AgentRunStatus,
            completed_at: Option<i64>,
        ) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            let done =
                sqlx::query("UPDATE agent_runs SET status = $2, completed_at = $3 WHERE id = $1")
                    .bind(id)
                    .bind(status.as_str())
                    .bind(completed_at)
                    .execute(&self.pool)
                    .await;
            match done {
                Ok(done) => found(done.rows_affected(), "agent run", id),
                Err(e) if is_unique(&e) => {
                    let run = self.get_agent_run(id).await?;
                    Err(StorageError::ActiveAgentRunExists {
                        task_id: run.task_id,
                    })
                }
                Err(e) => Err(db_err(e)),
            }
        }

        async fn finish_agent_run(
            &self,
            id: &str,
            status: AgentRunStatus,
            completed_at: i64,
            reason: Option<&EndReason>,
        ) -> StorageResult<bool> {
            let _turn = self.write_turn().await;
            if status.is_active() {
                return Err(StorageError::Invalid(format!(
                    "an agent run cannot finish as {}",
                    status.as_str()
                )));
            }
            let done = sqlx::query(
                "UPDATE agent_runs SET status = $2, completed_at = $3, end_reason = $4 \
                 WHERE id = $1 AND status IN ('running', 'waiting')",
            )
            .bind(id)
            .bind(status.as_str())
            .bind(completed_at)
            .bind(opt_json(reason)?)
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
            if done.rows_affected() == 0 {
                self.get_agent_run(id).await?;
                return Ok(false);
            }
            Ok(true)
        }

        async fn switch_agent_run(
            &self,
            id: &str,
            from: AgentRunStatus,
            to: AgentRunStatus,
        ) -> StorageResult<bool> {
            let _turn = self.write_turn().await;
            if !(from.is_active() && to.is_active()) {
                return Err(StorageError::Invalid(
                    "an agent run switches only between running and waiting".into(),
                ));
            }
            let done = sqlx::query("UPDATE agent_runs SET status = $3 WHERE id = $1 AND status = $2")
                .bind(id)
                .bind(from.as_str())
                .bind(to.as_str())
                .execute(&self.pool)
                .await
                .map_err(db_err)?;
            if done.rows_affected() == 0 {
                self.get_agent_run(id).await?;
                return Ok(false);
            }
            Ok(true)
        }

        async fn add_agent_run_decision(
            &self,
            agent_run_id: &str,
            decision: &AgentRunDecision,
        ) -> StorageResult<bool> {
            let _turn = self.write_turn().await;
            let inserted = sqlx::query(
                "INSERT INTO agent_run_decisions (agent_run_id, call_id, decision, decided_at) \
                 VALUES ($1, $2, $3, $4)",
            )
            .bind(agent_run_id)
            .bind(&decision.call_id)
            .bind(json_text(&decision.decision)?)
            .bind(decision.decided_at)
            .execute(&self.pool)
            .await;
            match inserted {
                Ok(_) => Ok(true),
                Err(e) if is_unique(&e) => Ok(false),
                Err(e) => {
                    self.get_agent_run(agent_run_id).await?;
                    Err(db_err(e))
                }
            }
        }

        async fn list_agent_run_decisions(
            &self,
            agent_run_id: &str,
        ) -> StorageResult<Vec<AgentRunDecision>> {
            sqlx::query(
                "SELECT * FROM agent_run_decisions WHERE agent_run_id = $1 \
                 ORDER BY decided_at, call_id",
            )
            .bind(agent_run_id)
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?
            .iter()
            .map(rows::agent_run_decision)
            .collect()
        }

        async fn clear_agent_run_decisions(&self, agent_run_id: &str) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            sqlx::query("DELETE FROM agent_run_decisions WHERE agent_run_id = $1")
                .bind(agent_run_id)
                .execute(&self.pool)
                .await
                .map_err(db_err)?;
            Ok(())
        }

        async fn link_conversation(
            &self,
            agent_run_id: &str,
            conversation_id: &str,
        ) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            let done = sqlx::query("UPDATE agent_runs SET conversation_id = $2 WHERE id = $1")
                .bind(agent_run_id)
                .bind(conversation_id)
                .execute(&self.pool)
                .await
                .map_err(db_err)?;
            found(done.rows_affected(), "agent run", agent_run_id)
        }

        async fn create_conversation(&self, conversation: &Conversation) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            insert_conversation(&self.pool, conversation).await
        }

        async fn get_conversation(&self, id: &str) -> StorageResult<Conversation> {
            let row = sqlx::query("SELECT * FROM conversations WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?
                .ok_or_else(|| StorageError::not_found("conversation", id))?;
            rows::conversation(&row)
        }

        async fn list_conversations(&self, task_id: &str) -> StorageResult<Vec<Conversation>> {
            sqlx::query("SELECT * FROM conversations WHERE task_id = $1 ORDER BY created_at, id")
                .bind(task_id)
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?
                .iter()
                .map(rows::conversation)
                .collect()
        }

        async fn set_conversation_session(&self, id: &str, session_id: &str) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            let done = sqlx::query("UPDATE conversations SET session_id = $2 WHERE id = $1")
                .bind(id)
                .bind(session_id)
                .execute(&self.pool)
                .await
                .map_err(db_err)?;
            found(done.rows_affected(), "conversation", id)
        }
    }
}
