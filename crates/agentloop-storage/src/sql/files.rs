/// Attachments and files for this driver.
mod sql_files {
    use async_trait::async_trait;

    use super::{SqlStore, rows};
    use crate::codec::to_i64;
    use crate::error::{StorageError, StorageResult};
    use crate::model::{Attachment, AttachmentMeta, FileRecord};
    use crate::sql::{below, db_err, found, insert_err};
    use crate::store::{AttachmentStore, FileStore};

    #[async_trait]
    impl AttachmentStore for SqlStore {
        async fn put_attachment(&self, attachment: &Attachment) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            let meta = &attachment.meta;
            sqlx::query(
                "INSERT INTO attachments (id, project_id, chat_id, media_type, name, size, data, \
                 created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .bind(&meta.id)
            .bind(&meta.project_id)
            .bind(meta.chat_id.as_deref())
            .bind(&meta.media_type)
            .bind(meta.name.as_deref())
            .bind(to_i64(attachment.data.len() as u64)?)
            .bind(attachment.data.as_slice())
            .bind(meta.created_at)
            .execute(&self.pool)
            .await
            .map_err(|e| insert_err(e, "attachment", &meta.id))?;
            Ok(())
        }

        async fn get_attachment(&self, id: &str) -> StorageResult<Attachment> {
            let row = sqlx::query("SELECT * FROM attachments WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?
                .ok_or_else(|| StorageError::not_found("attachment", id))?;
            rows::attachment(&row)
        }

        async fn list_attachments(&self, project_id: &str) -> StorageResult<Vec<AttachmentMeta>> {
            sqlx::query(
                "SELECT id, project_id, chat_id, media_type, name, size, created_at \
                 FROM attachments WHERE project_id = $1 ORDER BY created_at, id",
            )
            .bind(project_id)
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?
            .iter()
            .map(rows::attachment_meta)
            .collect()
        }

        async fn delete_attachment(&self, id: &str) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            let done = sqlx::query("DELETE FROM attachments WHERE id = $1")
                .bind(id)
                .execute(&self.pool)
                .await
                .map_err(db_err)?;
            found(done.rows_affected(), "attachment", id)
        }
    }

    #[async_trait]
    impl FileStore for SqlStore {
        async fn get_file(
            &self,
            project_id: &str,
            path: &str,
        ) -> StorageResult<Option<FileRecord>> {
            sqlx::query("SELECT * FROM files WHERE project_id = $1 AND path = $2")
                .bind(project_id)
                .bind(path)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?
                .as_ref()
                .map(rows::file)
                .transpose()
        }

        async fn put_file(&self, project_id: &str, record: &FileRecord) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            sqlx::query(
                "INSERT INTO files (project_id, path, kind, data, modified_at) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (project_id, path) DO UPDATE \
                 SET kind = excluded.kind, data = excluded.data, \
                 modified_at = excluded.modified_at",
            )
            .bind(project_id)
            .bind(&record.path)
            .bind(rows::kind_name(record.kind))
            .bind(record.data.as_slice())
            .bind(record.modified_at)
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
            Ok(())
        }

        async fn list_files(
            &self,
            project_id: &str,
            under: &str,
        ) -> StorageResult<Vec<FileRecord>> {
            let (low, high) = below(under);
            sqlx::query(
                "SELECT * FROM files WHERE project_id = $1 AND path > $2 AND path < $3 \
                 ORDER BY path",
            )
            .bind(project_id)
            .bind(low)
            .bind(high)
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?
            .iter()
            .map(rows::file)
            .collect()
        }

        async fn delete_file_tree(&self, project_id: &str, path: &str) -> StorageResult<u64> {
            let _turn = self.write_turn().await;
            let (low, high) = below(path);
            let done = sqlx::query(
                "DELETE FROM files WHERE project_id = $1 \
                 AND (path = $2 OR (path > $3 AND path < $4))",
            )
            .bind(project_id)
            .bind(path)
            .bind(low)
            .bind(high)
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
            Ok(done.rows_affected())
        }

        async fn rename_file_tree(
            &self,
            project_id: &str,
            from: &str,
            to: &str,
        ) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            let (low, high) = below(from);
            sqlx::query(
                "UPDATE files SET path = $5 || substr(path, length($2) + 1) WHERE project_id = $1 \
                 AND (path = $2 OR (path > $3 AND path < $4))",
            )
            .bind(project_id)
            .bind(from)
            .bind(low)
            .bind(high)
            .bind(to)
            .execute(&self.pool)
            .await
            .map_err(|e| insert_err(e, "file", to))?;
            Ok(())
        }
    }
}
