//! Tools for agentloop.

pub mod vfs;
