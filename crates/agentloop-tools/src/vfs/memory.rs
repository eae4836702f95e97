//! An in-memory virtual filesystem.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use agentloop_types::vfs::{is_within, join_path, normalize_path, parent_path};
use agentloop_types::{DirEntry, EntryKind, Metadata, Vfs, VfsError};
use async_trait::async_trait;

#[derive(Debug, Clone)]
enum Node {
    File(Vec<u8>),
    Dir,
}

/// A filesystem held in memory: for tests, and for runs whose files live
/// only as long as the process.
#[derive(Debug)]
pub struct MemoryVfs {
    nodes: Mutex<BTreeMap<String, Node>>,
}

impl Default for MemoryVfs {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryVfs {
    /// An empty filesystem (only `/`).
    pub fn new() -> Self {
        let mut nodes = BTreeMap::new();
        nodes.insert("/".to_owned(), Node::Dir);
        Self {
            nodes: Mutex::new(nodes),
        }
    }

    /// A filesystem holding these text files.
    pub fn with_files<'a>(
        files: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, VfsError> {
        let vfs = Self::new();
        {
            let mut nodes = vfs.lock();
            for (path, text) in files {
                let path = normalize_path(path)?;
                write_node(&mut nodes, &path, text.as_bytes().to_vec())?;
            }
        }
        Ok(vfs)
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, Node>> {
        // The map is always left consistent between statements, so a
        // poisoned lock still holds valid data.
        self.nodes.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn ensure_dirs(nodes: &mut BTreeMap<String, Node>, dir: &str) -> Result<(), VfsError> {
    let mut current = String::from("/");
    for part in dir.split('/').filter(|p| !p.is_empty()) {
        current = join_path(&current, part);
        match nodes.get(&current) {
            Some(Node::Dir) => {}
            Some(Node::File(_)) => return Err(VfsError::NotADirectory(current)),
            None => {
                nodes.insert(current.clone(), Node::Dir);
            }
        }
    }
    Ok(())
}

fn write_node(
    nodes: &mut BTreeMap<String, Node>,
    path: &str,
    data: Vec<u8>,
) -> Result<(), VfsError> {
    if let Some(Node::Dir) = nodes.get(path) {
        return Err(VfsError::IsADirectory(path.to_owned()));
    }
    if let Some(parent) = parent_path(path) {
        ensure_dirs(nodes, parent)?;
    }
    nodes.insert(path.to_owned(), Node::File(data));
    Ok(())
}

fn subtree(nodes: &BTreeMap<String, Node>, root: &str) -> Vec<String> {
    nodes
        .range(root.to_owned()..)
        .take_while(|(k, _)| k.starts_with(root))
        .filter(|(k, _)| is_within(k, root))
        .map(|(k, _)| k.clone())
        .collect()
}

#[async_trait]
impl Vfs for MemoryVfs {
    async fn read(&self, path: &str) -> Result<Vec<u8>, VfsError> {
        let path = normalize_path(path)?;
        match self.lock().get(&path) {
            Some(Node::File(data)) => Ok(data.clone()),
            Some(Node::Dir) => Err(VfsError::IsADirectory(path)),
            None => Err(VfsError::NotFound(path)),
        }
    }

    async fn write(&self, path: &str, data: &[u8]) -> Result<(), VfsError> {
        let path = normalize_path(path)?;
        if path == "/" {
            return Err(VfsError::IsADirectory(path));
        }
        write_node(&mut self.lock(), &path, data.to_vec())
    }

    async fn create_dir(&self, path: &str) -> Result<(), VfsError> {
        let path = normalize_path(path)?;
        ensure_dirs(&mut self.lock(), &path)
    }

    async fn list(&self, path: &str) -> Result<Vec<DirEntry>, VfsError> {
        let path = normalize_path(path)?;
        let nodes = self.lock();
        match nodes.get(&path) {
            Some(Node::Dir) => {}
            Some(Node::File(_)) => return Err(VfsError::NotADirectory(path)),
            None => return Err(VfsError::NotFound(path)),
        }
        let entries = subtree(&nodes, &path)
            .into_iter()
            .filter(|k| k != &path && parent_path(k) == Some(path.as_str()))
            .filter_map(|k| {
                let node = nodes.get(&k)?;
                let name = k.rsplit('/').next().unwrap_or_default().to_owned();
                let (kind, size) = match node {
                    Node::File(d) => (EntryKind::File, d.len() as u64),
                    Node::Dir => (EntryKind::Directory, 0),
                };
                Some(DirEntry {
                    name,
                    path: k,
                    kind,
                    size,
                })
            })
            .collect();
        Ok(entries)
    }

    async fn stat(&self, path: &str) -> Result<Option<Metadata>, VfsError> {
        let path = normalize_path(path)?;
        Ok(self.lock().get(&path).map(|node| match node {
            Node::File(d) => Metadata {
                kind: EntryKind::File,
                size: d.len() as u64,
            },
            Node::Dir => Metadata {
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
        let mut nodes = self.lock();
        if !nodes.contains_key(&path) {
            return Err(VfsError::NotFound(path));
        }
        for key in subtree(&nodes, &path) {
            nodes.remove(&key);
        }
        Ok(())
    }

    async fn rename(&self, from: &str, to: &str) -> Result<(), VfsError> {
        let from = normalize_path(from)?;
        let to = normalize_path(to)?;
        if from == "/" || to == "/" {
            return Err(VfsError::PermissionDenied("cannot rename the root".into()));
        }
        if is_within(&to, &from) {
            return Err(VfsError::PermissionDenied(format!(
                "cannot move {from} into itself"
            )));
        }
        let mut nodes = self.lock();
        if !nodes.contains_key(&from) {
            return Err(VfsError::NotFound(from));
        }
        if nodes.contains_key(&to) {
            return Err(VfsError::AlreadyExists(to));
        }
        if let Some(parent) = parent_path(&to) {
            ensure_dirs(&mut nodes, parent)?;
        }
        for key in subtree(&nodes, &from) {
            if let Some(node) = nodes.remove(&key) {
                let moved = format!("{to}{}", &key[from.len()..]);
                nodes.insert(moved, node);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn files_and_directories() {
        let vfs = MemoryVfs::new();
        vfs.write("/a/b/c.txt", b"hi").await.unwrap();
        assert_eq!(vfs.read("a/b/c.txt").await.unwrap(), b"hi");
        assert!(vfs.stat("/a/b").await.unwrap().unwrap().is_dir());
        let names: Vec<_> = vfs
            .list("/a")
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["b"]);
        assert!(matches!(
            vfs.read("/a").await,
            Err(VfsError::IsADirectory(_))
        ));
        assert!(matches!(
            vfs.list("/a/b/c.txt").await,
            Err(VfsError::NotADirectory(_))
        ));
        assert!(matches!(
            vfs.write("/a/b/c.txt/d", b"").await,
            Err(VfsError::NotADirectory(_))
        ));
        assert!(matches!(
            vfs.read("/nope").await,
            Err(VfsError::NotFound(_))
        ));
    }

    #[tokio::test]
    async fn rename_moves_subtrees_and_delete_removes_them() {
        let vfs = MemoryVfs::with_files([("/d/x", "1"), ("/d/e/y", "2"), ("/dz", "3")]).unwrap();
        vfs.rename("/d", "/n/m").await.unwrap();
        assert_eq!(vfs.read_to_string("/n/m/e/y").await.unwrap(), "2");
        assert!(vfs.stat("/d").await.unwrap().is_none());
        assert_eq!(vfs.read_to_string("/dz").await.unwrap(), "3");
        assert!(matches!(
            vfs.rename("/dz", "/n").await,
            Err(VfsError::AlreadyExists(_))
        ));
        assert!(vfs.rename("/n", "/n/m/q").await.is_err());
        vfs.delete("/n").await.unwrap();
        assert!(vfs.stat("/n/m/x").await.unwrap().is_none());
        assert!(vfs.delete("/").await.is_err());
        assert!(matches!(vfs.delete("/n").await, Err(VfsError::NotFound(_))));
    }
}
