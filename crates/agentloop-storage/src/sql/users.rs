/// Users and token hashes for this driver.
mod sql_users {
    use async_trait::async_trait;

    use super::{SqlStore, rows};
    use crate::error::{StorageError, StorageResult};
    use crate::model::{User, UserToken};
    use crate::sql::{db_err, found, insert_err};
    use crate::store::UserStore;

    #[async_trait]
    impl UserStore for SqlStore {
        async fn create_user(&self, user: &User) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            sqlx::query("INSERT INTO users (id, name, created_at) VALUES ($1, $2, $3)")
                .bind(&user.id)
                .bind(&user.name)
                .bind(user.created_at)
                .execute(&self.pool)
                .await
                .map_err(|e| insert_err(e, "user", &user.id))?;
            Ok(())
        }

        async fn get_user(&self, id: &str) -> StorageResult<User> {
            let row = sqlx::query("SELECT id, name, created_at FROM users WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?
                .ok_or_else(|| StorageError::not_found("user", id))?;
            rows::user(&row)
        }

        async fn list_users(&self) -> StorageResult<Vec<User>> {
            sqlx::query("SELECT id, name, created_at FROM users ORDER BY created_at, id")
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?
                .iter()
                .map(rows::user)
                .collect()
        }

        async fn add_token(&self, token: &UserToken) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            sqlx::query(
                "INSERT INTO user_tokens (token_hash, user_id, created_at, expires_at) \
                 VALUES ($1, $2, $3, $4)",
            )
            .bind(&token.token_hash)
            .bind(&token.user_id)
            .bind(token.created_at)
            .bind(token.expires_at)
            .execute(&self.pool)
            .await
            .map_err(|e| insert_err(e, "token", &token.token_hash))?;
            Ok(())
        }

        async fn find_user_by_token(&self, token_hash: &str) -> StorageResult<User> {
            let row = sqlx::query(
                "SELECT u.id, u.name, u.created_at FROM user_tokens t \
                 JOIN users u ON u.id = t.user_id WHERE t.token_hash = $1",
            )
            .bind(token_hash)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?
            .ok_or_else(|| StorageError::not_found("token", token_hash))?;
            rows::user(&row)
        }

        async fn revoke_token(&self, token_hash: &str) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            let affected = sqlx::query("DELETE FROM user_tokens WHERE token_hash = $1")
                .bind(token_hash)
                .execute(&self.pool)
                .await
                .map_err(db_err)?
                .rows_affected();
            if affected == 0 {
                return Err(StorageError::not_found("token", token_hash));
            }
            super::announce_revocation(&self.pool).await;
            Ok(())
        }
    
        async fn find_token(&self, token_hash: &str) -> StorageResult<(User, UserToken)> {
            let row = sqlx::query(
                "SELECT u.id, u.name, u.created_at, t.token_hash, t.user_id, \
                 t.created_at AS token_created_at, t.expires_at FROM user_tokens t \
                 JOIN users u ON u.id = t.user_id WHERE t.token_hash = $1",
            )
            .bind(token_hash)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?
            .ok_or_else(|| StorageError::not_found("token", token_hash))?;
            Ok((rows::user(&row)?, rows::user_token(&row)?))
        }

        async fn list_tokens(&self, user_id: &str) -> StorageResult<Vec<UserToken>> {
            sqlx::query(
                "SELECT token_hash, user_id, created_at AS token_created_at, expires_at \
                 FROM user_tokens WHERE user_id = $1 ORDER BY created_at, token_hash",
            )
            .bind(user_id)
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?
            .iter()
            .map(rows::user_token)
            .collect()
        }

        async fn revoke_user_tokens(&self, user_id: &str) -> StorageResult<u64> {
            let _turn = self.write_turn().await;
            let revoked = sqlx::query("DELETE FROM user_tokens WHERE user_id = $1")
                .bind(user_id)
                .execute(&self.pool)
                .await
                .map_err(db_err)?
                .rows_affected();
            if revoked > 0 {
                super::announce_revocation(&self.pool).await;
            }
            Ok(revoked)
        }

        async fn delete_user(&self, id: &str) -> StorageResult<()> {
            let _turn = self.write_turn().await;
            // Its tokens go with it (`ON DELETE CASCADE`).
            let affected = sqlx::query("DELETE FROM users WHERE id = $1")
                .bind(id)
                .execute(&self.pool)
                .await
                .map_err(db_err)?
                .rows_affected();
            found(affected, "user", id)?;
            super::announce_revocation(&self.pool).await;
            Ok(())
        }

        async fn watch_revocations(&self) -> StorageResult<Option<crate::store::RevocationWatch>> {
            super::watch_revocations(&self.pool).await
        }
    }
}
