//! What changed between two trees, file by file, with a unified diff for
//! text.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::Serialize;

use super::error::CheckpointError;
use super::objects::Objects;
use super::tree::{Node, Tree};

/// Contents past this size are not compared line by line.
const MAX_TEXT: usize = 1024 * 1024;

/// How a path changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// It was not there.
    Added,
    /// Its content, permissions, kind or link target changed.
    Modified,
    /// It is gone.
    Removed,
}

/// One path that changed (files and links; folders show through them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct FileChange {
    /// The path under the folder.
    pub path: String,
    /// How.
    pub change: Change,
    /// The change as a unified diff, for text no larger than 1 MiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// What changed when there is no diff to show (binary content, a
    /// link, permissions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// The after side of a diff.
pub(crate) enum Side {
    /// A stored tree: contents come from the store.
    Stored(Tree),
    /// A scan of the folder as it is: contents come from the folder.
    Folder(Tree),
}

impl Side {
    fn tree(&self) -> &Tree {
        match self {
            Side::Stored(tree) | Side::Folder(tree) => tree,
        }
    }
}

pub(crate) fn diff(
    objects: &Objects,
    before: &Tree,
    after: &Side,
) -> Result<Vec<FileChange>, CheckpointError> {
    let after_tree = after.tree();
    let paths: BTreeSet<&str> = before
        .entries
        .iter()
        .chain(&after_tree.entries)
        .filter(|e| e.node != Node::Dir)
        .map(|e| e.path.as_str())
        .collect();
    let mut changes = Vec::new();
    for path in paths {
        let old = before
            .get(path)
            .map(|e| &e.node)
            .filter(|n| **n != Node::Dir);
        let new = after_tree
            .get(path)
            .map(|e| &e.node)
            .filter(|n| **n != Node::Dir);
        let change = match (old, new) {
            (Some(a), Some(b)) if a == b => continue,
            (None, Some(_)) => Change::Added,
            (Some(_), None) => Change::Removed,
            _ => Change::Modified,
        };
        let old_text = match old {
            Some(node) => text(node, |hash| objects.read(hash))?,
            None => Text::Absent,
        };
        let new_text = match new {
            Some(node) => text(node, |hash| match after {
                Side::Stored(_) => objects.read(hash),
                Side::Folder(tree) => {
                    let file = tree.root.join(path);
                    std::fs::read(&file).map_err(CheckpointError::io("cannot read", &file))
                }
            })?,
            None => Text::Absent,
        };
        let (diff, summary) = describe(path, old, new, &old_text, &new_text);
        changes.push(FileChange {
            path: path.to_owned(),
            change,
            diff,
            summary,
        });
    }
    Ok(changes)
}

/// A side's content, as far as a diff needs it.
enum Text {
    Absent,
    Lines(String),
    Opaque,
}

impl Text {
    fn lines(&self) -> Option<&str> {
        match self {
            Text::Absent => Some(""),
            Text::Lines(text) => Some(text),
            Text::Opaque => None,
        }
    }
}

fn text(
    node: &Node,
    content: impl FnOnce(&str) -> Result<Vec<u8>, CheckpointError>,
) -> Result<Text, CheckpointError> {
    Ok(match node {
        Node::File { hash, size, .. } if *size <= MAX_TEXT as u64 => {
            let bytes = content(hash)?;
            match String::from_utf8(bytes) {
                Ok(text) if !text.contains('\0') => Text::Lines(text),
                _ => Text::Opaque,
            }
        }
        _ => Text::Opaque,
    })
}

fn describe(
    path: &str,
    old: Option<&Node>,
    new: Option<&Node>,
    old_text: &Text,
    new_text: &Text,
) -> (Option<String>, Option<String>) {
    let is_file = |n: Option<&Node>| n.is_none_or(|n| matches!(n, Node::File { .. }));
    if is_file(old)
        && is_file(new)
        && let (Some(a), Some(b)) = (old_text.lines(), new_text.lines())
    {
        if a == b {
            return (None, Some(mode_change(old, new)));
        }
        let from = if old.is_some() {
            format!("a/{path}")
        } else {
            "/dev/null".to_owned()
        };
        let to = if new.is_some() {
            format!("b/{path}")
        } else {
            "/dev/null".to_owned()
        };
        let diff = similar::TextDiff::from_lines(a, b)
            .unified_diff()
            .context_radius(3)
            .header(&from, &to)
            .to_string();
        return (Some(diff), None);
    }
    (
        None,
        Some(format!("{} → {}", node_summary(old), node_summary(new))),
    )
}

fn mode_change(old: Option<&Node>, new: Option<&Node>) -> String {
    match (old, new) {
        (Some(Node::File { mode: a, .. }), Some(Node::File { mode: b, .. })) => {
            format!("permissions {a:o} → {b:o}")
        }
        _ => format!("{} → {}", node_summary(old), node_summary(new)),
    }
}

fn node_summary(node: Option<&Node>) -> String {
    match node {
        None => "nothing".to_owned(),
        Some(Node::Dir) => "a folder".to_owned(),
        Some(Node::File { size, .. }) => format!("a file of {size} bytes"),
        Some(Node::Symlink { target }) => format!("a link to {target}"),
    }
}
