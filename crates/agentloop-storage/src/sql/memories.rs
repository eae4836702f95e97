/// Memories for this driver.
mod sql_memories {
    use async_trait::async_trait;
    use sqlx::Row;

    use super::{DbRow, SqlStore};
    use crate::error::{StorageError, StorageResult};
    use crate::model::{MemoryRecord, MemoryScope, MemoryScopeKind};
    use crate::sql::{bad_value, below, db_err, found, insert_err};
    use crate::store::MemoriesStore;

    const COLUMNS: &str = "id, scope_kind, scope_id, path, text, source_run, source_step, \
                           created_at, updated_at, expires_at";

    #[async_trait]
    impl MemoriesStore for SqlStore {
        async fn save_memory(&self, memory: &MemoryRecord) -> StorageResult<MemoryRecord> {
            let _turn = self.write_turn().await;
            // A memory that expired is replaced whole: it was forgotten.
            let row = sqlx::query(&format!(
                "INSERT INTO memories ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
                 ON CONFLICT (scope_kind, scope_id, path) DO UPDATE SET \
                 id = CASE WHEN memories.expires_at <= excluded.updated_at \
                      THEN excluded.id ELSE memories.id END, \
                 created_at = CASE WHEN memories.expires_at <= excluded.updated_at \
                      THEN excluded.created_at ELSE memories.created_at END, \
                 text = excluded.text, source_run = excluded.source_run, \
                 source_step = excluded.source_step, updated_at = excluded.updated_at, \
                 expires_at = excluded.expires_at \
                 RETURNING {COLUMNS}"
            ))
            .bind(&memory.id)
            .bind(memory.scope.kind.as_str())
            .bind(&memory.scope.id)
            .bind(&memory.path)
            .bind(&memory.text)
            .bind(memory.source_run.as_deref())
            .bind(memory.source_step.as_deref())
            .bind(memory.created_at)
            .bind(memory.updated_at)
            .bind(memory.expires_at)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| insert_err(e, "memory", &memory.id))?;
            record(&row)
        }

        async fn get_memory(&self, id: &str) -> StorageResult<MemoryRecord> {
            let row = sqlx::query(&format!("SELECT {COLUMNS} FROM memories WHERE id = $1"))
                .bind(id)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?
                .ok_or_else(|| StorageError::not_found("memory", id))?;
            record(&row)
        }

        async fn find_memory(
            &self,
            scope: &MemoryScope,
            path: &str,
            now: i64,
        ) -> StorageResult<Option<MemoryRecord>> {
            sqlx::query(&format!(
                "SELECT {COLUMNS} FROM memories WHERE scope_kind = $1 AND scope_id = $2 \
                 AND path = $3 AND (expires_at IS NULL OR expires_at > $4)"
            ))
            .bind(scope.kind.as_str())
            .bind(&scope.id)
            .bind(path)
            .bind(now)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?
            .as_ref()
            .map(record)
            .transpose()
        }

        async fn list_memories(
            &self,
            scope: &MemoryScope,
            under: &str,
            now: i64,
        ) -> StorageResult<Vec<MemoryRecord>> {
            let (low, high) = below(under);
            sqlx::query(&format!(
                "SELECT {COLUMNS} FROM memories WHERE scope_kind = $1 AND scope_id = $2 \
                 AND path > $3 AND path < $4 AND (expires_at IS NULL OR expires_at > $5) \
                 ORDER BY path"
            ))
            .bind(scope.kind.as_str())
            .bind(&scope.id)
            .bind(low)
            .bind(high)
            .bind(now)
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?
            .iter()
            .map(record)
            .collect()
        }

        // One read for every scope: a server recalls at each run's start.
        async fn recall_memories(
            &self,
            scopes: &[MemoryScope],
            now: i64,
        ) -> StorageResult<Vec<MemoryRecord>> {
            if scopes.is_empty() {
                return Ok(Vec::new());
            }
            let any_scope = (0..scopes.len())
                .map(|i| format!("(scope_kind = ${} AND scope_id = ${})", 2 * i + 2, 2 * i + 3))
                .collect::<Vec<_>>()
                .join(" OR ");
            let text = format!(
                "SELECT {COLUMNS} FROM memories WHERE path > '/' AND path < '0' \
                 AND (expires_at IS NULL OR expires_at > $1) AND ({any_scope}) ORDER BY path"
            );
            let mut query = sqlx::query(&text).bind(now);
            for scope in scopes {
                query = query.bind(scope.kind.as_str()).bind(&scope.id);
            }
            let mut memories = query
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?
                .iter()
                .map(record)
                .collect::<StorageResult<Vec<_>>>()?;
            // Stable: each scope's stay sorted by path.
            memories.sort_by_key(|memory| scopes.iter().position(|s| *s == memory.scope));
            Ok(memories)
        }

        async fn delete_memory(&self, id: &str) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            let done = sqlx::query("DELETE FROM memories WHERE id = $1")
                .bind(id)
                .execute(&self.pool)
                .await
                .map_err(db_err)?;
            found(done.rows_affected(), "memory", id)
        }

        async fn delete_memory_tree(&self, scope: &MemoryScope, path: &str) -> StorageResult<u64> {
            let _turn = self.write_turn().await;
            let (low, high) = below(path);
            let done = sqlx::query(
                "DELETE FROM memories WHERE scope_kind = $1 AND scope_id = $2 \
                 AND (path = $3 OR (path > $4 AND path < $5))",
            )
            .bind(scope.kind.as_str())
            .bind(&scope.id)
            .bind(path)
            .bind(low)
            .bind(high)
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
            Ok(done.rows_affected())
        }

        async fn move_memory_tree(
            &self,
            scope: &MemoryScope,
            from: &str,
            to: &str,
            now: i64,
        ) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            let (low, high) = below(from);
            sqlx::query(
                "UPDATE memories SET path = $6 || substr(path, length($3) + 1), updated_at = $7 \
                 WHERE scope_kind = $1 AND scope_id = $2 \
                 AND (path = $3 OR (path > $4 AND path < $5))",
            )
            .bind(scope.kind.as_str())
            .bind(&scope.id)
            .bind(from)
            .bind(low)
            .bind(high)
            .bind(to)
            .bind(now)
            .execute(&self.pool)
            .await
            .map_err(|e| insert_err(e, "memory", to))?;
            Ok(())
        }
    }

    fn record(row: &DbRow) -> StorageResult<MemoryRecord> {
        let kind: String = row.try_get("scope_kind").map_err(db_err)?;
        Ok(MemoryRecord {
            id: row.try_get("id").map_err(db_err)?,
            scope: MemoryScope {
                kind: MemoryScopeKind::parse(&kind)
                    .ok_or_else(|| bad_value("memory scope", &kind))?,
                id: row.try_get("scope_id").map_err(db_err)?,
            },
            path: row.try_get("path").map_err(db_err)?,
            text: row.try_get("text").map_err(db_err)?,
            source_run: row.try_get("source_run").map_err(db_err)?,
            source_step: row.try_get("source_step").map_err(db_err)?,
            created_at: row.try_get("created_at").map_err(db_err)?,
            updated_at: row.try_get("updated_at").map_err(db_err)?,
            expires_at: row.try_get("expires_at").map_err(db_err)?,
        })
    }
}
