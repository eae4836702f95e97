//! Users and token hashes of the in-memory backend.

use async_trait::async_trait;

use super::{MemoryStore, sort_by_created};
use crate::error::{StorageError, StorageResult};
use crate::model::{AuditEntry, AuditFilter, User, UserToken};
use crate::store::{AuditStore, UserStore};

#[async_trait]
impl UserStore for MemoryStore {
    async fn create_user(&self, user: &User) -> StorageResult<()> {
        let mut state = self.lock();
        if state.users.contains_key(&user.id) {
            return Err(StorageError::exists("user", &user.id));
        }
        state.users.insert(user.id.clone(), user.clone());
        Ok(())
    }

    async fn get_user(&self, id: &str) -> StorageResult<User> {
        self.lock()
            .users
            .get(id)
            .cloned()
            .ok_or_else(|| StorageError::not_found("user", id))
    }

    async fn list_users(&self) -> StorageResult<Vec<User>> {
        let mut all: Vec<User> = self.lock().users.values().cloned().collect();
        sort_by_created(&mut all, |u| (u.created_at, &u.id));
        Ok(all)
    }

    async fn add_token(&self, token: &UserToken) -> StorageResult<()> {
        let mut state = self.lock();
        if !state.users.contains_key(&token.user_id) {
            return Err(StorageError::Invalid(format!(
                "user {} does not exist",
                token.user_id
            )));
        }
        if state.tokens.contains_key(&token.token_hash) {
            return Err(StorageError::exists("token", &token.token_hash));
        }
        state.tokens.insert(token.token_hash.clone(), token.clone());
        Ok(())
    }

    async fn find_user_by_token(&self, token_hash: &str) -> StorageResult<User> {
        let state = self.lock();
        state
            .tokens
            .get(token_hash)
            .and_then(|t| state.users.get(&t.user_id))
            .cloned()
            .ok_or_else(|| StorageError::not_found("token", token_hash))
    }

    async fn revoke_token(&self, token_hash: &str) -> StorageResult<()> {
        self.lock()
            .tokens
            .remove(token_hash)
            .map(|_| ())
            .ok_or_else(|| StorageError::not_found("token", token_hash))
    }

    async fn find_token(&self, token_hash: &str) -> StorageResult<(User, UserToken)> {
        let state = self.lock();
        state
            .tokens
            .get(token_hash)
            .and_then(|t| state.users.get(&t.user_id).map(|u| (u.clone(), t.clone())))
            .ok_or_else(|| StorageError::not_found("token", token_hash))
    }

    async fn list_tokens(&self, user_id: &str) -> StorageResult<Vec<UserToken>> {
        let mut all: Vec<UserToken> = self
            .lock()
            .tokens
            .values()
            .filter(|t| t.user_id == user_id)
            .cloned()
            .collect();
        sort_by_created(&mut all, |t| (t.created_at, &t.token_hash));
        Ok(all)
    }

    async fn revoke_user_tokens(&self, user_id: &str) -> StorageResult<u64> {
        let mut state = self.lock();
        let before = state.tokens.len();
        state.tokens.retain(|_, t| t.user_id != user_id);
        Ok((before - state.tokens.len()) as u64)
    }

    async fn delete_user(&self, id: &str) -> StorageResult<()> {
        let mut state = self.lock();
        state
            .users
            .remove(id)
            .ok_or_else(|| StorageError::not_found("user", id))?;
        state.tokens.retain(|_, t| t.user_id != id);
        state.members.retain(|(_, user), _| user != id);
        Ok(())
    }
}

#[async_trait]
impl AuditStore for MemoryStore {
    async fn append_audit(&self, entry: &AuditEntry) -> StorageResult<()> {
        let mut state = self.lock();
        if state.audit.iter().any(|e| e.id == entry.id) {
            return Err(StorageError::exists("audit entry", &entry.id));
        }
        state.audit.push(entry.clone());
        Ok(())
    }

    async fn list_audit(&self, filter: &AuditFilter) -> StorageResult<Vec<AuditEntry>> {
        let mut all: Vec<AuditEntry> = self
            .lock()
            .audit
            .iter()
            .filter(|e| filter.admits(e))
            .cloned()
            .collect();
        all.sort_by(|a, b| (a.at, &a.id).cmp(&(b.at, &b.id)));
        let keep = usize::try_from(filter.limit).unwrap_or(usize::MAX);
        let drop = all.len().saturating_sub(keep);
        all.drain(..drop);
        Ok(all)
    }
}
