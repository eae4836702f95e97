//! A folder's tree: what a checkpoint holds, and the scan that makes it.

use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::error::CheckpointError;
use super::walk::{self, Found, Kind};

/// A checkpoint's id: the SHA-256 of its tree, in hexadecimal.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct CheckpointId(String);

impl CheckpointId {
    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CheckpointId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for CheckpointId {
    type Err = CheckpointError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if is_hash(text) {
            Ok(Self(text.to_owned()))
        } else {
            Err(CheckpointError::BadId(text.to_owned()))
        }
    }
}

impl TryFrom<String> for CheckpointId {
    type Error = CheckpointError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}

impl From<CheckpointId> for String {
    fn from(id: CheckpointId) -> Self {
        id.0
    }
}

/// True for 64 lowercase hexadecimal digits (a SHA-256).
pub(crate) fn is_hash(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// What a path of the tree is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Node {
    /// A folder.
    Dir,
    /// A regular file.
    File {
        /// The SHA-256 of its content.
        hash: String,
        /// Its permission bits.
        mode: u32,
        /// Its length in bytes.
        size: u64,
    },
    /// A symbolic link (never followed).
    Symlink {
        /// Where it points.
        target: String,
    },
}

impl Node {
    /// Whether `other` is the same kind of node (a file's content may
    /// differ).
    pub(crate) fn same_kind(&self, other: &Node) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }
}

/// When a file was last changed, as the file system tells it: a file whose
/// stamp is the one a tree saw is taken to hold the content the tree has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    size: u64,
    /// Modification and change times (seconds, nanoseconds) and inode.
    times: [i64; 5],
}

impl Stamp {
    fn of(found: &Found) -> Self {
        Self {
            size: found.size,
            times: found.times,
        }
    }
}

/// One path of a tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The path under the tree's folder, `/`-separated.
    pub path: String,
    /// What is there.
    #[serde(flatten)]
    pub node: Node,
    /// When it was seen (files only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stamp: Option<Stamp>,
}

/// A folder as a checkpoint has it: its entries, sorted by path (a folder
/// comes before what it holds).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tree {
    /// The folder (canonical).
    pub root: PathBuf,
    /// Its entries.
    pub entries: Vec<Entry>,
}

impl Tree {
    /// Its id: the hash of the folder's path and of each entry's path and
    /// node (stamps left out: touching a file changes no checkpoint).
    pub fn id(&self) -> CheckpointId {
        use std::fmt::Write;
        let mut hasher = Sha256::new();
        hasher.update(self.root.as_os_str().as_encoded_bytes());
        hasher.update(b"\n");
        let mut mode_text = String::new();
        for entry in &self.entries {
            hasher.update(entry.path.as_bytes());
            match &entry.node {
                Node::Dir => hasher.update(b"\0dir"),
                Node::File { hash, mode, .. } => {
                    mode_text.clear();
                    let _ = write!(mode_text, "\0file\0{mode:o}\0");
                    hasher.update(mode_text.as_bytes());
                    hasher.update(hash.as_bytes());
                }
                Node::Symlink { target } => {
                    hasher.update(b"\0link\0");
                    hasher.update(target.as_bytes());
                }
            }
            hasher.update(b"\n");
        }
        CheckpointId(hex(&hasher.finalize()))
    }

    /// The entry at `path`, if any.
    pub fn get(&self, path: &str) -> Option<&Entry> {
        self.entries
            .binary_search_by(|e| e.path.as_str().cmp(path))
            .ok()
            .and_then(|i| self.entries.get(i))
    }

    /// Checks what a stored tree must be: sorted, every path relative and
    /// plain (no `..`, no `.`, no empty part), every hash a hash.
    pub(crate) fn check(&self, id: &str) -> Result<(), CheckpointError> {
        let damaged = |message: String| CheckpointError::Damaged {
            id: id.to_owned(),
            message,
        };
        for pair in self.entries.windows(2) {
            if let [a, b] = pair
                && a.path >= b.path
            {
                return Err(damaged(format!("entries out of order at {:?}", b.path)));
            }
        }
        for entry in &self.entries {
            if !is_plain(&entry.path) {
                return Err(damaged(format!(
                    "the path {:?} leaves the folder",
                    entry.path
                )));
            }
            if let Node::File { hash, .. } = &entry.node
                && !is_hash(hash)
            {
                return Err(damaged(format!("{:?} has no content hash", entry.path)));
            }
        }
        Ok(())
    }
}

/// True for a relative path made only of names.
fn is_plain(path: &str) -> bool {
    !path.is_empty()
        && !path.contains('\0')
        && !path.split('/').any(|part| part.is_empty())
        && Path::new(path)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
}

/// Lowercase hexadecimal of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// A scan of a folder.
#[derive(Debug)]
pub(crate) struct Scan {
    pub(crate) tree: Tree,
    /// Files read because their stamp was not the baseline's.
    pub(crate) read: usize,
    /// Paths left out: not UTF-8, or neither file, folder nor link.
    pub(crate) skipped: Vec<PathBuf>,
}

/// Scans `root` (canonical), leaving out `.git`, `.agentloop`, what `.gitignore` files
/// ignore, and `skip` (the store, when it lies inside). A file whose stamp
/// is the one `baseline` saw keeps the baseline's hash; any other is
/// passed to `content`, which returns its hash.
pub(crate) fn scan(
    root: &Path,
    skip: Option<&Path>,
    baseline: Option<&Tree>,
    mut content: impl FnMut(&Path) -> Result<String, CheckpointError>,
) -> Result<Scan, CheckpointError> {
    let mut walk = walk::walk(root, skip)?;
    // Sorted, the paths found are matched with the baseline's (sorted
    // too) in one pass, and make the tree in its order.
    walk.found
        .sort_unstable_by(|a, b| a.relative.cmp(&b.relative));
    let mut known = baseline
        .map_or(&[][..], |tree| tree.entries.as_slice())
        .iter()
        .peekable();
    let mut entries = Vec::with_capacity(walk.found.len());
    let mut read = 0;
    for found in walk.found {
        let (node, stamp) = match found.kind {
            Kind::Dir => (Node::Dir, None),
            Kind::Symlink => {
                let path = root.join(&found.relative);
                let target = std::fs::read_link(&path)
                    .map_err(CheckpointError::io("cannot read the link", &path))?;
                let Some(target) = target.to_str() else {
                    walk.skipped.push(path);
                    continue;
                };
                let target = target.to_owned();
                (Node::Symlink { target }, None)
            }
            Kind::File => {
                let stamp = Stamp::of(&found);
                while known.next_if(|e| e.path < found.relative).is_some() {}
                let seen =
                    known
                        .next_if(|e| e.path == found.relative)
                        .and_then(|e| match &e.node {
                            Node::File { hash, .. } if e.stamp == Some(stamp) => Some(hash.clone()),
                            _ => None,
                        });
                let hash = match seen {
                    Some(hash) => hash,
                    None => {
                        read += 1;
                        content(&root.join(&found.relative))?
                    }
                };
                let node = Node::File {
                    hash,
                    mode: found.mode,
                    size: found.size,
                };
                (node, Some(stamp))
            }
            Kind::Other => {
                walk.skipped.push(root.join(&found.relative));
                continue;
            }
        };
        entries.push(Entry {
            path: found.relative,
            node,
            stamp,
        });
    }
    Ok(Scan {
        tree: Tree {
            root: root.to_owned(),
            entries,
        },
        read,
        skipped: walk.skipped,
    })
}

/// The SHA-256 of the file at `path`, read through; each chunk read is
/// also handed to `each` (the store copies it).
pub(crate) fn hash_file(
    path: &Path,
    mut each: impl FnMut(&[u8]) -> std::io::Result<()>,
) -> Result<String, CheckpointError> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(CheckpointError::io("cannot read", path))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0; 64 * 1024];
    loop {
        let n = match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(CheckpointError::io("cannot read", path)(e)),
        };
        let chunk = buffer.get(..n).unwrap_or_default();
        hasher.update(chunk);
        each(chunk).map_err(CheckpointError::io("cannot copy", path))?;
    }
    Ok(hex(&hasher.finalize()))
}
