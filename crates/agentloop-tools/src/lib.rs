//! Tools for agentloop.

pub mod memory;
pub mod options;
pub mod schema;
mod text;
pub mod vfs;

pub use memory::MemoryTool;
