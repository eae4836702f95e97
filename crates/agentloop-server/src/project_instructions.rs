//! The `AGENTS.md` files of a project's folder, read into the system
//! prompt of each agent run as its chat is made (see
//! [`agentloop_tools::agents_md`]).

use std::path::Path;

use agentloop_tools::agents_md::{self, MAX_BYTES};

/// `system` followed by the instructions of the `AGENTS.md` files in
/// `folder` and below, cut at [`MAX_BYTES`] with a warning in the log.
pub fn with_system(folder: &Path, system: String) -> String {
    let instructions = agents_md::read(folder, MAX_BYTES);
    if let Some(warning) = instructions.warning() {
        tracing::warn!(folder = %folder.display(), "{warning}");
    }
    // Given a system prompt, the answer is always one.
    instructions.after_system(Some(system)).unwrap_or_default()
}
