//! Tools for agentloop.

pub mod ask_user;
pub mod fs;
pub mod js;
pub mod memory;
pub mod options;
pub mod return_tool;
pub mod schema;
mod text;
pub mod vfs;

pub use ask_user::AskUserTool;
pub use fs::FsTool;
pub use js::JsTool;
pub use memory::MemoryTool;
pub use return_tool::ReturnTool;
