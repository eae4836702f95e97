//! The store folder: each content once ([`Objects`]), each tree
//! (`trees/ID.json`), and each folder's last tree (`roots/HASH`), the
//! baseline its next checkpoint is scanned against. Everything is written
//! whole, so runs checkpointing the same folder at once share what they
//! wrote.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use super::diff::{self, FileChange, Side};
use super::error::CheckpointError;
use super::objects::Objects;
use super::restore::{self, Restored};
use super::tree::{self, CheckpointId, Tree, hex};

/// What taking a checkpoint did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The checkpoint.
    pub id: CheckpointId,
    /// Paths it holds.
    pub entries: usize,
    /// Files read because they changed since the folder's last checkpoint
    /// (every file, the first time).
    pub read: usize,
    /// Paths left out: names that are not UTF-8, and what is neither a
    /// file, a folder nor a link.
    pub skipped: Vec<PathBuf>,
}

/// A store of file checkpoints (see the [module](super) docs).
#[derive(Debug)]
pub struct FileCheckpoints {
    dir: PathBuf,
    objects: Objects,
    /// Each folder's last tree with its id, kept so a checkpoint does not
    /// read it back (at most [`KEPT_TREES`] folders': a server's many
    /// projects).
    last: Mutex<HashMap<PathBuf, Arc<Last>>>,
}

/// A folder's last tree, and its id.
#[derive(Debug)]
struct Last {
    tree: Tree,
    id: CheckpointId,
}

/// Folders whose last tree is kept in memory, at most; past that the
/// memory starts over, which only costs reading a baseline back once.
const KEPT_TREES: usize = 32;

impl FileCheckpoints {
    /// The store in folder `dir`, created when missing.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self, CheckpointError> {
        let dir = dir.into();
        for part in ["objects", "trees", "roots", "tmp"] {
            let path = dir.join(part);
            std::fs::create_dir_all(&path).map_err(CheckpointError::io("cannot create", &path))?;
        }
        let dir = dir
            .canonicalize()
            .map_err(CheckpointError::io("cannot resolve", &dir))?;
        Ok(Self {
            objects: Objects::new(dir.clone()),
            dir,
            last: Mutex::new(HashMap::new()),
        })
    }

    /// The store's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Takes a checkpoint of folder `root`: stores the contents that
    /// changed since its last one, and the tree.
    pub fn take(&self, root: &Path) -> Result<Checkpoint, CheckpointError> {
        let root = root
            .canonicalize()
            .map_err(CheckpointError::io("cannot resolve", root))?;
        let baseline = self.last_tree(&root);
        let scan = tree::scan(
            &root,
            Some(&self.dir),
            baseline.as_ref().map(|b| &b.tree),
            |path| self.objects.put_file(path),
        )?;
        // An unchanged folder (the common step) is its last checkpoint:
        // nothing to hash or write.
        let id = match &baseline {
            Some(last) if last.tree == scan.tree => last.id.clone(),
            _ => {
                let id = scan.tree.id();
                let json =
                    serde_json::to_vec(&scan.tree).map_err(|e| CheckpointError::Damaged {
                        id: id.to_string(),
                        message: e.to_string(),
                    })?;
                self.objects.write_whole(&self.tree_path(&id), &json)?;
                self.objects
                    .write_whole(&self.root_path(&root), id.as_str().as_bytes())?;
                id
            }
        };
        let checkpoint = Checkpoint {
            id: id.clone(),
            entries: scan.tree.entries.len(),
            read: scan.read,
            skipped: scan.skipped,
        };
        if let Ok(mut last) = self.last.lock() {
            if last.len() >= KEPT_TREES && !last.contains_key(&root) {
                last.clear();
            }
            last.insert(
                root,
                Arc::new(Last {
                    tree: scan.tree,
                    id,
                }),
            );
        }
        Ok(checkpoint)
    }

    /// The tree of checkpoint `id`.
    pub fn tree(&self, id: &CheckpointId) -> Result<Tree, CheckpointError> {
        let path = self.tree_path(id);
        let bytes = std::fs::read(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => CheckpointError::Unknown {
                id: id.to_string(),
                store: self.dir.clone(),
            },
            _ => CheckpointError::io("cannot read", &path)(e),
        })?;
        let tree: Tree = serde_json::from_slice(&bytes).map_err(|e| CheckpointError::Damaged {
            id: id.to_string(),
            message: e.to_string(),
        })?;
        tree.check(id.as_str())?;
        Ok(tree)
    }

    /// Puts folder `into` (the checkpoint's own folder when `None`) back
    /// as checkpoint `id` has it: every file's content and permissions,
    /// every link and folder, and what the checkpoint does not hold
    /// removed. What `.gitignore` files ignore is left alone.
    pub fn restore(
        &self,
        id: &CheckpointId,
        into: Option<&Path>,
    ) -> Result<Restored, CheckpointError> {
        let tree = self.tree(id)?;
        let into = into.unwrap_or(&tree.root);
        let into = into
            .canonicalize()
            .map_err(CheckpointError::io("cannot resolve", into))?;
        restore::restore(&self.objects, &tree, &into)
    }

    /// What changed from checkpoint `from` to checkpoint `to`, or, when
    /// `to` is `None`, to folder `now` as it is (the checkpoint's own
    /// folder when `None`).
    pub fn diff(
        &self,
        from: &CheckpointId,
        to: Option<&CheckpointId>,
        now: Option<&Path>,
    ) -> Result<Vec<FileChange>, CheckpointError> {
        let before = self.tree(from)?;
        let after = match to {
            Some(to) => Side::Stored(self.tree(to)?),
            None => {
                let root = now.unwrap_or(&before.root);
                let root = root
                    .canonicalize()
                    .map_err(CheckpointError::io("cannot resolve", root))?;
                let scan = tree::scan(&root, Some(&self.dir), Some(&before), |path| {
                    tree::hash_file(path, |_| Ok(()))
                })?;
                Side::Folder(scan.tree)
            }
        };
        diff::diff(&self.objects, &before, &after)
    }

    /// The last tree of folder `root`: kept in memory, else the one the
    /// store names for it.
    fn last_tree(&self, root: &Path) -> Option<Arc<Last>> {
        if let Some(last) = self.last.lock().ok()?.get(root) {
            return Some(last.clone());
        }
        let id: CheckpointId = std::fs::read_to_string(self.root_path(root))
            .ok()?
            .trim()
            .parse()
            .ok()?;
        // A damaged baseline only costs reading every file again.
        let tree = self.tree(&id).ok().filter(|t| t.root == root)?;
        Some(Arc::new(Last { tree, id }))
    }

    fn tree_path(&self, id: &CheckpointId) -> PathBuf {
        self.dir.join("trees").join(format!("{id}.json"))
    }

    fn root_path(&self, root: &Path) -> PathBuf {
        let name = hex(&Sha256::digest(root.as_os_str().as_encoded_bytes()));
        self.dir.join("roots").join(name)
    }
}
