//! Memories of the in-memory backend.

use agentloop_types::vfs::is_within;
use async_trait::async_trait;

use super::MemoryStore;
use crate::error::{StorageError, StorageResult};
use crate::model::{MemoryRecord, MemoryScope};
use crate::store::MemoriesStore;

#[async_trait]
impl MemoriesStore for MemoryStore {
    async fn save_memory(&self, memory: &MemoryRecord) -> StorageResult<MemoryRecord> {
        let mut state = self.lock();
        let key = (memory.scope.clone(), memory.path.clone());
        let mut stored = memory.clone();
        if let Some(old) = state.memories.get(&key) {
            if old.live_at(memory.updated_at) {
                stored.id = old.id.clone();
                stored.created_at = old.created_at;
            }
        } else if state.memories.values().any(|m| m.id == memory.id) {
            return Err(StorageError::exists("memory", &memory.id));
        }
        state.memories.insert(key, stored.clone());
        Ok(stored)
    }

    async fn get_memory(&self, id: &str) -> StorageResult<MemoryRecord> {
        self.lock()
            .memories
            .values()
            .find(|m| m.id == id)
            .cloned()
            .ok_or_else(|| StorageError::not_found("memory", id))
    }

    async fn find_memory(
        &self,
        scope: &MemoryScope,
        path: &str,
        now: i64,
    ) -> StorageResult<Option<MemoryRecord>> {
        Ok(self
            .lock()
            .memories
            .get(&(scope.clone(), path.to_owned()))
            .filter(|m| m.live_at(now))
            .cloned())
    }

    async fn list_memories(
        &self,
        scope: &MemoryScope,
        under: &str,
        now: i64,
    ) -> StorageResult<Vec<MemoryRecord>> {
        Ok(self
            .lock()
            .memories
            .iter()
            .filter(|((owner, path), m)| {
                owner == scope && path != under && is_within(path, under) && m.live_at(now)
            })
            .map(|(_, m)| m.clone())
            .collect())
    }

    async fn delete_memory(&self, id: &str) -> StorageResult<()> {
        let mut state = self.lock();
        let before = state.memories.len();
        state.memories.retain(|_, m| m.id != id);
        if state.memories.len() == before {
            return Err(StorageError::not_found("memory", id));
        }
        Ok(())
    }

    async fn delete_memory_tree(&self, scope: &MemoryScope, path: &str) -> StorageResult<u64> {
        let mut state = self.lock();
        let before = state.memories.len();
        state
            .memories
            .retain(|(owner, at), _| !(owner == scope && is_within(at, path)));
        Ok((before - state.memories.len()) as u64)
    }

    async fn move_memory_tree(
        &self,
        scope: &MemoryScope,
        from: &str,
        to: &str,
        now: i64,
    ) -> StorageResult<()> {
        let mut state = self.lock();
        let moving: Vec<(MemoryScope, String)> = state
            .memories
            .keys()
            .filter(|(owner, at)| owner == scope && is_within(at, from))
            .cloned()
            .collect();
        let mut moved = Vec::with_capacity(moving.len());
        for key in &moving {
            let path = format!("{to}{}", &key.1[from.len()..]);
            let taken = (scope.clone(), path.clone());
            if state.memories.contains_key(&taken) && !moving.contains(&taken) {
                return Err(StorageError::exists("memory", path));
            }
            moved.push(path);
        }
        let mut records = Vec::with_capacity(moving.len());
        for key in &moving {
            if let Some(record) = state.memories.remove(key) {
                records.push(record);
            }
        }
        for (mut record, path) in records.into_iter().zip(moved) {
            record.path = path.clone();
            record.updated_at = now;
            state.memories.insert((scope.clone(), path), record);
        }
        Ok(())
    }
}
