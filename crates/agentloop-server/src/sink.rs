//! [`StoreSink`]: stores a run's messages and events as they come, under
//! the run's lease, and fans events out to live followers.

use std::sync::Arc;

use agentloop_storage::Store;
use agentloop_storage::model::now_millis;
use agentloop_types::{EventKind, LoopEvent};
use async_trait::async_trait;
use tokio::sync::broadcast;

use crate::executor::{RunSink, SinkError};

/// The lease a run is executed under.
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

/// Persists a run's events and root messages, and broadcasts events.
pub struct StoreSink {
    /// The lease every message write is checked against.
    pub lease: Lease,
    /// The chat messages go to.
    pub chat_id: String,
    /// Live followers.
    pub events: broadcast::Sender<LoopEvent>,
}

#[async_trait]
impl RunSink for StoreSink {
    async fn event(&self, event: LoopEvent) -> Result<(), SinkError> {
        let store = &self.lease.store;
        let storage = |e: agentloop_storage::StorageError| SinkError::Storage(e.to_string());
        if event.path.is_root() {
            match &event.kind {
                EventKind::MessageCreated { message } => {
                    self.lease.renew().await?;
                    store
                        .save_message(&self.chat_id, message)
                        .await
                        .map_err(storage)?;
                }
                EventKind::TokensConsumed { tokens } => {
                    store
                        .add_chat_totals(&self.chat_id, *tokens, now_millis())
                        .await
                        .map_err(storage)?;
                }
                _ => {}
            }
        }
        store
            .append_events(&self.lease.run_id, std::slice::from_ref(&event))
            .await
            .map_err(storage)?;
        let _ = self.events.send(event);
        Ok(())
    }
}
