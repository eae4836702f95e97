/// Projects and their settings for this driver.
mod sql_projects {
    
    use async_trait::async_trait;

    use super::{SqlStore, rows};
    
    use crate::error::{StorageError, StorageResult};
    
    use crate::model::{ApprovalMode, Project};
    use crate::sql::{db_err, found, insert_err};
    use crate::store::{
        ProjectSettingsStore, ProjectStore, folders_overlap, from_json_text, json_text};

    /// Inserts `project`'s row (on the pool, or in a transaction).
    async fn insert_project<'e>(
        db: impl sqlx::Executor<'e, Database = super::Db>,
        project: &Project,
    ) -> StorageResult<()> {
        sqlx::query(
            "INSERT INTO projects (id, name, settings, approval_mode, created_at, \
             updated_at) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&project.id)
        .bind(&project.name)
        .bind(json_text(&project.settings)?)
        .bind(project.approval_mode.map(ApprovalMode::as_str))
        .bind(project.created_at)
        .bind(project.updated_at)
        .execute(db)
        .await
        .map_err(|e| insert_err(e, "project", &project.id))?;
        Ok(())
    }

    #[async_trait]
    impl ProjectSettingsStore for SqlStore {
        async fn project_settings(&self, project_id: &str) -> StorageResult<serde_json::Value> {
            let settings: String = sqlx::query_scalar("SELECT settings FROM projects WHERE id = $1")
                .bind(project_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?
                .ok_or_else(|| StorageError::not_found("project", project_id))?;
            from_json_text(&settings)
        }
    }

    #[async_trait]
    impl ProjectStore for SqlStore {
        async fn create_project(&self, project: &Project) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            insert_project(&self.pool, project).await
        }

        async fn get_project(&self, id: &str) -> StorageResult<Project> {
            let row = sqlx::query("SELECT * FROM projects WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?
                .ok_or_else(|| StorageError::not_found("project", id))?;
            rows::project(&row)
        }

        async fn list_projects(&self) -> StorageResult<Vec<Project>> {
            sqlx::query("SELECT * FROM projects ORDER BY created_at, id")
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?
                .iter()
                .map(rows::project)
                .collect()
        }

        async fn update_project(&self, project: &Project) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            let done = sqlx::query(
                "UPDATE projects SET name = $2, settings = $3, approval_mode = $4, \
                 updated_at = $5 WHERE id = $1",
            )
            .bind(&project.id)
            .bind(&project.name)
            .bind(json_text(&project.settings)?)
            .bind(project.approval_mode.map(ApprovalMode::as_str))
            .bind(project.updated_at)
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
            found(done.rows_affected(), "project", &project.id)
        }

        async fn delete_project(&self, id: &str) -> StorageResult<()> {
            let mut turn = self.write_turn().await;
            let mut tx = turn.begin(&self.pool).await.map_err(db_err)?;
            // The records of its tasks' agent runs (with their event logs)
            // belong to no chat, so the project's cascade misses them.
            sqlx::query(
                "DELETE FROM runs WHERE id IN (SELECT agent_runs.id FROM agent_runs \
                 JOIN tasks ON tasks.id = agent_runs.task_id WHERE tasks.project_id = $1)",
            )
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            sqlx::query("DELETE FROM memories WHERE scope_kind = 'project' AND scope_id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            let done = sqlx::query("DELETE FROM projects WHERE id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            found(done.rows_affected(), "project", id)?;
            tx.commit().await.map_err(db_err)
        }

        async fn create_project_in_folder(
            &self,
            project: &Project,
            folder: &str,
        ) -> StorageResult<()> {
            let mut turn = self.write_turn().await;
            let mut tx = turn.begin(&self.pool).await.map_err(db_err)?;
            // Writing the one lock row first serialises every folder claim
            // (a row lock on PostgreSQL, the write lock on SQLite), so the
            // overlap check below sees every committed folder.
            sqlx::query("UPDATE project_folder_lock SET claims = claims + 1 WHERE id = 1")
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            let taken: Vec<(String, String)> =
                sqlx::query_as("SELECT project_id, path FROM project_folders")
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(db_err)?;
            if let Some((other, _)) = taken
                .into_iter()
                .find(|(_, path)| folders_overlap(path, folder))
            {
                return Err(StorageError::FolderTaken {
                    folder: folder.to_owned(),
                    project_id: other,
                });
            }
            insert_project(&mut *tx, project).await?;
            sqlx::query("INSERT INTO project_folders (project_id, path) VALUES ($1, $2)")
                .bind(&project.id)
                .bind(folder)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            tx.commit().await.map_err(db_err)
        }
    }
}
