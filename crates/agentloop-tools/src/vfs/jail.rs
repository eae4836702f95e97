//! A virtual filesystem over a real directory, jailed to it.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentloop_types::vfs::{join_path, normalize_path, parent_path};
use agentloop_types::{DirEntry, EntryKind, Metadata, Vfs, VfsError};
use async_trait::async_trait;

/// Default largest file [`DirJail`] reads: 64 MiB.
pub const DEFAULT_MAX_READ: u64 = 64 * 1024 * 1024;

/// A [`Vfs`] over an OS directory: virtual `/` is the directory, and every
/// path resolves inside it. Paths are checked by
/// [`normalize_path`], then walked component by component: a symlink is
/// followed only when its target (resolved in full) stays inside the root,
/// dangling symlinks are refused, and only regular files and directories are
/// read. Errors name virtual paths, never host paths.
///
/// The jail is path-based: a hard link placed in the directory by the host
/// is an ordinary file to it (the [`Vfs`] API cannot create links, so a
/// model cannot make one).
#[derive(Debug, Clone)]
pub struct DirJail {
    inner: Arc<Jail>,
}

#[derive(Debug)]
struct Jail {
    root: PathBuf,
    max_read: u64,
}

impl DirJail {
    /// Jails to `root`, which must be an existing directory.
    pub fn new(root: impl AsRef<Path>) -> Result<Self, VfsError> {
        let shown = root.as_ref().display().to_string();
        let root = fs::canonicalize(root.as_ref()).map_err(|e| io_error(&shown, &e))?;
        if !root.is_dir() {
            return Err(VfsError::NotADirectory(shown));
        }
        Ok(Self {
            inner: Arc::new(Jail {
                root,
                max_read: DEFAULT_MAX_READ,
            }),
        })
    }

    /// Sets the largest file [`Vfs::read`] returns.
    pub fn with_max_read(self, max_read: u64) -> Self {
        Self {
            inner: Arc::new(Jail {
                root: self.inner.root.clone(),
                max_read,
            }),
        }
    }

    /// The host directory of virtual `/`.
    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// The host path `path` resolves to, checked exactly as every operation
    /// checks it (`follow_last: false` is how delete and rename resolve).
    /// Reached by the fuzz target that asserts no path leaves the root.
    #[doc(hidden)]
    pub fn resolve_host(&self, path: &str, follow_last: bool) -> Result<PathBuf, VfsError> {
        self.inner.resolve(path, follow_last).map(|r| r.host)
    }

    async fn run<T, F>(&self, job: F) -> Result<T, VfsError>
    where
        T: Send + 'static,
        F: FnOnce(&Jail) -> Result<T, VfsError> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || job(&inner))
            .await
            .map_err(|e| VfsError::Io {
                path: String::new(),
                message: format!("filesystem task failed: {e}"),
            })?
    }
}

fn io_error(path: &str, e: &io::Error) -> VfsError {
    match e.kind() {
        io::ErrorKind::NotFound => VfsError::NotFound(path.to_owned()),
        io::ErrorKind::AlreadyExists => VfsError::AlreadyExists(path.to_owned()),
        io::ErrorKind::PermissionDenied => VfsError::PermissionDenied(path.to_owned()),
        io::ErrorKind::IsADirectory => VfsError::IsADirectory(path.to_owned()),
        io::ErrorKind::NotADirectory => VfsError::NotADirectory(path.to_owned()),
        _ => VfsError::Io {
            path: path.to_owned(),
            message: e.kind().to_string(),
        },
    }
}

/// A checked path: the virtual form and where it lives on the host.
struct Resolved {
    virt: String,
    host: PathBuf,
}

impl Jail {
    /// Resolves a virtual path to a host path inside the root. When
    /// `follow_last` is false a final symlink is checked but not followed,
    /// so delete and rename act on the link itself.
    fn resolve(&self, path: &str, follow_last: bool) -> Result<Resolved, VfsError> {
        let virt = normalize_path(path)?;
        let escape = |reason: &str| VfsError::Escape {
            path: path.to_owned(),
            reason: reason.to_owned(),
        };
        let parts: Vec<&str> = virt.split('/').filter(|p| !p.is_empty()).collect();
        let mut host = self.root.clone();
        for (i, part) in parts.iter().enumerate() {
            host.push(part);
            let meta = match fs::symlink_metadata(&host) {
                Ok(meta) => meta,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    parts[i + 1..].iter().for_each(|p| host.push(p));
                    break;
                }
                Err(e) => return Err(io_error(&virt, &e)),
            };
            if !meta.file_type().is_symlink() {
                continue;
            }
            let target = fs::canonicalize(&host)
                .map_err(|_| escape("a symlink on the path is dangling or unreadable"))?;
            if !target.starts_with(&self.root) {
                return Err(escape("a symlink on the path points outside the root"));
            }
            let last = i + 1 == parts.len();
            if !last || follow_last {
                host = target;
            }
        }
        if !host.starts_with(&self.root) {
            return Err(escape("the path leaves the root"));
        }
        Ok(Resolved { virt, host })
    }

    fn read(&self, path: &str) -> Result<Vec<u8>, VfsError> {
        let r = self.resolve(path, true)?;
        let meta = fs::metadata(&r.host).map_err(|e| io_error(&r.virt, &e))?;
        if meta.is_dir() {
            return Err(VfsError::IsADirectory(r.virt));
        }
        if !meta.is_file() {
            return Err(VfsError::PermissionDenied(format!(
                "{} is not a regular file",
                r.virt
            )));
        }
        if meta.len() > self.max_read {
            return Err(VfsError::TooLarge {
                path: r.virt,
                size: meta.len(),
                limit: self.max_read,
            });
        }
        fs::read(&r.host).map_err(|e| io_error(&r.virt, &e))
    }

    fn make_parent(&self, r: &Resolved) -> Result<(), VfsError> {
        let Some(parent) = parent_path(&r.virt) else {
            return Ok(());
        };
        // Re-resolve the parent so the directories created lie below the
        // last checked existing ancestor.
        let p = self.resolve(parent, true)?;
        match fs::metadata(&p.host) {
            Ok(m) if m.is_dir() => Ok(()),
            Ok(_) => Err(VfsError::NotADirectory(p.virt)),
            Err(_) => fs::create_dir_all(&p.host).map_err(|e| io_error(&p.virt, &e)),
        }
    }

    fn write(&self, path: &str, data: &[u8]) -> Result<(), VfsError> {
        let r = self.resolve(path, true)?;
        if r.virt == "/" {
            return Err(VfsError::IsADirectory(r.virt));
        }
        match fs::symlink_metadata(&r.host) {
            Ok(m) if m.is_dir() => return Err(VfsError::IsADirectory(r.virt)),
            Ok(m) if !m.is_file() => {
                return Err(VfsError::PermissionDenied(format!(
                    "{} is not a regular file",
                    r.virt
                )));
            }
            _ => {}
        }
        self.make_parent(&r)?;
        fs::write(&r.host, data).map_err(|e| io_error(&r.virt, &e))
    }

    fn create_dir(&self, path: &str) -> Result<(), VfsError> {
        let r = self.resolve(path, true)?;
        match fs::metadata(&r.host) {
            Ok(m) if m.is_dir() => Ok(()),
            Ok(_) => Err(VfsError::NotADirectory(r.virt)),
            Err(_) => {
                self.make_parent(&r)?;
                fs::create_dir(&r.host).map_err(|e| io_error(&r.virt, &e))
            }
        }
    }

    fn list(&self, path: &str) -> Result<Vec<DirEntry>, VfsError> {
        let r = self.resolve(path, true)?;
        let meta = fs::metadata(&r.host).map_err(|e| io_error(&r.virt, &e))?;
        if !meta.is_dir() {
            return Err(VfsError::NotADirectory(r.virt));
        }
        let mut entries = Vec::new();
        for entry in fs::read_dir(&r.host).map_err(|e| io_error(&r.virt, &e))? {
            let Ok(entry) = entry else { continue };
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let child = join_path(&r.virt, &name);
            // Entries the path rules cannot address, or symlinks that lead
            // out, are not shown.
            let Ok(c) = self.resolve(&child, true) else {
                continue;
            };
            let Ok(m) = fs::metadata(&c.host) else {
                continue;
            };
            let (kind, size) = if m.is_dir() {
                (EntryKind::Directory, 0)
            } else if m.is_file() {
                (EntryKind::File, m.len())
            } else {
                continue;
            };
            entries.push(DirEntry {
                name,
                path: c.virt,
                kind,
                size,
            });
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    fn stat(&self, path: &str) -> Result<Option<Metadata>, VfsError> {
        let r = self.resolve(path, true)?;
        match fs::metadata(&r.host) {
            Ok(m) if m.is_dir() => Ok(Some(Metadata {
                kind: EntryKind::Directory,
                size: 0,
            })),
            Ok(m) if m.is_file() => Ok(Some(Metadata {
                kind: EntryKind::File,
                size: m.len(),
            })),
            Ok(_) => Err(VfsError::PermissionDenied(format!(
                "{} is not a regular file",
                r.virt
            ))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(&r.virt, &e)),
        }
    }

    fn delete(&self, path: &str) -> Result<(), VfsError> {
        let r = self.resolve(path, false)?;
        if r.virt == "/" {
            return Err(VfsError::PermissionDenied("cannot delete the root".into()));
        }
        let meta = fs::symlink_metadata(&r.host).map_err(|e| io_error(&r.virt, &e))?;
        if meta.is_dir() {
            fs::remove_dir_all(&r.host)
        } else {
            fs::remove_file(&r.host)
        }
        .map_err(|e| io_error(&r.virt, &e))
    }

    fn rename(&self, from: &str, to: &str) -> Result<(), VfsError> {
        let f = self.resolve(from, false)?;
        let t = self.resolve(to, false)?;
        if f.virt == "/" || t.virt == "/" {
            return Err(VfsError::PermissionDenied("cannot rename the root".into()));
        }
        if agentloop_types::vfs::is_within(&t.virt, &f.virt) {
            return Err(VfsError::PermissionDenied(format!(
                "cannot move {} into itself",
                f.virt
            )));
        }
        fs::symlink_metadata(&f.host).map_err(|e| io_error(&f.virt, &e))?;
        if fs::symlink_metadata(&t.host).is_ok() {
            return Err(VfsError::AlreadyExists(t.virt));
        }
        self.make_parent(&t)?;
        fs::rename(&f.host, &t.host).map_err(|e| io_error(&f.virt, &e))
    }
}

#[async_trait]
impl Vfs for DirJail {
    async fn read(&self, path: &str) -> Result<Vec<u8>, VfsError> {
        let path = path.to_owned();
        self.run(move |j| j.read(&path)).await
    }

    async fn write(&self, path: &str, data: &[u8]) -> Result<(), VfsError> {
        let (path, data) = (path.to_owned(), data.to_vec());
        self.run(move |j| j.write(&path, &data)).await
    }

    async fn create_dir(&self, path: &str) -> Result<(), VfsError> {
        let path = path.to_owned();
        self.run(move |j| j.create_dir(&path)).await
    }

    async fn list(&self, path: &str) -> Result<Vec<DirEntry>, VfsError> {
        let path = path.to_owned();
        self.run(move |j| j.list(&path)).await
    }

    async fn stat(&self, path: &str) -> Result<Option<Metadata>, VfsError> {
        let path = path.to_owned();
        self.run(move |j| j.stat(&path)).await
    }

    async fn delete(&self, path: &str) -> Result<(), VfsError> {
        let path = path.to_owned();
        self.run(move |j| j.delete(&path)).await
    }

    async fn rename(&self, from: &str, to: &str) -> Result<(), VfsError> {
        let (from, to) = (from.to_owned(), to.to_owned());
        self.run(move |j| j.rename(&from, &to)).await
    }
}
