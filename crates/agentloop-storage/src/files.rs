//! A project's files as a [`Vfs`]: the adapter over any [`FileStore`].

use std::sync::Arc;

use agentloop_types::vfs::{join_path, parent_path};
use agentloop_types::{DirEntry, EntryKind, Metadata, Vfs, VfsError, normalize_path};
use async_trait::async_trait;

use crate::error::StorageError;
use crate::model::{FileRecord, now_millis};
use crate::store::FileStore;

/// The file tree of one project, stored in a [`FileStore`].
pub struct ProjectFiles<S: ?Sized> {
    store: Arc<S>,
    project_id: String,
}

impl<S: FileStore + ?Sized> ProjectFiles<S> {
    /// The files of `project_id` in `store`.
    pub fn new(store: Arc<S>, project_id: impl Into<String>) -> Self {
        Self {
            store,
            project_id: project_id.into(),
        }
    }

    /// The project whose files these are.
    pub fn project_id(&self) -> &str {
        &self.project_id
    }

    async fn entry(&self, path: &str) -> Result<Option<FileRecord>, VfsError> {
        if path == "/" {
            return Ok(Some(FileRecord {
                path: "/".into(),
                kind: EntryKind::Directory,
                data: Vec::new(),
                modified_at: 0,
            }));
        }
        self.store
            .get_file(&self.project_id, path)
            .await
            .map_err(|e| io(path, e))
    }

    /// Creates the missing directories above `path`, failing if a file is
    /// in the way.
    async fn ensure_parents(&self, path: &str) -> Result<(), VfsError> {
        let mut missing = Vec::new();
        let mut current = parent_path(path);
        while let Some(dir) = current {
            match self.entry(dir).await? {
                Some(record) if record.kind == EntryKind::Directory => break,
                Some(_) => return Err(VfsError::NotADirectory(dir.to_owned())),
                None => missing.push(dir.to_owned()),
            }
            current = parent_path(dir);
        }
        for dir in missing.into_iter().rev() {
            self.put(&dir, EntryKind::Directory, Vec::new()).await?;
        }
        Ok(())
    }

    async fn put(&self, path: &str, kind: EntryKind, data: Vec<u8>) -> Result<(), VfsError> {
        let record = FileRecord {
            path: path.to_owned(),
            kind,
            data,
            modified_at: now_millis(),
        };
        self.store
            .put_file(&self.project_id, &record)
            .await
            .map_err(|e| io(path, e))
    }
}

fn io(path: &str, err: StorageError) -> VfsError {
    VfsError::Io {
        path: path.to_owned(),
        message: err.to_string(),
    }
}

fn size_of(record: &FileRecord) -> u64 {
    match record.kind {
        EntryKind::File => record.data.len() as u64,
        EntryKind::Directory => 0,
    }
}

#[async_trait]
impl<S: FileStore + ?Sized> Vfs for ProjectFiles<S> {
    async fn read(&self, path: &str) -> Result<Vec<u8>, VfsError> {
        let path = normalize_path(path)?;
        match self.entry(&path).await? {
            None => Err(VfsError::NotFound(path)),
            Some(record) if record.kind == EntryKind::Directory => {
                Err(VfsError::IsADirectory(path))
            }
            Some(record) => Ok(record.data),
        }
    }

    async fn write(&self, path: &str, data: &[u8]) -> Result<(), VfsError> {
        let path = normalize_path(path)?;
        let existing = self.entry(&path).await?;
        if existing.is_some_and(|record| record.kind == EntryKind::Directory) {
            return Err(VfsError::IsADirectory(path));
        }
        self.ensure_parents(&path).await?;
        self.put(&path, EntryKind::File, data.to_vec()).await
    }

    async fn create_dir(&self, path: &str) -> Result<(), VfsError> {
        let path = normalize_path(path)?;
        match self.entry(&path).await? {
            Some(record) if record.kind == EntryKind::Directory => Ok(()),
            Some(_) => Err(VfsError::AlreadyExists(path)),
            None => {
                self.ensure_parents(&path).await?;
                self.put(&path, EntryKind::Directory, Vec::new()).await
            }
        }
    }

    async fn list(&self, path: &str) -> Result<Vec<DirEntry>, VfsError> {
        let path = normalize_path(path)?;
        match self.entry(&path).await? {
            None => return Err(VfsError::NotFound(path)),
            Some(record) if record.kind == EntryKind::File => {
                return Err(VfsError::NotADirectory(path));
            }
            Some(_) => {}
        }
        let below = self
            .store
            .list_files(&self.project_id, &path)
            .await
            .map_err(|e| io(&path, e))?;
        let mut entries: Vec<DirEntry> = below
            .iter()
            .filter(|record| parent_path(&record.path) == Some(path.as_str()))
            .map(|record| {
                let name = record
                    .path
                    .rsplit('/')
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                DirEntry {
                    path: join_path(&path, &name),
                    name,
                    kind: record.kind,
                    size: size_of(record),
                }
            })
            .collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    async fn stat(&self, path: &str) -> Result<Option<Metadata>, VfsError> {
        let path = normalize_path(path)?;
        Ok(self.entry(&path).await?.map(|record| Metadata {
            kind: record.kind,
            size: size_of(&record),
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
            .delete_file_tree(&self.project_id, &path)
            .await
            .map_err(|e| io(&path, e))?;
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
        self.ensure_parents(&to).await?;
        self.store
            .rename_file_tree(&self.project_id, &from, &to)
            .await
            .map_err(|e| io(&from, e))
    }
}
