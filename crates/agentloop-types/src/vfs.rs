//! The virtual filesystem port: how tools reach project data.
//!
//! Paths are `/`-separated and rooted at `/` (a path without a leading `/`
//! is read from the root). Every implementation applies the same rules
//! through [`normalize_path`], so a path means the same thing in memory, in a
//! directory jail, or in a database-backed store.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// Longest accepted path, in bytes.
pub const MAX_PATH_LEN: usize = 4096;
/// Longest accepted path component, in bytes.
pub const MAX_COMPONENT_LEN: usize = 255;

/// Why a virtual filesystem operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VfsError {
    /// The path breaks the path rules; `reason` says which.
    #[error("invalid path {path:?}: {reason}")]
    InvalidPath {
        /// The path as given.
        path: String,
        /// Which rule it breaks.
        reason: String,
    },
    /// The path would resolve outside the filesystem's root.
    #[error("path {path:?} resolves outside the root: {reason}")]
    Escape {
        /// The path as given.
        path: String,
        /// How it escapes.
        reason: String,
    },
    /// Nothing exists at the path.
    #[error("{0} does not exist")]
    NotFound(String),
    /// Something already exists at the path.
    #[error("{0} already exists")]
    AlreadyExists(String),
    /// A file was expected, a directory was found.
    #[error("{0} is a directory")]
    IsADirectory(String),
    /// A directory was expected, a file was found.
    #[error("{0} is not a directory")]
    NotADirectory(String),
    /// The operation is not allowed on this path or filesystem.
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    /// The file is too large for the operation.
    #[error("{path} is too large ({size} bytes, limit {limit})")]
    TooLarge {
        /// The file.
        path: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The file's content is not valid UTF-8 text.
    #[error("{0} is not a UTF-8 text file")]
    NotText(String),
    /// An I/O error of the backing store.
    #[error("i/o error on {path}: {message}")]
    Io {
        /// The path.
        path: String,
        /// What went wrong.
        message: String,
    },
}

/// Kind of a filesystem entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
}

/// What [`Vfs::stat`] reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Metadata {
    /// File or directory.
    pub kind: EntryKind,
    /// Size in bytes (0 for directories).
    pub size: u64,
}

impl Metadata {
    /// Whether this is a directory.
    pub fn is_dir(&self) -> bool {
        self.kind == EntryKind::Directory
    }
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DirEntry {
    /// Name within the directory (no `/`).
    pub name: String,
    /// Full normalised path.
    pub path: String,
    /// File or directory.
    pub kind: EntryKind,
    /// Size in bytes (0 for directories).
    pub size: u64,
}

/// A virtual filesystem. Implementations must call [`normalize_path`] on
/// every path they are given and never touch anything outside their root.
#[async_trait]
pub trait Vfs: Send + Sync {
    /// Reads a whole file.
    async fn read(&self, path: &str) -> Result<Vec<u8>, VfsError>;
    /// Writes a whole file, creating or replacing it and creating missing
    /// parent directories.
    async fn write(&self, path: &str, data: &[u8]) -> Result<(), VfsError>;
    /// Creates a directory and missing parents; succeeds if it exists.
    async fn create_dir(&self, path: &str) -> Result<(), VfsError>;
    /// Lists a directory, entries sorted by name.
    async fn list(&self, path: &str) -> Result<Vec<DirEntry>, VfsError>;
    /// Describes the entry at `path`, or `None` when nothing is there.
    async fn stat(&self, path: &str) -> Result<Option<Metadata>, VfsError>;
    /// Deletes a file, or a directory with everything in it.
    async fn delete(&self, path: &str) -> Result<(), VfsError>;
    /// Moves a file or directory; fails if `to` exists.
    async fn rename(&self, from: &str, to: &str) -> Result<(), VfsError>;

    /// Reads a file as UTF-8 text.
    async fn read_to_string(&self, path: &str) -> Result<String, VfsError> {
        let bytes = self.read(path).await?;
        String::from_utf8(bytes).map_err(|_| VfsError::NotText(path.to_owned()))
    }
}

/// Refuses a move of normalised paths that no file system allows: of or
/// onto the root, or of a folder into itself.
pub fn check_move(from: &str, to: &str) -> Result<(), VfsError> {
    if from == "/" || to == "/" {
        return Err(VfsError::PermissionDenied("cannot move the root".into()));
    }
    if is_within(to, from) {
        return Err(VfsError::InvalidPath {
            path: to.to_owned(),
            reason: "cannot move a directory into itself".into(),
        });
    }
    Ok(())
}

/// Who writes through a [`VfsFor`]: the run and the tool call (its step)
/// a write comes from, so what is stored can name its source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteOrigin {
    /// Id of the run making the call.
    pub run_id: String,
    /// Id of the tool call that writes.
    pub step: String,
}

/// A file system handed out per tool call: the port the memory tool reads
/// and writes through, so a store can record where each write came from.
/// Any shared [`Vfs`] is one that ignores the origin.
pub trait VfsFor: Send + Sync {
    /// The files a call made by `origin` sees.
    fn vfs_for(&self, origin: WriteOrigin) -> std::sync::Arc<dyn Vfs>;
}

impl<T: Vfs + 'static> VfsFor for std::sync::Arc<T> {
    fn vfs_for(&self, _origin: WriteOrigin) -> std::sync::Arc<dyn Vfs> {
        self.clone()
    }
}

impl VfsFor for std::sync::Arc<dyn Vfs> {
    fn vfs_for(&self, _origin: WriteOrigin) -> std::sync::Arc<dyn Vfs> {
        self.clone()
    }
}

/// Characters that look like `.`, `/` or `\` and are refused so a path can
/// never mean something other than what it shows.
const LOOKALIKES: &[char] = &[
    '\u{2024}', // one dot leader
    '\u{2044}', // fraction slash
    '\u{2215}', // division slash
    '\u{2216}', // set minus
    '\u{29F5}', // reverse solidus operator
    '\u{29F8}', // big solidus
    '\u{FE52}', // small full stop
    '\u{FE68}', // small reverse solidus
    '\u{FF0E}', // fullwidth full stop
    '\u{FF0F}', // fullwidth solidus
    '\u{FF3C}', // fullwidth reverse solidus
    '\u{FEFF}', // byte order mark
    '\u{200B}', // zero width space
    '\u{200C}', // zero width non-joiner
    '\u{200D}', // zero width joiner
    '\u{202E}', // right-to-left override
    '\u{FFFD}', // replacement character (a lossy decode)
];

/// Normalises a virtual path: the one rule set every [`Vfs`] applies.
///
/// The result starts with `/`, has no empty, `.` or trailing components, and
/// is `/` for the root. Refused: empty paths, NUL and other control
/// characters, backslashes, Windows drive and UNC prefixes, `..` components,
/// percent-encoded separators or dots, look-alike Unicode separators and
/// invisible characters, `~` home prefixes, and over-long paths or
/// components.
///
/// ```
/// use agentloop_types::vfs::normalize_path;
/// assert_eq!(normalize_path("memories//notes.md").unwrap(), "/memories/notes.md");
/// assert_eq!(normalize_path("/a/./b/").unwrap(), "/a/b");
/// assert!(normalize_path("/a/../../etc/passwd").is_err());
/// ```
pub fn normalize_path(path: &str) -> Result<String, VfsError> {
    let invalid = |reason: &str| VfsError::InvalidPath {
        path: path.to_owned(),
        reason: reason.to_owned(),
    };
    if path.is_empty() {
        return Err(invalid("the path is empty"));
    }
    if path.len() > MAX_PATH_LEN {
        return Err(invalid("the path is too long"));
    }
    if path.contains('\0') {
        return Err(invalid("the path contains a NUL byte"));
    }
    if path.chars().any(char::is_control) {
        return Err(invalid("the path contains a control character"));
    }
    if path.contains('\\') {
        return Err(invalid("backslashes are not allowed; use '/'"));
    }
    if path.contains(LOOKALIKES) {
        return Err(invalid(
            "the path contains a look-alike separator or invisible character",
        ));
    }
    if has_encoded_separator(path) {
        return Err(invalid(
            "percent-encoded dots and separators are not allowed",
        ));
    }
    let bytes = path.as_bytes();
    if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
        return Err(invalid("drive-letter paths are not allowed"));
    }
    if path.starts_with('~') {
        return Err(invalid("'~' home paths are not allowed"));
    }
    let mut parts = Vec::new();
    for component in path.split('/') {
        match component {
            "" | "." => {}
            ".." => return Err(invalid("'..' components are not allowed")),
            c if c.len() > MAX_COMPONENT_LEN => {
                return Err(invalid("a path component is too long"));
            }
            c if c.trim_matches([' ', '.']).is_empty() => {
                return Err(invalid("a path component is only dots or spaces"));
            }
            c => parts.push(c),
        }
    }
    Ok(format!("/{}", parts.join("/")))
}

/// Whether `path` hides a `.`, `/`, `\` or NUL behind percent-encoding
/// (including the overlong UTF-8 forms such as `%c0%af`).
fn has_encoded_separator(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    [
        "%2e", "%2f", "%5c", "%00", "%c0%ae", "%c0%af", "%c1%9c", "%25",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

/// The parent of a normalised path (`None` for the root).
pub fn parent_path(normalized: &str) -> Option<&str> {
    if normalized == "/" {
        return None;
    }
    match normalized.rfind('/') {
        Some(0) => Some("/"),
        Some(i) => Some(&normalized[..i]),
        None => None,
    }
}

/// Joins a normalised directory path and a child name.
pub fn join_path(dir: &str, name: &str) -> String {
    if dir == "/" {
        format!("/{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// Whether `path` is `ancestor` or lies below it (both normalised).
pub fn is_within(path: &str, ancestor: &str) -> bool {
    ancestor == "/"
        || path == ancestor
        || (path.starts_with(ancestor) && path.as_bytes().get(ancestor.len()) == Some(&b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises() {
        assert_eq!(normalize_path("/").unwrap(), "/");
        assert_eq!(normalize_path(".").unwrap(), "/");
        assert_eq!(normalize_path("a/b").unwrap(), "/a/b");
        assert_eq!(normalize_path("//a//./b//").unwrap(), "/a/b");
        assert_eq!(normalize_path("/a b/c.d").unwrap(), "/a b/c.d");
        assert_eq!(normalize_path("/ünï/码").unwrap(), "/ünï/码");
    }

    #[test]
    fn refuses_hostile_paths() {
        for p in [
            "",
            "..",
            "/a/../b",
            "a/..",
            "a\0b",
            "a\nb",
            "a\\b",
            "C:/x",
            "c:",
            "~/x",
            "%2e%2e/x",
            "a%2Fb",
            "%c0%af",
            "%252e",
            "a/\u{FF0E}\u{FF0E}/b",
            "a\u{2215}b",
            "a/\u{202E}b",
            "a/...",
            "a/ . ",
        ] {
            assert!(normalize_path(p).is_err(), "{p:?} accepted");
        }
        assert!(normalize_path(&"a".repeat(MAX_COMPONENT_LEN + 1)).is_err());
        assert!(normalize_path(&"a/".repeat(MAX_PATH_LEN)).is_err());
    }

    #[test]
    fn path_helpers() {
        assert_eq!(parent_path("/"), None);
        assert_eq!(parent_path("/a"), Some("/"));
        assert_eq!(parent_path("/a/b"), Some("/a"));
        assert_eq!(join_path("/", "a"), "/a");
        assert_eq!(join_path("/a", "b"), "/a/b");
        assert!(is_within("/a/b", "/a"));
        assert!(is_within("/a", "/a"));
        assert!(!is_within("/ab", "/a"));
        assert!(is_within("/x", "/"));
    }
}
