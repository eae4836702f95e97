//! Schedules of the in-memory backend.

use async_trait::async_trait;

use super::MemoryStore;
use crate::error::{StorageError, StorageResult};
use crate::schedules::{Schedule, SchedulesStore, TickOutcome};

#[async_trait]
impl SchedulesStore for MemoryStore {
    async fn create_schedule(&self, schedule: &Schedule) -> StorageResult<()> {
        let mut state = self.lock();
        if state.schedules.contains_key(&schedule.id) {
            return Err(StorageError::exists("schedule", &schedule.id));
        }
        if !state.tasks.contains_key(&schedule.task_id)
            || !state.projects.contains_key(&schedule.project_id)
        {
            return Err(StorageError::Invalid(format!(
                "schedule {} refers to a task that does not exist",
                schedule.id
            )));
        }
        state
            .schedules
            .insert(schedule.id.clone(), schedule.clone());
        Ok(())
    }

    async fn get_schedule(&self, id: &str) -> StorageResult<Schedule> {
        self.lock()
            .schedules
            .get(id)
            .cloned()
            .ok_or_else(|| StorageError::not_found("schedule", id))
    }

    async fn list_schedules(&self, project_id: &str) -> StorageResult<Vec<Schedule>> {
        let mut found: Vec<Schedule> = self
            .lock()
            .schedules
            .values()
            .filter(|s| s.project_id == project_id)
            .cloned()
            .collect();
        super::sort_by_created(&mut found, |s| (s.created_at, s.id.as_str()));
        Ok(found)
    }

    async fn update_schedule(&self, schedule: &Schedule) -> StorageResult<()> {
        let mut state = self.lock();
        let stored = state
            .schedules
            .get_mut(&schedule.id)
            .ok_or_else(|| StorageError::not_found("schedule", &schedule.id))?;
        stored.cron.clone_from(&schedule.cron);
        stored.time_zone.clone_from(&schedule.time_zone);
        stored.agent = schedule.agent;
        stored.prompt.clone_from(&schedule.prompt);
        stored.paused = schedule.paused;
        stored.next_fire_at = schedule.next_fire_at;
        stored.updated_at = schedule.updated_at;
        Ok(())
    }

    async fn delete_schedule(&self, id: &str) -> StorageResult<()> {
        let mut state = self.lock();
        state
            .schedules
            .remove(id)
            .ok_or_else(|| StorageError::not_found("schedule", id))?;
        state.schedule_runs.retain(|_, schedule| schedule != id);
        Ok(())
    }

    async fn schedule_of_agent_run(&self, agent_run_id: &str) -> StorageResult<Option<String>> {
        let state = self.lock();
        Ok(state
            .schedule_runs
            .get(agent_run_id)
            .filter(|schedule| state.schedules.contains_key(*schedule))
            .cloned())
    }

    async fn latest_run_schedule(&self, task_id: &str) -> StorageResult<Option<String>> {
        let state = self.lock();
        let latest = state
            .agent_runs
            .values()
            .filter(|run| run.task_id == task_id)
            .max_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(latest
            .and_then(|run| state.schedule_runs.get(&run.id))
            .filter(|schedule| state.schedules.contains_key(*schedule))
            .cloned())
    }

    async fn due_schedules(&self, now: i64, limit: u32) -> StorageResult<Vec<Schedule>> {
        let mut due: Vec<Schedule> = self
            .lock()
            .schedules
            .values()
            .filter(|s| !s.paused && s.next_fire_at <= now)
            .cloned()
            .collect();
        due.sort_by(|a, b| (a.next_fire_at, &a.id).cmp(&(b.next_fire_at, &b.id)));
        due.truncate(limit as usize);
        Ok(due)
    }

    async fn next_schedule_tick(&self) -> StorageResult<Option<i64>> {
        Ok(self
            .lock()
            .schedules
            .values()
            .filter(|s| !s.paused)
            .map(|s| s.next_fire_at)
            .min())
    }

    async fn claim_schedule_tick(
        &self,
        id: &str,
        due_at: i64,
        next_at: i64,
        fired_at: i64,
    ) -> StorageResult<bool> {
        let mut state = self.lock();
        match state.schedules.get_mut(id) {
            Some(s) if !s.paused && s.next_fire_at == due_at => {
                s.next_fire_at = next_at;
                s.last_fired_at = Some(fired_at);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn record_tick_outcome(&self, id: &str, outcome: &TickOutcome) -> StorageResult<()> {
        let mut state = self.lock();
        let stored = state
            .schedules
            .get_mut(id)
            .ok_or_else(|| StorageError::not_found("schedule", id))?;
        stored.last_outcome = Some(outcome.clone());
        Ok(())
    }
}
