//! All the MCP servers of one configuration.

use std::sync::Arc;

use agentloop_types::Tool;

use crate::McpError;
use crate::config::McpConfig;
use crate::server::{McpServer, ServerOptions};

/// The started servers of an [`McpConfig`].
#[derive(Clone, Default)]
pub struct McpServers {
    servers: Vec<McpServer>,
}

impl McpServers {
    /// Starts every server of `config` at once; fails with the first error
    /// (the servers already started are stopped when dropped).
    pub async fn start(config: &McpConfig, options: ServerOptions) -> Result<Self, McpError> {
        let starts = config
            .servers
            .iter()
            .map(|(name, server)| McpServer::start(name.clone(), server.clone(), options.clone()));
        let servers = futures::future::join_all(starts)
            .await
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { servers })
    }

    /// The started servers, by name order.
    pub fn servers(&self) -> &[McpServer] {
        &self.servers
    }

    /// Every server's tools as they are listed now.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.servers.iter().flat_map(McpServer::tools).collect()
    }

    /// Ends every session and waits for them to close.
    pub async fn shutdown(&self) {
        futures::future::join_all(self.servers.iter().map(McpServer::shutdown)).await;
    }
}
