/// Project members for this driver.
mod sql_members {
    use async_trait::async_trait;
    use sqlx::Row;

    use super::{DbRow, SqlStore};
    use crate::error::StorageResult;
    use crate::members::{MembersStore, ProjectMember, ProjectRole};
    use crate::sql::{bad_value, db_err, found, insert_err};

    const COLUMNS: &str = "project_id, user_id, role, added_at";

    #[async_trait]
    impl MembersStore for SqlStore {
        async fn add_project_member(&self, member: &ProjectMember) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            sqlx::query(&format!(
                "INSERT INTO project_members ({COLUMNS}) VALUES ($1, $2, $3, $4)"
            ))
            .bind(&member.project_id)
            .bind(&member.user_id)
            .bind(member.role.as_str())
            .bind(member.added_at)
            .execute(&self.pool)
            .await
            .map_err(|e| insert_err(e, "member", &member.user_id))?;
            Ok(())
        }

        async fn project_role(
            &self,
            project_id: &str,
            user_id: &str,
        ) -> StorageResult<Option<ProjectRole>> {
            let role: Option<String> = sqlx::query_scalar(
                "SELECT role FROM project_members WHERE project_id = $1 AND user_id = $2",
            )
            .bind(project_id)
            .bind(user_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?;
            role.map(|role| ProjectRole::parse(&role).ok_or_else(|| bad_value("role", &role)))
                .transpose()
        }

        async fn set_project_role(
            &self,
            project_id: &str,
            user_id: &str,
            role: ProjectRole,
        ) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            let done = sqlx::query(
                "UPDATE project_members SET role = $3 WHERE project_id = $1 AND user_id = $2",
            )
            .bind(project_id)
            .bind(user_id)
            .bind(role.as_str())
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
            found(done.rows_affected(), "member", user_id)
        }

        async fn remove_project_member(
            &self,
            project_id: &str,
            user_id: &str,
        ) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            let done =
                sqlx::query("DELETE FROM project_members WHERE project_id = $1 AND user_id = $2")
                    .bind(project_id)
                    .bind(user_id)
                    .execute(&self.pool)
                    .await
                    .map_err(db_err)?;
            found(done.rows_affected(), "member", user_id)
        }

        async fn list_project_members(
            &self,
            project_id: &str,
        ) -> StorageResult<Vec<ProjectMember>> {
            sqlx::query(&format!(
                "SELECT {COLUMNS} FROM project_members WHERE project_id = $1 \
                 ORDER BY added_at, user_id"
            ))
            .bind(project_id)
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?
            .iter()
            .map(member)
            .collect()
        }

        async fn list_memberships(&self, user_id: &str) -> StorageResult<Vec<ProjectMember>> {
            sqlx::query(&format!(
                "SELECT {COLUMNS} FROM project_members WHERE user_id = $1 \
                 ORDER BY added_at, project_id"
            ))
            .bind(user_id)
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?
            .iter()
            .map(member)
            .collect()
        }
    }

    fn member(row: &DbRow) -> StorageResult<ProjectMember> {
        let role: String = row.try_get("role").map_err(db_err)?;
        Ok(ProjectMember {
            project_id: row.try_get("project_id").map_err(db_err)?,
            user_id: row.try_get("user_id").map_err(db_err)?,
            role: ProjectRole::parse(&role).ok_or_else(|| bad_value("role", &role))?,
            added_at: row.try_get("added_at").map_err(db_err)?,
        })
    }
}
