//! Project folders: where a `repoFolder` may be, and creating it without
//! following a symbolic link out of the projects root.
//!
//! A folder is planned first (lexical checks, then a walk that only looks
//! at what exists, `lstat` per component), claimed in the store (no two
//! projects' folders may be equal or nested), and only then created, one
//! component at a time with no-follow checks. A refused request therefore
//! creates nothing. Symbolic links anywhere below the root are refused
//! rather than resolved: a link can be changed after the check, a real
//! folder cannot be swapped without the server seeing a non-folder.

use std::io::ErrorKind;
use std::path::{Component, Path, PathBuf};

/// Why a `repoFolder` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FolderError {
    /// The path is not one the server accepts as written.
    #[error("{0}")]
    Invalid(String),
    /// Part of the path exists and is not a plain folder.
    #[error("{0}")]
    NotAFolder(String),
    /// The projects root could not be read or created.
    #[error("the server's projects folder {root} is not usable: {reason}")]
    Root {
        /// The configured root.
        root: PathBuf,
        /// The operating system's words.
        reason: String,
    },
    /// Creating a folder failed.
    #[error("cannot create {path}: {reason}")]
    Create {
        /// The folder that could not be created.
        path: PathBuf,
        /// The operating system's words.
        reason: String,
    },
}

/// A folder that passed every check, and which of its components are yet
/// to be created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedFolder {
    /// The absolute, normalised folder.
    pub path: PathBuf,
    /// How many leading components of `path` exist now.
    existing: usize,
}

impl PlannedFolder {
    /// The folder as the store claims it: `/`-separated, no trailing `/`.
    pub fn key(&self) -> String {
        self.path.to_string_lossy().into_owned()
    }
}

/// Checks `requested` against the projects root (`None`: the whole file
/// system is the root, and only absolute paths are taken) without creating
/// anything. A relative path is taken relative to the root.
pub fn plan(root: Option<&Path>, requested: &str) -> Result<PlannedFolder, FolderError> {
    if requested.trim().is_empty() {
        return Err(FolderError::Invalid("repoFolder must not be empty".into()));
    }
    if requested.contains('\0') {
        return Err(FolderError::Invalid(
            "repoFolder must not contain NUL".into(),
        ));
    }
    let requested = Path::new(requested);
    let root = match root {
        Some(root) => {
            std::fs::create_dir_all(root).map_err(|e| root_error(root, &e))?;
            root.canonicalize().map_err(|e| root_error(root, &e))?
        }
        None if requested.is_absolute() => PathBuf::from("/"),
        None => {
            return Err(FolderError::Invalid(
                "repoFolder must be an absolute path (this server has no projects folder)".into(),
            ));
        }
    };
    let joined = if requested.is_absolute() {
        requested.to_path_buf()
    } else {
        root.join(requested)
    };
    let mut path = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => path.push(component),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(FolderError::Invalid(
                    "repoFolder must not contain `..`".into(),
                ));
            }
            Component::Normal(name) => path.push(name),
        }
    }
    let Ok(below) = path.strip_prefix(&root) else {
        return Err(FolderError::Invalid(format!(
            "repoFolder {} is outside the server's projects folder {root}: give a folder \
             inside {root} (a relative path is taken inside it), or start the server with \
             --projects-root naming a folder that holds yours (`agentloop serve \
             --projects-root /` lets projects use any folder of the machine)",
            path.display(),
            root = root.display()
        )));
    };
    if below.as_os_str().is_empty() {
        return Err(FolderError::Invalid(
            "repoFolder must be a folder inside the projects folder, not the projects folder itself"
                .into(),
        ));
    }
    let mut existing = root.components().count();
    let mut at = root.clone();
    for name in below.components() {
        at.push(name);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(FolderError::NotAFolder(format!(
                    "{} is a symbolic link; give the real folder instead",
                    at.display()
                )));
            }
            Ok(meta) if meta.is_dir() => existing += 1,
            Ok(_) => {
                return Err(FolderError::NotAFolder(format!(
                    "{} exists and is not a folder",
                    at.display()
                )));
            }
            Err(e) if e.kind() == ErrorKind::NotFound => break,
            Err(e) => {
                return Err(FolderError::NotAFolder(format!(
                    "{} cannot be read: {}",
                    at.display(),
                    e.kind()
                )));
            }
        }
    }
    Ok(PlannedFolder { path, existing })
}

/// Creates the planned folder's missing components, refusing any that
/// turned into something other than a plain folder since it was planned.
/// Returns the folders it created, outermost first.
pub fn create(planned: &PlannedFolder) -> Result<Vec<PathBuf>, FolderError> {
    let mut created = Vec::new();
    let mut at = PathBuf::new();
    for (index, component) in planned.path.components().enumerate() {
        at.push(component);
        if index < planned.existing {
            continue;
        }
        match std::fs::create_dir(&at) {
            Ok(()) => created.push(at.clone()),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => {
                remove_created(&created);
                return Err(FolderError::Create {
                    path: at,
                    reason: e.kind().to_string(),
                });
            }
        }
        // `create_dir` does not follow a link in its last component, but a
        // link could have been placed here by someone else meanwhile.
        let plain = std::fs::symlink_metadata(&at).is_ok_and(|m| m.is_dir());
        if !plain {
            remove_created(&created);
            return Err(FolderError::NotAFolder(format!(
                "{} changed while it was being created",
                at.display()
            )));
        }
    }
    Ok(created)
}

/// Removes folders [`create`] made (innermost first), if still empty.
pub fn remove_created(created: &[PathBuf]) {
    for folder in created.iter().rev() {
        let _ = std::fs::remove_dir(folder);
    }
}

fn root_error(root: &Path, error: &std::io::Error) -> FolderError {
    FolderError::Root {
        root: root.to_path_buf(),
        reason: error.kind().to_string(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn relative_and_absolute_folders_inside_the_root_are_planned() {
        let root = tempfile::tempdir().unwrap();
        let real = root.path().canonicalize().unwrap();
        let planned = plan(Some(root.path()), "a/b").unwrap();
        assert_eq!(planned.path, real.join("a/b"));
        let planned = plan(Some(root.path()), real.join("./c").to_str().unwrap()).unwrap();
        assert_eq!(planned.path, real.join("c"));
        assert!(!real.join("a").exists(), "planning creates nothing");
        let created = create(&plan(Some(root.path()), "a/b").unwrap()).unwrap();
        assert_eq!(created, vec![real.join("a"), real.join("a/b")]);
        assert!(real.join("a/b").is_dir());
    }

    #[test]
    fn escapes_links_files_and_the_root_itself_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let real = root.path().canonicalize().unwrap();
        std::os::unix::fs::symlink(outside.path(), real.join("link")).unwrap();
        std::fs::write(real.join("file"), "x").unwrap();
        for bad in [
            "",
            "../x",
            "a/../../x",
            "link/p4",
            "link",
            "file/p",
            "/etc/x",
            ".",
            real.to_str().unwrap(),
        ] {
            assert!(
                plan(Some(root.path()), bad).is_err(),
                "{bad:?} was accepted"
            );
        }
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }
}
