//! [`Lease`]: this instance's hold on one agent run's record.

use std::sync::Arc;

use agentloop_storage::model::now_millis;
use agentloop_storage::{StorageResult, Store};

/// The lease an agent run is executed under.
#[derive(Clone)]
pub struct Lease {
    /// The store holding the run record.
    pub store: Arc<dyn Store>,
    /// The run.
    pub run_id: String,
    /// This instance.
    pub owner: String,
    /// Lease length in ms.
    pub ttl_ms: i64,
}

impl Lease {
    /// Takes or renews the lease; `false` if another instance holds it.
    pub async fn renew(&self) -> StorageResult<bool> {
        let now = now_millis();
        self.store
            .acquire_lease(&self.run_id, &self.owner, now, now + self.ttl_ms)
            .await
    }

    /// Gives the lease up.
    pub async fn release(&self) -> StorageResult<()> {
        self.store.release_lease(&self.run_id, &self.owner).await?;
        Ok(())
    }
}
