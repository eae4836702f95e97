//! The contents a store keeps, once each, named by their SHA-256
//! (`objects/ab/cdef…`), and the store's way of writing whole files:
//! through `tmp/`, renamed into place, so a store interrupted mid-write
//! (a killed process) holds whole files only.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::error::CheckpointError;
use super::tree::{self, is_hash};

/// Names temporary files apart within one process.
static TEMPORARY: AtomicU64 = AtomicU64::new(0);

/// A store folder's contents.
#[derive(Debug)]
pub(crate) struct Objects {
    /// The store folder.
    dir: PathBuf,
}

impl Objects {
    /// The contents of store folder `dir` (canonical, with its `objects`
    /// and `tmp` folders made).
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// The store folder.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The content stored under `hash`.
    pub(crate) fn read(&self, hash: &str) -> Result<Vec<u8>, CheckpointError> {
        let path = self.path(hash)?;
        std::fs::read(&path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => CheckpointError::Damaged {
                id: hash.to_owned(),
                message: "its content is missing from the store".to_owned(),
            },
            _ => CheckpointError::io("cannot read", &path)(e),
        })
    }

    /// Where the content stored under `hash` lies.
    pub(crate) fn path(&self, hash: &str) -> Result<PathBuf, CheckpointError> {
        match (is_hash(hash), hash.get(..2), hash.get(2..)) {
            (true, Some(fan), Some(rest)) => Ok(self.dir.join("objects").join(fan).join(rest)),
            _ => Err(CheckpointError::BadId(hash.to_owned())),
        }
    }

    /// Stores the file at `path` (copied while it is hashed, so the content
    /// kept is the content hashed) and returns its hash.
    pub(crate) fn put_file(&self, path: &Path) -> Result<String, CheckpointError> {
        let temporary = self.temporary();
        let mut copy = std::fs::File::create_new(&temporary)
            .map_err(CheckpointError::io("cannot create", &temporary))?;
        let hashed = tree::hash_file(path, |chunk| copy.write_all(chunk));
        drop(copy);
        let stored = hashed.and_then(|hash| {
            let object = self.path(&hash)?;
            if object.exists() {
                return Ok(hash);
            }
            if let Some(fan) = object.parent() {
                std::fs::create_dir_all(fan).map_err(CheckpointError::io("cannot create", fan))?;
            }
            std::fs::rename(&temporary, &object)
                .map_err(CheckpointError::io("cannot store", &object))?;
            Ok(hash)
        });
        // Gone already when it was renamed into place.
        let _ = std::fs::remove_file(&temporary);
        stored
    }

    /// A new temporary file's path (not created).
    pub(crate) fn temporary(&self) -> PathBuf {
        let n = TEMPORARY.fetch_add(1, Ordering::Relaxed);
        // The time tells this process from a killed one of the same pid
        // whose files were left behind.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        self.dir
            .join("tmp")
            .join(format!("{}-{nanos}-{n}", std::process::id()))
    }

    /// Writes `bytes` at `path` whole (through a temporary file).
    pub(crate) fn write_whole(&self, path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
        let temporary = self.temporary();
        std::fs::write(&temporary, bytes)
            .map_err(CheckpointError::io("cannot write", &temporary))?;
        std::fs::rename(&temporary, path).map_err(|e| {
            let _ = std::fs::remove_file(&temporary);
            CheckpointError::io("cannot write", path)(e)
        })
    }
}
