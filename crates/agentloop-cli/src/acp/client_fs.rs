//! The fs tool's files read and written through the editor (ACP
//! `fs/read_text_file` and `fs/write_text_file`), so the agent sees unsaved
//! buffers and the editor sees its edits, when the client offers that.
//! Every path is checked by the session's jail first: the editor is asked
//! only about files under the session's folder. Listing, metadata, deletes
//! and renames stay on the disk.

use std::sync::Arc;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{ReadTextFileRequest, SessionId, WriteTextFileRequest};
use agentloop_tools::vfs::DirJail;
use agentloop_types::{DirEntry, Metadata, Vfs, VfsError, async_trait};

/// What the editor offers of its file system.
#[derive(Clone, Copy, Default)]
pub struct Offered {
    pub read: bool,
    pub write: bool,
}

/// The session's folder with reads and writes going through the editor
/// where it offers them.
pub struct ClientFs {
    pub jail: Arc<DirJail>,
    pub offered: Offered,
    pub cx: ConnectionTo<Client>,
    pub session: SessionId,
}

impl ClientFs {
    fn failed(path: &str, e: &agent_client_protocol::Error) -> VfsError {
        VfsError::Io {
            path: path.to_owned(),
            message: format!("the editor could not do it: {}", e.message),
        }
    }
}

#[async_trait]
impl Vfs for ClientFs {
    async fn read(&self, path: &str) -> Result<Vec<u8>, VfsError> {
        if !self.offered.read {
            return self.jail.read(path).await;
        }
        let host = self.jail.resolve_host(path, true)?;
        // The editor is asked only about files that exist, so a missing
        // file is reported as the tool expects.
        if self.jail.stat(path).await?.is_none() {
            return Err(VfsError::NotFound(path.to_owned()));
        }
        let read = self
            .cx
            .send_request(ReadTextFileRequest::new(self.session.clone(), host))
            .block_task()
            .await
            .map_err(|e| Self::failed(path, &e))?;
        Ok(read.content.into_bytes())
    }

    async fn write(&self, path: &str, data: &[u8]) -> Result<(), VfsError> {
        if !self.offered.write {
            return self.jail.write(path, data).await;
        }
        let host = self.jail.resolve_host(path, true)?;
        let text = std::str::from_utf8(data).map_err(|_| VfsError::NotText(path.to_owned()))?;
        self.cx
            .send_request(WriteTextFileRequest::new(
                self.session.clone(),
                host,
                text.to_owned(),
            ))
            .block_task()
            .await
            .map_err(|e| Self::failed(path, &e))?;
        Ok(())
    }

    async fn create_dir(&self, path: &str) -> Result<(), VfsError> {
        self.jail.create_dir(path).await
    }

    async fn list(&self, path: &str) -> Result<Vec<DirEntry>, VfsError> {
        self.jail.list(path).await
    }

    async fn stat(&self, path: &str) -> Result<Option<Metadata>, VfsError> {
        self.jail.stat(path).await
    }

    async fn delete(&self, path: &str) -> Result<(), VfsError> {
        self.jail.delete(path).await
    }

    async fn rename(&self, from: &str, to: &str) -> Result<(), VfsError> {
        self.jail.rename(from, to).await
    }
}
