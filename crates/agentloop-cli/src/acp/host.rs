//! What every session of the agent shares: the store, the model, the
//! tools' settings, and the sessions open on this connection.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::ClientCapabilities;
use agentloop_runtime::ChatSettings;
use agentloop_storage::Store;
use agentloop_types::{ApprovalPolicies, Hooks, ModelProvider};

use super::sessions::Sessions;
use crate::tools;

/// What every session of this agent shares.
pub struct Host {
    pub(super) store: Arc<dyn Store>,
    /// Where the memory tool keeps its files.
    pub(super) memory: Arc<dyn agentloop_types::VfsFor>,
    pub(super) provider: Arc<dyn ModelProvider>,
    pub(super) hooks: Hooks,
    pub(super) approvals: ApprovalPolicies,
    /// The settings a new session's chat gets.
    pub(super) settings: ChatSettings,
    pub(super) tool_names: Vec<String>,
    pub(super) minion: tools::MinionModel,
    pub(super) root: Option<PathBuf>,
    /// The name this process holds its runs' leases under.
    pub(super) lease_owner: String,
    /// What the editor said it can do, at `initialize`.
    pub(super) client: Mutex<ClientCapabilities>,
    pub(super) sessions: Sessions,
}
