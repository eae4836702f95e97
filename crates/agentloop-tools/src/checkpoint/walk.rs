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

/// Folders no checkpoint holds, wherever they are: git's own, and the one
/// agentloop keeps a project's task documents and owner in (a rewind must
/// not undo a person's edit of a task).
const LEFT_OUT: [&str; 2] = [".git", ".agentloop"];

/// Threads listing folders at once, at most.
const MAX_THREADS: usize = 4;

/// A path found, with its metadata.
pub(crate) struct Found {
    /// Under the root, `/`-separated.
    pub(crate) relative: String,
    pub(crate) metadata: Metadata,
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
    let mut subfolders = Vec::new();
    for (name, metadata) in children {
        if LEFT_OUT.iter().any(|left_out| name == *left_out) {
            continue;
        }
        let path = dir.join(&name);
        let is_dir = metadata.is_dir();
        if skip == Some(path.as_path()) || ignored(&ignores, &path, is_dir) {
            continue;
        }
        let Some(name) = name.to_str() else {
            walked.skipped.push(path);
            continue;
        };
        let relative = if folder.relative.is_empty() {
            name.to_owned()
        } else {
            format!("{}/{name}", folder.relative)
        };
        if is_dir {
            subfolders.push(Folder {
                path,
                relative: relative.clone(),
                ignores: ignores.clone(),
            });
        }
        walked.found.push(Found { relative, metadata });
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
