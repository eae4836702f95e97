/// Tasks, agent runs and their conversations for this driver.
mod sql_tasks {
    use std::sync::LazyLock;

    use async_trait::async_trait;

    use super::sql_chats::{INSERT_CHAT, INSERT_MESSAGE, bind_chat, bind_message};
    use super::sql_runs::{INSERT_RUN, bind_run, opt_json};
    use super::{SqlStore, rows};
    use crate::error::{StorageError, StorageResult};
    use crate::model::{
        AgentRun, AgentRunDecision, AgentRunStart, AgentRunStatus, ChainEnd, Conversation, EndReason,
        Task,
    };
    use crate::sql::{Query, db_err, found, insert_err, is_unique, numbered_in_turn};
    use crate::store::{ChatStore, RunStore, TaskStore, json_text};

    /// Agent runs per status read (one parameter each, under SQLite's
    /// oldest limit of 999).
    const STATUSES_PER_READ: usize = 500;

    const INSERT_AGENT_RUN: &str = "INSERT INTO agent_runs (id, task_id, agent_type, status, \
         conversation_id, created_at, completed_at, end_reason) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";

    /// Binds [`INSERT_AGENT_RUN`]: the agent run `run`. A unique rule
    /// refuses it when its id is taken or its task already has an active
    /// run.
    fn bind_agent_run<'q>(
        query: Query<'q, super::Db>,
        run: &'q AgentRun,
    ) -> StorageResult<Query<'q, super::Db>> {
        Ok(query
            .bind(&run.id)
            .bind(&run.task_id)
            .bind(run.agent_type.as_str())
            .bind(run.status.as_str())
            .bind(run.conversation_id.as_deref())
            .bind(run.created_at)
            .bind(run.completed_at)
            .bind(opt_json(run.end_reason.as_ref())?))
    }

    /// Why the agent run `run` was refused: its id exists, or else its
    /// task already has an active run.
    async fn agent_run_refused(store: &SqlStore, run: &AgentRun) -> StorageError {
        match store.get_agent_run(&run.id).await {
            Ok(_) => StorageError::exists("agent run", &run.id),
            Err(_) => StorageError::ActiveAgentRunExists {
                task_id: run.task_id.clone(),
            },
        }
    }

    const INSERT_CONVERSATION: &str = "INSERT INTO conversations (id, task_id, chat_id, \
         session_id, created_at) VALUES ($1, $2, $3, $4, $5)";

    /// Binds [`INSERT_CONVERSATION`]: `conversation`.
    fn bind_conversation<'q>(
        query: Query<'q, super::Db>,
        conversation: &'q Conversation,
    ) -> Query<'q, super::Db> {
        query
            .bind(&conversation.id)
            .bind(&conversation.task_id)
            .bind(conversation.chat_id.as_deref())
            .bind(conversation.session_id.as_deref())
            .bind(conversation.created_at)
    }

    /// A chain's start, when the start begins one (else it matches no
    /// row): bound by [`bind_start`].
    const BEGIN_CHAIN: &str = "UPDATE tasks SET chain_started_at = $2, chain_end = NULL \
         WHERE id = $1 AND $3";

    /// The start's audit entry, when it has one (else it selects no row).
    const INSERT_START_AUDIT: &str = "INSERT INTO audit_log \
         (id, at, user_id, action, project_id, target, address, detail) \
         SELECT $1, $2, $3, $4, $5, $6, $7, $8 WHERE $9";

    /// The schedule the start's agent run spends for, when it has one
    /// (else it selects no row).
    const INSERT_SCHEDULE_RUN: &str = "INSERT INTO schedule_runs (agent_run_id, schedule_id) \
         SELECT $1, $2 WHERE $3";

    /// The chat (past its first message), first message, conversation,
    /// record, the chain it may begin, its audit entry, agent run and the
    /// schedule it spends for of a start, in that order: each row names
    /// those before it, and the agent run goes after everything it needs,
    /// so that a task with an active run refuses the start after the rest
    /// was checked. A start is written whole or not at all, so a refused
    /// one begins no chain and leaves no entry.
    pub(super) const START_STATEMENTS: [&str; 8] = [
        INSERT_CHAT,
        INSERT_MESSAGE,
        INSERT_CONVERSATION,
        INSERT_RUN,
        BEGIN_CHAIN,
        INSERT_START_AUDIT,
        INSERT_AGENT_RUN,
        INSERT_SCHEDULE_RUN,
    ];

    /// [`START_STATEMENTS`] as one query, so that a start is one exchange
    /// with the database while every other writer waits for the write
    /// turn: on SQLite the five statements one after the other (SQLite
    /// runs them in one call to the connection's thread), on PostgreSQL
    /// (which takes one statement a query when it has arguments) one
    /// statement, the first four as data-modifying `WITH` clauses of the
    /// last, written whole or not at all.
    static START_QUERY: LazyLock<String> = LazyLock::new(|| {
        let mut statements = numbered_in_turn(&START_STATEMENTS);
        if super::SEVERAL_STATEMENTS_A_QUERY {
            return statements.join(";\n");
        }
        let last = statements.pop().unwrap_or_default();
        let clauses: Vec<String> = statements
            .iter()
            .enumerate()
            .map(|(i, statement)| format!("part_{i} AS ({statement})"))
            .collect();
        format!("WITH {} {last}", clauses.join(", "))
    });

    /// [`START_QUERY`] in a transaction of its own, for a connection that
    /// takes it whole (on SQLite with a writing connection: one exchange
    /// with the connection's thread where a transaction around it takes
    /// three).
    static START_WHOLE: LazyLock<String> =
        LazyLock::new(|| format!("BEGIN;\n{};\nCOMMIT", START_QUERY.as_str()));

    /// Binds `start` to `query`'s next arguments ([`START_QUERY`],
    /// [`START_WHOLE`], or one start of a batch), its first message written
    /// as `message_body`.
    pub(super) fn bind_start<'q>(
        query: Query<'q, super::Db>,
        start: &'q AgentRunStart,
        message_body: &'q str,
    ) -> StorageResult<Query<'q, super::Db>> {
        let AgentRunStart {
            agent_run,
            chat,
            first_message,
            conversation,
            record,
            begins_chain,
            audit,
            schedule_id,
        } = start;
        let query = bind_chat(query, chat, 1, 1)?;
        let query = bind_message(query, &chat.id, 0, &first_message.id, message_body, 1);
        let query = bind_conversation(query, conversation);
        let query = bind_run(query, record)?;
        let query = query
            .bind(&agent_run.task_id)
            .bind(agent_run.created_at)
            .bind(*begins_chain);
        let query = match audit {
            Some(entry) => query
                .bind(&entry.id)
                .bind(entry.at)
                .bind(entry.user_id.as_deref())
                .bind(&entry.action)
                .bind(entry.project_id.as_deref())
                .bind(entry.target.as_deref())
                .bind(entry.address.as_deref())
                .bind(json_text(&entry.detail)?)
                .bind(true),
            None => query
                .bind(None::<&str>)
                .bind(None::<i64>)
                .bind(None::<&str>)
                .bind(None::<&str>)
                .bind(None::<&str>)
                .bind(None::<&str>)
                .bind(None::<&str>)
                .bind(None::<&str>)
                .bind(false),
        };
        Ok(bind_agent_run(query, agent_run)?
            .bind(&agent_run.id)
            .bind(schedule_id.as_deref())
            .bind(schedule_id.is_some()))
    }

    /// Why a unique rule refused `start`, read once nothing of it was
    /// written (the driver's error does not say which statement of a query
    /// failed): most often its task's active run, asked about first;
    /// otherwise an id it brought was taken.
    async fn start_refused(store: &SqlStore, start: &AgentRunStart) -> StorageError {
        let refused_for_active = StorageError::ActiveAgentRunExists {
            task_id: start.agent_run.task_id.clone(),
        };
        if let Ok(Some(_)) = store.active_agent_run(&start.agent_run.task_id).await {
            refused_for_active
        } else if store.get_run(&start.record.id).await.is_ok() {
            StorageError::exists("run", &start.record.id)
        } else if store.get_chat(&start.chat.id).await.is_ok() {
            StorageError::exists("chat", &start.chat.id)
        } else if store.get_conversation(&start.conversation.id).await.is_ok() {
            StorageError::exists("conversation", &start.conversation.id)
        } else if store.get_agent_run(&start.agent_run.id).await.is_ok() {
            StorageError::exists("agent run", &start.agent_run.id)
        } else {
            // No id was taken: the active run that refused it ended since.
            refused_for_active
        }
    }

    /// Writes `start` in a transaction of its own, its first message
    /// written as `body`.
    pub(super) async fn write_start(
        store: &SqlStore,
        start: &AgentRunStart,
        body: &str,
    ) -> StorageResult<()> {
        let mut turn = store.write_turn().await;
        let written = if let Some(writer) = turn.whole() {
            writer
                .write_whole(bind_start(sqlx::query(&START_WHOLE), start, body)?)
                .await
        } else if super::SEVERAL_STATEMENTS_A_QUERY {
            let query = bind_start(sqlx::query(&START_QUERY), start, body)?;
            // Several statements are written whole only in a transaction.
            let mut tx = turn.begin(&store.pool).await.map_err(db_err)?;
            match query.execute(&mut *tx).await {
                Ok(_) => tx.commit().await,
                Err(e) => {
                    tx.rollback().await.map_err(db_err)?;
                    Err(e)
                }
            }
        } else {
            bind_start(sqlx::query(&START_QUERY), start, body)?
                .execute(&store.pool)
                .await
                .map(drop)
        };
        match written {
            Ok(()) => Ok(()),
            Err(e) if is_unique(&e) => Err(start_refused(store, start).await),
            Err(e) => Err(db_err(e)),
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
            let mut turn = self.write_turn().await;
            let mut tx = turn.begin(&self.pool).await.map_err(db_err)?;
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
            let mut turn = self.write_turn().await;
            let mut tx = turn.begin(&self.pool).await.map_err(db_err)?;
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

        async fn end_task_chain(&self, task_id: &str, end: &ChainEnd) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            let done = sqlx::query("UPDATE tasks SET chain_end = $2 WHERE id = $1")
                .bind(task_id)
                .bind(json_text(end)?)
                .execute(&self.pool)
                .await
                .map_err(db_err)?;
            found(done.rows_affected(), "task", task_id)
        }

        async fn create_agent_run(&self, run: &AgentRun) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            match bind_agent_run(sqlx::query(INSERT_AGENT_RUN), run)?
                .execute(&self.pool)
                .await
            {
                Ok(_) => Ok(()),
                Err(e) if is_unique(&e) => Err(agent_run_refused(self, run).await),
                Err(e) => Err(db_err(e)),
            }
        }

        async fn start_agent_run(&self, start: &AgentRunStart) -> StorageResult<()> {
            let body = json_text(&start.first_message)?;
            match super::start_in_batch(self, start, &body).await {
                Some(written) => written,
                None => write_start(self, start, &body).await,
            }
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

        async fn agent_run_statuses(
            &self,
            ids: &[String],
        ) -> StorageResult<Vec<Option<AgentRunStatus>>> {
            let mut found: std::collections::HashMap<String, AgentRunStatus> =
                std::collections::HashMap::with_capacity(ids.len());
            for batch in ids.chunks(STATUSES_PER_READ) {
                let mut read =
                    sqlx::QueryBuilder::<super::Db>::new("SELECT id, status FROM agent_runs WHERE id IN (");
                let mut listed = read.separated(", ");
                for id in batch {
                    listed.push_bind(id.as_str());
                }
                read.push(")");
                let rows = read.build().fetch_all(&self.pool).await.map_err(db_err)?;
                for row in &rows {
                    let id: String = sqlx::Row::try_get(row, "id").map_err(db_err)?;
                    let status: String = sqlx::Row::try_get(row, "status").map_err(db_err)?;
                    let status = AgentRunStatus::parse(&status)
                        .ok_or_else(|| crate::sql::bad_value("status", &status))?;
                    found.insert(id, status);
                }
            }
            Ok(ids.iter().map(|id| found.get(id).copied()).collect())
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
            bind_conversation(sqlx::query(INSERT_CONVERSATION), conversation)
                .execute(&self.pool)
                .await
                .map_err(|e| insert_err(e, "conversation", &conversation.id))?;
            Ok(())
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
