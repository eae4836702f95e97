//! Webhook deliveries of the in-memory backend.

use async_trait::async_trait;

use super::MemoryStore;
use crate::error::{StorageError, StorageResult};
use crate::model::WebhookDelivery;
use crate::store::{WEBHOOK_DELIVERIES_KEPT, WebhookStore};

#[async_trait]
impl WebhookStore for MemoryStore {
    async fn save_webhook_delivery(&self, delivery: &WebhookDelivery) -> StorageResult<()> {
        let mut state = self.lock();
        if !state.projects.contains_key(&delivery.project_id) {
            return Err(StorageError::Invalid(format!(
                "project {} does not exist",
                delivery.project_id
            )));
        }
        let log = &mut state.webhook_deliveries;
        match log.iter_mut().find(|d| d.id == delivery.id) {
            Some(stored) => {
                stored.state = delivery.state;
                stored.attempts = delivery.attempts.clone();
            }
            None => log.push(delivery.clone()),
        }
        log.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        let kept = WEBHOOK_DELIVERIES_KEPT as usize;
        let mut beyond = log
            .iter()
            .filter(|d| d.project_id == delivery.project_id)
            .count()
            .saturating_sub(kept);
        log.retain(|d| {
            let drop = beyond > 0 && d.project_id == delivery.project_id;
            if drop {
                beyond -= 1;
            }
            !drop
        });
        Ok(())
    }

    async fn list_webhook_deliveries(
        &self,
        project_id: &str,
        limit: u32,
    ) -> StorageResult<Vec<WebhookDelivery>> {
        let state = self.lock();
        let all: Vec<WebhookDelivery> = state
            .webhook_deliveries
            .iter()
            .filter(|d| d.project_id == project_id)
            .cloned()
            .collect();
        let skip = all.len().saturating_sub(limit as usize);
        Ok(all.into_iter().skip(skip).collect())
    }
}
