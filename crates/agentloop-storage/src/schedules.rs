//! Schedules: a cron expression in a time zone that starts an agent run
//! on a task, with the store's one guarantee that makes several server
//! instances safe: each tick is claimed once
//! ([`SchedulesStore::claim_schedule_tick`]).
//!
//! The store keeps the expression and the zone as text and never reads
//! them: the server computes each tick's time and hands the store plain
//! Unix milliseconds.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::error::StorageResult;
use crate::model::AgentType;

/// A schedule of a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    /// Id.
    pub id: String,
    /// The task's project.
    pub project_id: String,
    /// The task it starts runs on.
    pub task_id: String,
    /// The cron expression, as given.
    pub cron: String,
    /// The IANA time zone the expression is read in (`Europe/Paris`).
    pub time_zone: String,
    /// The agent it starts.
    pub agent: AgentType,
    /// The request the run is given, if any.
    pub prompt: Option<String>,
    /// Whether it is paused (no tick fires while it is).
    pub paused: bool,
    /// The next tick due (Unix ms).
    pub next_fire_at: i64,
    /// The last tick claimed (Unix ms), if any.
    pub last_fired_at: Option<i64>,
    /// What the last claimed tick did.
    pub last_outcome: Option<TickOutcome>,
    /// The user it was created by (its project's owner), whose run it
    /// starts.
    pub created_by: String,
    /// Created (Unix ms).
    pub created_at: i64,
    /// Last changed (Unix ms).
    pub updated_at: i64,
}

/// What a claimed tick did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TickOutcome {
    /// The tick (Unix ms) it was for.
    pub tick_at: i64,
    /// When it was handled (Unix ms).
    pub at: i64,
    /// What happened.
    pub kind: TickOutcomeKind,
    /// The agent run it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_run_id: Option<String>,
    /// Why it started none, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Earlier ticks passed over without a run (the server was down, or
    /// busy), counted up to a bound.
    #[serde(default)]
    pub missed: u64,
}

/// What a claimed tick did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TickOutcomeKind {
    /// An agent run started.
    Started,
    /// The task already had a running or waiting agent run: none started.
    Skipped,
    /// The tick was older than the grace window when it was claimed (the
    /// server was down): none started.
    Missed,
    /// The start was refused (the task is marked done, a limit, an
    /// error): none started.
    Failed,
}

impl TickOutcomeKind {
    /// Its name on the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Started => "started",
            Self::Skipped => "skipped",
            Self::Missed => "missed",
            Self::Failed => "failed",
        }
    }
}

/// Schedules. Deleting a task or a project deletes its schedules.
#[async_trait]
pub trait SchedulesStore: Send + Sync {
    /// Creates a schedule; `AlreadyExists` (kind `schedule`) if the id is
    /// taken, `Invalid` if its task does not exist.
    async fn create_schedule(&self, schedule: &Schedule) -> StorageResult<()>;
    /// Reads a schedule; `NotFound` (kind `schedule`).
    async fn get_schedule(&self, id: &str) -> StorageResult<Schedule>;
    /// A project's schedules, oldest first (ties by id).
    async fn list_schedules(&self, project_id: &str) -> StorageResult<Vec<Schedule>>;
    /// Replaces a schedule's cron, time zone, agent, prompt, paused flag,
    /// next tick and `updated_at` (the rest stays); `NotFound`.
    async fn update_schedule(&self, schedule: &Schedule) -> StorageResult<()>;
    /// Deletes a schedule; `NotFound`.
    async fn delete_schedule(&self, id: &str) -> StorageResult<()>;
    /// Schedules not paused whose next tick is due at `now`, earliest
    /// first, at most `limit`.
    async fn due_schedules(&self, now: i64, limit: u32) -> StorageResult<Vec<Schedule>>;
    /// The earliest next tick of the schedules not paused, if any.
    async fn next_schedule_tick(&self) -> StorageResult<Option<i64>>;
    /// Claims the tick `due_at` of a schedule not paused, in one
    /// conditional update: moves its next tick to `next_at` and its last
    /// fired tick to `fired_at` only while its next tick is still
    /// `due_at`. Returns whether it did: of any number of claimers racing
    /// one tick, exactly one wins, and only the winner starts the run.
    async fn claim_schedule_tick(
        &self,
        id: &str,
        due_at: i64,
        next_at: i64,
        fired_at: i64,
    ) -> StorageResult<bool>;
    /// Records what the last claimed tick did; `NotFound`.
    async fn record_tick_outcome(&self, id: &str, outcome: &TickOutcome) -> StorageResult<()>;
    /// The schedule agent run `agent_run_id` spends for (recorded as it
    /// started, see [`AgentRunStart::schedule_id`]), while that schedule
    /// exists; `None` for a run no schedule started.
    ///
    /// [`AgentRunStart::schedule_id`]: crate::model::AgentRunStart::schedule_id
    async fn schedule_of_agent_run(&self, agent_run_id: &str) -> StorageResult<Option<String>>;
    /// The schedule the task's latest agent run spends for, if any: the
    /// next link of a chain spends for the schedule its chain's runs
    /// spend for.
    async fn latest_run_schedule(&self, task_id: &str) -> StorageResult<Option<String>>;
}
