//! Runs' kept steps in the in-memory backend.

use async_trait::async_trait;

use super::MemoryStore;
use crate::error::{StorageError, StorageResult};
use crate::model::RunRecord;
use crate::steps::{RunStep, StepStore};
use crate::store::RunStore;

#[async_trait]
impl StepStore for MemoryStore {
    async fn keep_step(&self, step: &RunStep, keep: Option<u32>) -> StorageResult<()> {
        let mut state = self.lock();
        if !state.runs.contains_key(&step.run_id) {
            return Err(StorageError::not_found("run", &step.run_id));
        }
        let steps = state.steps.entry(step.run_id.clone()).or_default();
        if keep != Some(0) {
            steps.insert(step.seq, step.clone());
        }
        if let Some(keep) = keep {
            let keep = usize::try_from(keep).unwrap_or(usize::MAX);
            while steps.len() > keep {
                steps.pop_first();
            }
        }
        Ok(())
    }

    async fn update_run_keeping_step(
        &self,
        run: &RunRecord,
        step: &RunStep,
        keep: Option<u32>,
    ) -> StorageResult<()> {
        // Nothing here outlives the process, so two writes under two
        // locks lose nothing a crash would not lose anyway.
        RunStore::update_run(self, run).await?;
        self.keep_step(step, keep).await
    }

    async fn list_steps(&self, run_id: &str) -> StorageResult<Vec<RunStep>> {
        Ok(self
            .lock()
            .steps
            .get(run_id)
            .map(|steps| steps.values().cloned().collect())
            .unwrap_or_default())
    }

    async fn get_step(&self, run_id: &str, seq: u64) -> StorageResult<RunStep> {
        self.lock()
            .steps
            .get(run_id)
            .and_then(|steps| steps.get(&seq))
            .cloned()
            .ok_or_else(|| StorageError::not_found("step", format!("{run_id}@{seq}")))
    }
}
