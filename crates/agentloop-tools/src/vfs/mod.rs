//! Virtual filesystem implementations of the [`Vfs`](agentloop_types::Vfs)
//! port.

mod jail;
mod memory;

pub use jail::DirJail;
pub use memory::MemoryVfs;
