//! Walking a folder for a checkpoint: every path under it, with its
//! metadata (links not followed), leaving out `.git`, `.agentloop`, what
//! `.gitignore` files ignore, and one path (the store, when it lies
//! inside).
//!
//! By hand over `read_dir` rather than `ignore`'s walker: each entry's
//! metadata comes from its folder's handle (one `fstatat`, not a lookup of
//! the whole path), and folders are listed by a few threads at once, which
//! is what a checkpoint of an unchanged folder costs. The `.gitignore`
//! rules are still `ignore`'s.

use std::ffi::OsString;
use std::fs::Metadata;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use ignore::Match;
use ignore::gitignore::Gitignore;

use super::error::CheckpointError;
use super::platform;

/// Folders no checkpoint holds, wherever they are: git's own, and the one
/// agentloop keeps a project's task documents and owner in (a rewind must
/// not undo a person's edit of a task).
const LEFT_OUT: [&str; 2] = [".git", ".agentloop"];

/// Threads listing folders at once, at most.
const MAX_THREADS: usize = 4;

/// What a path found is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Dir,
    File,
    Symlink,
    /// Neither (a socket, a device …): left out of checkpoints.
    Other,
}

/// A path found, with what a checkpoint reads of its metadata (kept
/// small: a walk sorts ten thousand of them).
pub(crate) struct Found {
    /// Under the root, `/`-separated.
    pub(crate) relative: String,
    pub(crate) kind: Kind,
    pub(crate) size: u64,
    /// Permission bits.
    pub(crate) mode: u32,
    /// Modification and change times and inode ([`platform::stamp`]).
    pub(crate) times: [i64; 5],
}

impl Found {
    fn new(relative: String, metadata: &Metadata) -> Self {
        let kind = metadata.file_type();
        let kind = if kind.is_dir() {
            Kind::Dir
        } else if kind.is_symlink() {
            Kind::Symlink
        } else if kind.is_file() {
            Kind::File
        } else {
            Kind::Other
        };
        Self {
            relative,
            kind,
            size: metadata.len(),
            mode: platform::mode(metadata),
            times: platform::stamp(metadata),
        }
    }
}

/// What a walk found.
#[derive(Default)]
pub(crate) struct Walked {
    pub(crate) found: Vec<Found>,
    /// Paths left out because their names are not UTF-8.
    pub(crate) skipped: Vec<PathBuf>,
}

/// A folder to list, with the `.gitignore` rules of the folders above it.
struct Folder {
    path: PathBuf,
    relative: String,
    ignores: Vec<Arc<Gitignore>>,
}

/// The folders left to list, shared by the threads.
#[derive(Default)]
struct Work {
    folders: Vec<Folder>,
    /// Threads listing a folder now (which may add more).
    busy: usize,
    failed: Option<CheckpointError>,
}

/// Walks `root`, leaving out `skip` too.
pub(crate) fn walk(root: &Path, skip: Option<&Path>) -> Result<Walked, CheckpointError> {
    let work = Mutex::new(Work {
        folders: vec![Folder {
            path: root.to_owned(),
            relative: String::new(),
            ignores: Vec::new(),
        }],
        ..Work::default()
    });
    let changed = Condvar::new();
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, MAX_THREADS);
    let mut walked = Walked::default();
    std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads)
            .map(|_| scope.spawn(|| work_through(&work, &changed, skip)))
            .collect();
        walked = work_through(&work, &changed, skip);
        for helper in helpers {
            // A helper that panicked found nothing more: its folders are
            // missing, which the failure below cannot tell; say so.
            match helper.join() {
                Ok(more) => {
                    walked.found.extend(more.found);
                    walked.skipped.extend(more.skipped);
                }
                Err(_) => {
                    let mut work = work.lock().unwrap_or_else(PoisonError::into_inner);
                    work.failed.get_or_insert(CheckpointError::Walk {
                        root: root.to_owned(),
                        message: "a thread listing folders stopped".to_owned(),
                    });
                }
            }
        }
    });
    let work = work.into_inner().unwrap_or_else(PoisonError::into_inner);
    match work.failed {
        Some(error) => Err(error),
        None => Ok(walked),
    }
}

/// Lists folders until none is left (or one failed).
fn work_through(work: &Mutex<Work>, changed: &Condvar, skip: Option<&Path>) -> Walked {
    let mut walked = Walked::default();
    loop {
        let folder = {
            let mut state = work.lock().unwrap_or_else(PoisonError::into_inner);
            loop {
                if state.failed.is_some() {
                    return walked;
                }
                if let Some(folder) = state.folders.pop() {
                    state.busy += 1;
                    break folder;
                }
                if state.busy == 0 {
                    return walked;
                }
                state = changed.wait(state).unwrap_or_else(PoisonError::into_inner);
            }
        };
        let listed = list(&folder, skip, &mut walked);
        let mut state = work.lock().unwrap_or_else(PoisonError::into_inner);
        state.busy -= 1;
        match listed {
            Ok(folders) => state.folders.extend(folders),
            Err(error) => {
                state.failed.get_or_insert(error);
            }
        }
        changed.notify_all();
    }
}

/// Lists `folder` into `walked`; returns its subfolders to list.
fn list(
    folder: &Folder,
    skip: Option<&Path>,
    walked: &mut Walked,
) -> Result<Vec<Folder>, CheckpointError> {
    let dir = &folder.path;
    let listing = std::fs::read_dir(dir).map_err(CheckpointError::io("cannot list", dir))?;
    let mut children: Vec<(OsString, Metadata)> = Vec::new();
    for child in listing {
        let child = child.map_err(CheckpointError::io("cannot list", dir))?;
        let metadata = child.metadata().map_err(CheckpointError::io(
            "cannot read the metadata of",
            child.path(),
        ))?;
        children.push((child.file_name(), metadata));
    }
    let mut ignores = folder.ignores.clone();
    if children
        .iter()
        .any(|(name, m)| name == ".gitignore" && m.is_file())
    {
        // A line git could not read is left out, as git leaves it.
        let (rules, _unreadable) = Gitignore::new(dir.join(".gitignore"));
        ignores.push(Arc::new(rules));
    }
    // The store can only lie in a folder directly: its path is compared
    // in its parent alone.
    let skip_here = skip.filter(|skip| skip.parent() == Some(dir.as_path()));
    let mut subfolders = Vec::new();
    for (name, metadata) in children {
        if LEFT_OUT.iter().any(|left_out| name == *left_out) {
            continue;
        }
        let is_dir = metadata.is_dir();
        // Most entries need no path of their own: only a folder (listed
        // next), one checked against the rules or the store, or one
        // skipped.
        if skip_here.is_some() || !ignores.is_empty() {
            let path = dir.join(&name);
            if skip_here == Some(path.as_path()) || ignored(&ignores, &path, is_dir) {
                continue;
            }
        }
        let Some(text) = name.to_str() else {
            walked.skipped.push(dir.join(&name));
            continue;
        };
        let mut relative = String::with_capacity(folder.relative.len() + 1 + text.len());
        if !folder.relative.is_empty() {
            relative.push_str(&folder.relative);
            relative.push('/');
        }
        relative.push_str(text);
        if is_dir {
            subfolders.push(Folder {
                path: dir.join(&name),
                relative: relative.clone(),
                ignores: ignores.clone(),
            });
        }
        walked.found.push(Found::new(relative, &metadata));
    }
    Ok(subfolders)
}

/// Whether the nearest `.gitignore` rule that speaks of `path` ignores it
/// (a `!` rule re-includes it).
fn ignored(ignores: &[Arc<Gitignore>], path: &Path, is_dir: bool) -> bool {
    for rules in ignores.iter().rev() {
        match rules.matched(path, is_dir) {
            Match::Ignore(_) => return true,
            Match::Whitelist(_) => return false,
            Match::None => {}
        }
    }
    false
}
