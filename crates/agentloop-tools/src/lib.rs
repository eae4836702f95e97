//! Tools for agentloop and the virtual filesystems they work on.
//!
//! Tools run code and touch files for a model that may be wrong or hostile,
//! so each one is sandboxed:
//!
//! - [`vfs`]: [`MemoryVfs`](vfs::MemoryVfs) and [`DirJail`](vfs::DirJail),
//!   implementations of the `Vfs` port of `agentloop_types`. Every path
//!   goes through [`normalize_path`](agentloop_types::normalize_path); the
//!   jail also refuses symlinks that lead out of its root.
//! - [`memory`]: Anthropic's memory command set over `/memories`.
//! - [`fs`]: a text-editor-style tool over the project VFS, with glob and grep.
//! - [`js`]: JavaScript on QuickJS with time, memory and stack limits.
//! - [`minion`]: a sub-agent that runs a task in a child loop of its own.
//! - [`return_tool`] and [`ask_user`]: end or suspend the run.
//! - [`shell`] (feature `shell`, Linux): a command run by `/bin/sh -c`
//!   in a sandbox (user, PID and network namespaces, Landlock, seccomp,
//!   rlimits) through a re-executed launcher process.
//! - [`options`] and [`schema`]: typed tool options and input schemas
//!   generated from the Rust input types.
//! - [`agent_skills`]: Agent Skills folders (`SKILL.md`), read and
//!   checked, each refusal with its reason.
//! - [`checkpoint`]: file checkpoints of the project folder, taken
//!   before each step that may write, to rewind or fork a run with its
//!   files.
//! - [`agents_md`]: a project folder's `AGENTS.md` files as a run's
//!   instructions (no symbolic link followed, size-capped).
//!
//! ```
//! use std::sync::Arc;
//! use agentloop_tools::{FsTool, MemoryTool, vfs::MemoryVfs};
//! use agentloop_types::Tool;
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let vfs = Arc::new(MemoryVfs::new());
//! let memory = MemoryTool::new(vfs.clone());
//! let created = memory
//!     .run(json!({"command": "create", "path": "/memories/todo.md", "file_text": "ship it\n"}))
//!     .await;
//! assert_eq!(created.content, "File created successfully at: /memories/todo.md");
//!
//! let fs = FsTool::new(vfs);
//! assert_eq!(fs.input_schema()["type"], "object");
//! let found = fs.run(json!({"command": "grep", "pattern": "ship"}), &Default::default()).await;
//! assert!(found.content.contains("/memories/todo.md:1: ship it"));
//! # });
//! ```
//!
//! # Cargo features
//!
//! - `shell`: the [`shell`] tool and its sandbox launcher (Linux only;
//!   adds `landlock`, `seccompiler`, `nix` and tokio's process support).
//! - `javascript` (default): the [`js`] tool, code run in an embedded
//!   QuickJS (adds `rquickjs`, which compiles QuickJS's C sources).
//!   Every other tool is always built.

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod agent_skills;
pub mod agents_md;
pub mod ask_user;
pub mod checkpoint;
mod editor;
pub mod fs;
#[cfg(feature = "javascript")]
#[cfg_attr(docsrs, doc(cfg(feature = "javascript")))]
pub mod js;
pub mod memory;
pub mod minion;
pub mod options;
pub mod project_skills;
pub mod return_tool;
pub mod schema;
#[cfg(all(feature = "shell", target_os = "linux"))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "shell", target_os = "linux"))))]
pub mod shell;
mod text;
pub mod vfs;

use std::sync::Arc;

use agentloop_types::{Tool, Vfs};

pub use ask_user::AskUserTool;
pub use fs::FsTool;
#[cfg(feature = "javascript")]
pub use js::JsTool;
pub use memory::MemoryTool;
pub use minion::MinionTool;
pub use return_tool::ReturnTool;
#[cfg(all(feature = "shell", target_os = "linux"))]
pub use shell::ShellTool;

/// The standard tools over one project VFS: memory, fs, javascript (with
/// the VFS's `/lib/*.js` as its library; feature `javascript`), return and
/// ask_user.
pub fn standard_tools(vfs: Arc<dyn Vfs>) -> Vec<Arc<dyn Tool>> {
    let mut tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(MemoryTool::new(vfs.clone())),
        Arc::new(FsTool::new(vfs.clone())),
    ];
    #[cfg(feature = "javascript")]
    tools.push(Arc::new(JsTool::new(vfs)));
    tools.extend([Arc::new(ReturnTool) as Arc<dyn Tool>, Arc::new(AskUserTool)]);
    tools
}
