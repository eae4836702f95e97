//! File checkpoints: the project folder as it was before a step that may
//! write, kept so that a run can be rewound, or forked, with its files —
//! including what `shell` commands and JavaScript changed, not only what
//! the fs tool did.
//!
//! A checkpoint is a [`Tree`]: every directory, file and symbolic link
//! under the folder that its `.gitignore` files leave in (never `.git`, nor
//! `.agentloop`, where the server keeps task documents),
//! each file named by the SHA-256 of its content. Contents are kept once
//! per content in a store folder, so a checkpoint costs only what changed
//! since the folder's last one, and a file whose size, times and inode are
//! those the last tree saw is not read again: a step that changed nothing
//! costs a walk of the folder.
//!
//! The store is a small content store written here rather than git's
//! object database (`gix`): it needs four operations (put a file, get a
//! file, save and load a tree), no packing, history or refs, and it must
//! record what git cannot (empty folders, the tree's own folder).
//!
//! - `walk`: every path of a folder, listed by a few threads;
//! - `tree`: a folder's scan, against the last tree of the folder;
//! - `objects`: the contents a store keeps, once each;
//! - `store`: [`FileCheckpoints`], the store folder (contents, trees,
//!   each folder's last tree), taking checkpoints;
//! - `restore`: puts a folder back as a tree has it;
//! - `diff`: what changed between two trees, or a tree and the folder;
//! - `hook`: [`CheckpointHook`], the `before_tool_call` hook a run takes
//!   its checkpoints through; each is noted in the run's log;
//! - `log`: which checkpoint a run's log names for each of its steps.

mod diff;
mod error;
mod hook;
mod log;
mod objects;
mod platform;
mod restore;
mod store;
mod tree;
mod walk;

pub use diff::{Change, FileChange};
pub use error::CheckpointError;
pub use hook::{CheckpointHook, checkpoint_of};
pub use log::{Taken, TakenReader, at};
pub use restore::Restored;
pub use store::{Checkpoint, FileCheckpoints};
pub use tree::{CheckpointId, Entry, Node, Tree};
