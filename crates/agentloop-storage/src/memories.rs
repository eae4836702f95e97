//! A scope's memories as the memory tool's files: the adapter over any
//! [`MemoriesStore`].
//!
//! Each file is one memory (its path, its text); folders are the paths
//! memories lie below, so a folder exists while a memory is in it (an
//! empty one made with `create_dir` lasts for the call that made it).
//! Every write records the run and tool call it came from.
//! [`MemoryRecall`] finds a scope's memories for a query (BM25), through
//! the `Retriever` port.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use agentloop_types::vfs::{is_within, join_path, parent_path};
use agentloop_types::{
    DirEntry, EntryKind, Metadata, Passage, RetrievalError, Retriever, Vfs, VfsError, VfsFor,
    WriteOrigin, normalize_path,
};
use async_trait::async_trait;
use futures::future::BoxFuture;

use crate::error::StorageError;
use crate::model::{MemoryRecord, MemoryScope, now_millis};
use crate::store::MemoriesStore;

/// The memories of one scope, handed out to each tool call as a [`Vfs`]
/// that knows the run and call writing.
pub struct StoredMemories<S: ?Sized> {
    store: Arc<S>,
    scope: MemoryScope,
}

impl<S: MemoriesStore + ?Sized> StoredMemories<S> {
    /// The memories of `scope` in `store`.
    pub fn new(store: Arc<S>, scope: MemoryScope) -> Self {
        Self { store, scope }
    }

    /// Whose memories these are.
    pub fn scope(&self) -> &MemoryScope {
        &self.scope
    }
}

impl<S: MemoriesStore + ?Sized + 'static> VfsFor for StoredMemories<S> {
    fn vfs_for(&self, origin: WriteOrigin) -> Arc<dyn Vfs> {
        Arc::new(ScopedMemories {
            store: self.store.clone(),
            scope: self.scope.clone(),
            origin,
            folders: Mutex::new(BTreeSet::new()),
        })
    }
}

/// The files one call sees.
struct ScopedMemories<S: ?Sized> {
    store: Arc<S>,
    scope: MemoryScope,
    origin: WriteOrigin,
    /// Folders this call made that may hold no memory yet.
    folders: Mutex<BTreeSet<String>>,
}

/// What is at a path.
enum Entry {
    File(MemoryRecord),
    Folder,
}

fn io(path: &str, err: StorageError) -> VfsError {
    VfsError::Io {
        path: path.to_owned(),
        message: err.to_string(),
    }
}

/// A new memory id: the time, the process and a counter, unique across
/// the processes sharing a store.
fn new_memory_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("mem-{nanos:x}-{:x}-{n:x}", std::process::id())
}

impl<S: MemoriesStore + ?Sized> ScopedMemories<S> {
    fn made_folders(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.folders.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn entry(&self, path: &str) -> Result<Option<Entry>, VfsError> {
        if path == "/" || self.made_folders().contains(path) {
            return Ok(Some(Entry::Folder));
        }
        let now = now_millis();
        if let Some(memory) = self
            .store
            .find_memory(&self.scope, path, now)
            .await
            .map_err(|e| io(path, e))?
        {
            return Ok(Some(Entry::File(memory)));
        }
        let below = self
            .store
            .list_memories(&self.scope, path, now)
            .await
            .map_err(|e| io(path, e))?;
        Ok((!below.is_empty()).then_some(Entry::Folder))
    }

    /// Fails when a memory stands where a folder above `path` must be.
    async fn check_parents(&self, path: &str) -> Result<(), VfsError> {
        let mut current = parent_path(path);
        while let Some(dir) = current {
            if let Some(Entry::File(_)) = self.entry(dir).await? {
                return Err(VfsError::NotADirectory(dir.to_owned()));
            }
            current = parent_path(dir);
        }
        Ok(())
    }
}

#[async_trait]
impl<S: MemoriesStore + ?Sized> Vfs for ScopedMemories<S> {
    async fn read(&self, path: &str) -> Result<Vec<u8>, VfsError> {
        let path = normalize_path(path)?;
        match self.entry(&path).await? {
            None => Err(VfsError::NotFound(path)),
            Some(Entry::Folder) => Err(VfsError::IsADirectory(path)),
            Some(Entry::File(memory)) => Ok(memory.text.into_bytes()),
        }
    }

    async fn write(&self, path: &str, data: &[u8]) -> Result<(), VfsError> {
        let path = normalize_path(path)?;
        let text = std::str::from_utf8(data).map_err(|_| VfsError::NotText(path.clone()))?;
        let expires_at = match self.entry(&path).await? {
            Some(Entry::Folder) => return Err(VfsError::IsADirectory(path)),
            Some(Entry::File(old)) => old.expires_at,
            None => None,
        };
        self.check_parents(&path).await?;
        let now = now_millis();
        let named = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        self.store
            .save_memory(&MemoryRecord {
                id: new_memory_id(),
                scope: self.scope.clone(),
                path: path.clone(),
                text: text.to_owned(),
                source_run: named(&self.origin.run_id),
                source_step: named(&self.origin.step),
                created_at: now,
                updated_at: now,
                expires_at,
            })
            .await
            .map_err(|e| io(&path, e))?;
        Ok(())
    }

    async fn create_dir(&self, path: &str) -> Result<(), VfsError> {
        let path = normalize_path(path)?;
        match self.entry(&path).await? {
            Some(Entry::Folder) => Ok(()),
            Some(Entry::File(_)) => Err(VfsError::AlreadyExists(path)),
            None => {
                self.check_parents(&path).await?;
                let mut folders = self.made_folders();
                let mut current = Some(path.as_str());
                while let Some(dir) = current.filter(|dir| *dir != "/") {
                    folders.insert(dir.to_owned());
                    current = parent_path(dir);
                }
                Ok(())
            }
        }
    }

    async fn list(&self, path: &str) -> Result<Vec<DirEntry>, VfsError> {
        let path = normalize_path(path)?;
        match self.entry(&path).await? {
            None => return Err(VfsError::NotFound(path)),
            Some(Entry::File(_)) => return Err(VfsError::NotADirectory(path)),
            Some(Entry::Folder) => {}
        }
        let below = self
            .store
            .list_memories(&self.scope, &path, now_millis())
            .await
            .map_err(|e| io(&path, e))?;
        let mut entries: std::collections::BTreeMap<String, DirEntry> = Default::default();
        let base = if path == "/" { "" } else { path.as_str() };
        let child = |full: &str| {
            full[base.len() + 1..]
                .split('/')
                .next()
                .unwrap_or_default()
                .to_owned()
        };
        for memory in &below {
            let name = child(&memory.path);
            let child_path = join_path(&path, &name);
            let (kind, size) = if child_path == memory.path {
                (EntryKind::File, memory.text.len() as u64)
            } else {
                (EntryKind::Directory, 0)
            };
            entries.insert(
                name.clone(),
                DirEntry {
                    name,
                    path: child_path,
                    kind,
                    size,
                },
            );
        }
        for folder in self.made_folders().iter() {
            if folder != &path && parent_path(folder) == Some(path.as_str()) {
                let name = child(folder);
                entries.entry(name.clone()).or_insert(DirEntry {
                    name,
                    path: folder.clone(),
                    kind: EntryKind::Directory,
                    size: 0,
                });
            }
        }
        Ok(entries.into_values().collect())
    }

    async fn stat(&self, path: &str) -> Result<Option<Metadata>, VfsError> {
        let path = normalize_path(path)?;
        Ok(self.entry(&path).await?.map(|entry| match entry {
            Entry::File(memory) => Metadata {
                kind: EntryKind::File,
                size: memory.text.len() as u64,
            },
            Entry::Folder => Metadata {
                kind: EntryKind::Directory,
                size: 0,
            },
        }))
    }

    async fn delete(&self, path: &str) -> Result<(), VfsError> {
        let path = normalize_path(path)?;
        if path == "/" {
            return Err(VfsError::PermissionDenied("cannot delete the root".into()));
        }
        if self.entry(&path).await?.is_none() {
            return Err(VfsError::NotFound(path));
        }
        self.store
            .delete_memory_tree(&self.scope, &path)
            .await
            .map_err(|e| io(&path, e))?;
        self.made_folders()
            .retain(|folder| !is_within(folder, &path));
        Ok(())
    }

    async fn rename(&self, from: &str, to: &str) -> Result<(), VfsError> {
        let from = normalize_path(from)?;
        let to = normalize_path(to)?;
        agentloop_types::vfs::check_move(&from, &to)?;
        if self.entry(&from).await?.is_none() {
            return Err(VfsError::NotFound(from));
        }
        if self.entry(&to).await?.is_some() {
            return Err(VfsError::AlreadyExists(to));
        }
        self.check_parents(&to).await?;
        self.store
            .move_memory_tree(&self.scope, &from, &to, now_millis())
            .await
            .map_err(|e| match e {
                StorageError::AlreadyExists { .. } => VfsError::AlreadyExists(to.clone()),
                other => io(&from, other),
            })?;
        let mut folders = self.made_folders();
        let moved: Vec<String> = folders
            .iter()
            .filter(|folder| is_within(folder, &from))
            .cloned()
            .collect();
        for folder in moved {
            folders.remove(&folder);
            folders.insert(format!("{to}{}", &folder[from.len()..]));
        }
        Ok(())
    }
}

/// The memories of some scopes as a [`Retriever`]: the live ones ranked
/// together by BM25 against the query, so a run starts with the memories
/// its request is about among its cited passages. A passage's source is
/// its memory's path; for a scope after the first, the scope and the path
/// (`user:ada /memories/tea.md`), so two scopes' paths never read alike.
pub struct MemoryRecall<S: ?Sized> {
    store: Arc<S>,
    scopes: Vec<MemoryScope>,
}

impl<S: MemoriesStore + ?Sized> MemoryRecall<S> {
    /// Recall from the memories of `scope` in `store`.
    pub fn new(store: Arc<S>, scope: MemoryScope) -> Self {
        Self::over(store, vec![scope])
    }

    /// Recall from the memories of every one of `scopes` in `store`, the
    /// first one's sources named by their paths alone.
    pub fn over(store: Arc<S>, scopes: Vec<MemoryScope>) -> Self {
        Self { store, scopes }
    }

    /// The live memories of every scope, each with its passage's source.
    async fn live(&self) -> Result<Vec<(String, MemoryRecord)>, RetrievalError> {
        let memories = self
            .store
            .recall_memories(&self.scopes, now_millis())
            .await
            .map_err(|e| RetrievalError::Store {
                message: e.to_string(),
            })?;
        Ok(memories
            .into_iter()
            .map(|memory| {
                let source = if self.scopes.first() == Some(&memory.scope) {
                    memory.path.clone()
                } else {
                    format!("{} {}", memory.scope, memory.path)
                };
                (source, memory)
            })
            .collect())
    }
}

/// Words as BM25 counts them: lowercase runs of letters and digits.
#[derive(Debug, Clone, Copy, Default)]
struct Words;

impl bm25::Tokenizer for Words {
    fn tokenize(&self, input_text: &str) -> Vec<String> {
        input_text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|word| !word.is_empty())
            .map(str::to_lowercase)
            .collect()
    }
}

impl<S: MemoriesStore + ?Sized> Retriever for MemoryRecall<S> {
    fn retrieve<'a>(
        &'a self,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<Passage>, RetrievalError>> {
        Box::pin(async move {
            let memories = self.live().await?;
            if memories.is_empty() || limit == 0 {
                return Ok(Vec::new());
            }
            // Ranked by index: a memory's path is part of what it says.
            let documents = memories
                .iter()
                .enumerate()
                .map(|(n, (_, m))| bm25::Document::new(n, format!("{}\n{}", m.path, m.text)));
            let engine =
                bm25::SearchEngineBuilder::<usize, u32, Words>::with_tokenizer_and_documents(
                    Words, documents,
                )
                .build();
            Ok(engine
                .search(query, limit)
                .into_iter()
                .filter(|found| found.score > 0.0)
                .filter_map(|found| {
                    let (source, memory) = memories.get(found.document.id)?;
                    Some(Passage {
                        id: memory.id.clone(),
                        source: source.clone(),
                        text: memory.text.clone(),
                        score: f64::from(found.score),
                    })
                })
                .collect())
        })
    }
}
