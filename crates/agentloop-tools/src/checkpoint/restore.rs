//! Putting a folder back as a tree has it.
//!
//! The folder is scanned as a checkpoint would be (against the tree, so a
//! file the restore need not touch is not read), then: what the tree does
//! not hold, or holds as another kind, is removed; folders are made; files
//! whose content or permissions differ are written through a temporary
//! file renamed over them; links are made again. No path is written
//! through a link: each folder on the way is checked to be a real one.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::error::CheckpointError;
use super::objects::Objects;
use super::platform;
use super::tree::{self, Node, Tree};

/// What a restore changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Restored {
    /// Paths written or made again (files, links, folders).
    pub written: Vec<String>,
    /// Paths removed (a folder counts once, with what it held).
    pub removed: Vec<String>,
}

impl Restored {
    /// True when the folder already was as the checkpoint has it.
    pub fn is_empty(&self) -> bool {
        self.written.is_empty() && self.removed.is_empty()
    }
}

pub(crate) fn restore(
    objects: &Objects,
    tree: &Tree,
    into: &Path,
) -> Result<Restored, CheckpointError> {
    let current = tree::scan(into, Some(objects.dir()), Some(tree), |path| {
        tree::hash_file(path, |_| Ok(()))
    })?
    .tree;
    let mut restored = Restored::default();
    let mut removed_folders: Vec<&str> = Vec::new();
    for entry in &current.entries {
        if removed_folders
            .iter()
            .any(|folder| is_under(&entry.path, folder))
        {
            continue;
        }
        let keep = tree
            .get(&entry.path)
            .is_some_and(|wanted| wanted.node.same_kind(&entry.node));
        if keep {
            continue;
        }
        remove(&into.join(&entry.path))?;
        if entry.node == Node::Dir {
            removed_folders.push(&entry.path);
        }
        restored.removed.push(entry.path.clone());
    }
    let removed: HashSet<&str> = restored.removed.iter().map(String::as_str).collect();
    for wanted in &tree.entries {
        let now = current
            .get(&wanted.path)
            .filter(|_| !removed.contains(wanted.path.as_str()))
            .filter(|e| !removed_folders.iter().any(|f| is_under(&e.path, f)));
        let target = into.join(&wanted.path);
        let changed = match (&wanted.node, now.map(|e| &e.node)) {
            (Node::Dir, Some(Node::Dir)) => false,
            (Node::Dir, _) => {
                real_folder(into, &wanted.path)?;
                true
            }
            (
                Node::File { hash, mode, .. },
                Some(Node::File {
                    hash: had,
                    mode: had_mode,
                    ..
                }),
            ) if hash == had => {
                if mode != had_mode {
                    set_mode(&target, *mode)?;
                }
                mode != had_mode
            }
            (Node::File { hash, mode, .. }, _) => {
                write_file(objects, into, &wanted.path, hash, *mode)?;
                true
            }
            (Node::Symlink { target: to }, Some(Node::Symlink { target: had })) if to == had => {
                false
            }
            (Node::Symlink { target: to }, _) => {
                parent_folder(into, &wanted.path)?;
                remove(&target)?;
                platform::symlink(to, &target)
                    .map_err(CheckpointError::io("cannot make the link", &target))?;
                true
            }
        };
        if changed {
            restored.written.push(wanted.path.clone());
        }
    }
    Ok(restored)
}

/// True when `path` lies inside `folder` (both relative).
fn is_under(path: &str, folder: &str) -> bool {
    path.strip_prefix(folder)
        .is_some_and(|rest| rest.starts_with('/'))
}

/// Removes whatever is at `path` (a folder with what it holds), never
/// following a link; nothing there is fine.
fn remove(path: &Path) -> Result<(), CheckpointError> {
    let metadata = match std::fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(CheckpointError::io("cannot read the metadata of", path)(e)),
    };
    let removed = if metadata.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    removed.map_err(CheckpointError::io("cannot remove", path))
}

/// Makes `relative` under `root` a real folder, and every folder on the
/// way: whatever else stands there (a file, a link — perhaps one an
/// ignored path made) is removed first.
fn real_folder(root: &Path, relative: &str) -> Result<PathBuf, CheckpointError> {
    let mut at = root.to_owned();
    for part in relative.split('/') {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(metadata) if metadata.is_dir() => continue,
            Ok(_) => remove(&at)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(CheckpointError::io("cannot read the metadata of", &at)(e)),
        }
        std::fs::create_dir(&at).map_err(CheckpointError::io("cannot create", &at))?;
    }
    Ok(at)
}

/// The real folder `relative`'s parent is in (made when missing).
fn parent_folder(root: &Path, relative: &str) -> Result<PathBuf, CheckpointError> {
    match relative.rsplit_once('/') {
        Some((parent, _)) => real_folder(root, parent),
        None => Ok(root.to_owned()),
    }
}

fn set_mode(path: &Path, mode: u32) -> Result<(), CheckpointError> {
    let current = std::fs::symlink_metadata(path)
        .map_err(CheckpointError::io("cannot read the metadata of", path))?
        .permissions();
    std::fs::set_permissions(path, platform::permissions(current, mode))
        .map_err(CheckpointError::io("cannot set the permissions of", path))
}

/// Writes the content stored under `hash` at `relative`, through a
/// temporary file beside it renamed over whatever is there.
fn write_file(
    objects: &Objects,
    root: &Path,
    relative: &str,
    hash: &str,
    mode: u32,
) -> Result<(), CheckpointError> {
    let folder = parent_folder(root, relative)?;
    let target = root.join(relative);
    if std::fs::symlink_metadata(&target).is_ok_and(|m| m.is_dir()) {
        remove(&target)?;
    }
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = folder.join(format!(".{name}.agentloop-restore"));
    let _ = std::fs::remove_file(&temporary);
    let object = objects.path(hash)?;
    let copied = std::fs::File::create_new(&temporary)
        .and_then(|mut out| {
            let mut content = std::fs::File::open(&object)?;
            std::io::copy(&mut content, &mut out)?;
            let current = out.metadata()?.permissions();
            out.set_permissions(platform::permissions(current, mode))
        })
        .and_then(|()| std::fs::rename(&temporary, &target));
    copied.map_err(|e| {
        let _ = std::fs::remove_file(&temporary);
        CheckpointError::io("cannot restore", &target)(e)
    })
}
