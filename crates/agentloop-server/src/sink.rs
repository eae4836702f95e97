//! [`StoreSink`]: appends an agent run's events to its log, under the
//! run's lease, and fans them out to live followers.

use agentloop_types::{FinishedEvent, LoopStatus, MessageCreatedEvent};
use std::sync::{Arc, Mutex, PoisonError};

use agentloop_storage::Store;
use agentloop_storage::model::now_millis;
use agentloop_types::{EventKind, LoopEvent};
use async_trait::async_trait;

use crate::ending::{Settled, settle};
use crate::executor::{RunSink, SinkError};
use crate::metrics::RunMetrics;
use crate::state::{AppState, LocalRun};

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
    /// This instance's lease on `run_id`.
    pub fn of(state: &AppState, run_id: &str) -> Self {
        Self {
            store: state.store.clone(),
            run_id: run_id.to_owned(),
            owner: state.config.instance_id.clone(),
            ttl_ms: state.lease_ttl_ms(),
        }
    }

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
/// run stops writing its log. The run's terminal event ends the agent run
/// first ([`crate::ending::settle`]) and is logged as it ended: a run
/// cancelled or force-completed meanwhile is logged so.
pub struct StoreSink {
    /// The agent run's lease.
    pub lease: Lease,
    /// The run executing here, whose live followers get the events.
    pub local: Arc<LocalRun>,
    /// The run's metrics.
    pub metrics: RunMetrics,
    /// How the run ended, once its terminal event came.
    pub settled: Mutex<Option<Settled>>,
}

impl StoreSink {
    /// How the run ended, if its terminal event came.
    pub fn take_settled(&self) -> Option<Settled> {
        self.settled
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

#[async_trait]
impl RunSink for StoreSink {
    async fn event(&self, mut event: LoopEvent) -> Result<(), SinkError> {
        if let EventKind::Finished(FinishedEvent { result }) = &mut event.kind
            && event.path.is_root()
            && !matches!(result.status, LoopStatus::Suspended { .. })
        {
            self.lease.renew().await?;
            let settled = settle(&*self.lease.store, &self.lease.run_id, result.clone())
                .await
                .map_err(|e| SinkError::Storage(e.to_string()))?;
            *result = settled.result.clone();
            *self.settled.lock().unwrap_or_else(PoisonError::into_inner) = Some(settled);
        }
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
