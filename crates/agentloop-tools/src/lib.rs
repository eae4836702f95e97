//! Tools for agentloop.

pub mod fs;
pub mod memory;
pub mod options;
pub mod schema;
mod text;
pub mod vfs;

pub use fs::FsTool;
pub use memory::MemoryTool;
