//! [`StoreSink`]: appends an agent run's events to its log, under the
//! run's lease, and fans them out to live followers.

use agentloop_types::MessageCreatedEvent;
use std::sync::Arc;

use agentloop_storage::Store;
use agentloop_storage::model::now_millis;
use agentloop_types::{EventKind, LoopEvent};
use async_trait::async_trait;

use crate::executor::{RunSink, SinkError};
use crate::metrics::RunMetrics;
use crate::state::LocalRun;

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
    /// Renews the lease; `LeaseLost` if another instance holds it.
    pub async fn renew(&self) -> Result<(), SinkError> {
        let now = now_millis();
        match self
            .store
            .acquire_lease(&self.run_id, &self.owner, now, now + self.ttl_ms)
            .await
        {
            Ok(true) => Ok(()),
            Ok(false) => Err(SinkError::LeaseLost(self.run_id.clone())),
            Err(e) => Err(SinkError::Storage(e.to_string())),
        }
    }
}

/// Appends events to the agent run's log and broadcasts them. The lease is
/// checked whenever a message is committed, so an instance that lost the
/// run stops writing its log.
pub struct StoreSink {
    /// The agent run's lease.
    pub lease: Lease,
    /// The run executing here, whose live followers get the events.
    pub local: Arc<LocalRun>,
    /// The run's metrics.
    pub metrics: RunMetrics,
}

#[async_trait]
impl RunSink for StoreSink {
    async fn event(&self, event: LoopEvent) -> Result<(), SinkError> {
        if event.path.is_root()
            && matches!(
                event.kind,
                EventKind::MessageCreated(MessageCreatedEvent { .. })
            )
        {
            self.lease.renew().await?;
        }
        self.lease
            .store
            .append_events(&self.lease.run_id, std::slice::from_ref(&event))
            .await
            .map_err(|e| SinkError::Storage(e.to_string()))?;
        self.metrics.event(&event);
        self.local.send(event);
        Ok(())
    }
}
