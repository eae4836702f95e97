/// The audit log for this driver.
mod sql_audit {
    use async_trait::async_trait;
    use sqlx::Row;

    use super::{DbRow, SqlStore};
    use crate::error::StorageResult;
    use crate::model::{AuditEntry, AuditFilter};
    use crate::sql::{db_err, insert_err};
    use crate::store::{AuditStore, from_json_text, json_text};

    #[async_trait]
    impl AuditStore for SqlStore {
        async fn append_audit(&self, entry: &AuditEntry) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            sqlx::query(
                "INSERT INTO audit_log \
                 (id, at, user_id, action, project_id, target, address, detail) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .bind(&entry.id)
            .bind(entry.at)
            .bind(&entry.user_id)
            .bind(&entry.action)
            .bind(&entry.project_id)
            .bind(&entry.target)
            .bind(&entry.address)
            .bind(json_text(&entry.detail)?)
            .execute(&self.pool)
            .await
            .map_err(|e| insert_err(e, "audit entry", &entry.id))?;
            Ok(())
        }

        async fn list_audit(&self, filter: &AuditFilter) -> StorageResult<Vec<AuditEntry>> {
            // An absent bound is bound as NULL, which the condition lets
            // through.
            let mut newest = sqlx::query(
                "SELECT id, at, user_id, action, project_id, target, address, detail \
                 FROM audit_log \
                 WHERE ($1 IS NULL OR project_id = $1) AND ($2 IS NULL OR user_id = $2) \
                 AND ($3 IS NULL OR at >= $3) AND ($4 IS NULL OR at < $4) \
                 AND ($6 IS NULL OR (user_id IS NULL AND target = $6)) \
                 ORDER BY at DESC, id DESC LIMIT $5",
            )
            .bind(&filter.project_id)
            .bind(&filter.user_id)
            .bind(filter.since)
            .bind(filter.until)
            .bind(i64::from(filter.limit))
            .bind(&filter.operator_on)
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?
            .iter()
            .map(entry)
            .collect::<StorageResult<Vec<_>>>()?;
            newest.reverse();
            Ok(newest)
        }
    }

    fn entry(row: &DbRow) -> StorageResult<AuditEntry> {
        let detail: String = row.try_get("detail").map_err(db_err)?;
        Ok(AuditEntry {
            id: row.try_get("id").map_err(db_err)?,
            at: row.try_get("at").map_err(db_err)?,
            user_id: row.try_get("user_id").map_err(db_err)?,
            action: row.try_get("action").map_err(db_err)?,
            project_id: row.try_get("project_id").map_err(db_err)?,
            target: row.try_get("target").map_err(db_err)?,
            address: row.try_get("address").map_err(db_err)?,
            detail: from_json_text(&detail)?,
        })
    }
}
