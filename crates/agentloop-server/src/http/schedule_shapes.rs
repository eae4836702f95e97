//! The bodies and answers of the schedules' routes (`/api/projects/{id}/
//! schedules`, `/api/schedules/{id}`).

use agentloop_storage::budgets::BudgetUsage;
use agentloop_storage::schedules::{Schedule, TickOutcome, TickOutcomeKind};
use agentloop_storage::time::rfc3339;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::budget_shapes::BudgetShape;
use super::requests::{AgentName, Change, RequestBody};

/// `POST /api/projects/{projectId}/schedules`: a schedule of one of the
/// project's tasks.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewSchedule {
    /// The task whose agent runs it starts (one of the project's).
    pub task_id: String,
    /// A cron expression: five fields (minute hour day-of-month month
    /// day-of-week, e.g. `0 9 * * MON-FRI`) or six with seconds first
    /// (`*/30 * * * * *`).
    pub cron: String,
    /// The IANA time zone the expression is read in (`Europe/Paris`);
    /// `UTC` when left out.
    #[serde(default)]
    pub time_zone: Option<String>,
    /// The agent it starts; `implementation` when left out.
    #[serde(default)]
    pub agent: Option<AgentName>,
    /// The request each run is given, after the agent's prompt.
    #[serde(default)]
    pub prompt: Option<String>,
    /// Create it paused.
    #[serde(default)]
    pub paused: bool,
}

impl RequestBody for NewSchedule {}

/// `PATCH /api/schedules/{scheduleId}`: what changes (a field left out
/// stays). `paused: true` pauses it; `paused: false` resumes it from now
/// (ticks that fell while it was paused do not fire).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleChange {
    /// A new cron expression.
    pub cron: Option<String>,
    /// A new time zone.
    pub time_zone: Option<String>,
    /// A new agent.
    pub agent: Option<AgentName>,
    /// A new request (null: none).
    #[serde(default)]
    pub prompt: Change<String>,
    /// Pause (true) or resume (false).
    pub paused: Option<bool>,
}

impl RequestBody for ScheduleChange {}

/// What a tick did.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TickOutcomeName {
    /// An agent run started (`agent_run_id`).
    Started,
    /// The task already had a running or waiting agent run: none started.
    Skipped,
    /// The tick was older than the grace window when a server claimed it
    /// (the servers were down): none started.
    Missed,
    /// The start was refused (the task is marked done, a limit): none
    /// started; `reason` says why.
    Failed,
}

impl From<TickOutcomeKind> for TickOutcomeName {
    fn from(kind: TickOutcomeKind) -> Self {
        match kind {
            TickOutcomeKind::Started => Self::Started,
            TickOutcomeKind::Skipped => Self::Skipped,
            TickOutcomeKind::Missed => Self::Missed,
            TickOutcomeKind::Failed => Self::Failed,
        }
    }
}

/// What a schedule's last tick did.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "TickOutcome")]
pub struct TickOutcomeShape {
    /// The tick (RFC 3339).
    pub tick_at: String,
    /// When it was handled (RFC 3339).
    pub at: String,
    /// What it did.
    pub outcome: TickOutcomeName,
    /// The agent run it started.
    pub agent_run_id: Option<String>,
    /// Why it started none.
    pub reason: Option<String>,
    /// Earlier ticks passed over without a run (the servers were down or
    /// busy past them).
    pub missed: u64,
}

impl From<&TickOutcome> for TickOutcomeShape {
    fn from(o: &TickOutcome) -> Self {
        Self {
            tick_at: rfc3339(o.tick_at),
            at: rfc3339(o.at),
            outcome: o.kind.into(),
            agent_run_id: o.agent_run_id.clone(),
            reason: o.reason.clone(),
            missed: o.missed,
        }
    }
}

/// A schedule: a cron expression in a time zone that starts an agent run
/// on a task.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "Schedule")]
pub struct ScheduleShape {
    /// Its id.
    pub id: String,
    /// The task's project.
    pub project_id: String,
    /// The task it starts runs on.
    pub task_id: String,
    /// The cron expression.
    pub cron: String,
    /// The IANA time zone it is read in.
    pub time_zone: String,
    /// The agent it starts.
    pub agent: String,
    /// The request each run is given.
    pub prompt: Option<String>,
    /// Whether it is paused.
    pub paused: bool,
    /// The next tick (RFC 3339); null while paused or when no tick is
    /// left.
    pub next_fire_at: Option<String>,
    /// The last tick a server claimed (RFC 3339).
    pub last_fired_at: Option<String>,
    /// What that tick did.
    pub last_outcome: Option<TickOutcomeShape>,
    /// The user who created it, whose runs it starts.
    pub created_by: String,
    /// Created (RFC 3339).
    pub created_at: String,
    /// Last changed (RFC 3339).
    pub updated_at: String,
    /// Its own budgets (set at `/api/schedules/{scheduleId}/budgets`),
    /// over the agent runs its ticks started and the runs chained after
    /// them, each with its spend in the current period.
    pub budgets: Vec<BudgetShape>,
}

impl ScheduleShape {
    /// Schedule `s` with its budgets' `usage`.
    pub fn new(s: &Schedule, usage: &[BudgetUsage]) -> Self {
        Self {
            id: s.id.clone(),
            project_id: s.project_id.clone(),
            task_id: s.task_id.clone(),
            cron: s.cron.clone(),
            time_zone: s.time_zone.clone(),
            agent: s.agent.as_str().to_owned(),
            prompt: s.prompt.clone(),
            paused: s.paused,
            next_fire_at: (!s.paused && s.next_fire_at < i64::MAX).then(|| rfc3339(s.next_fire_at)),
            last_fired_at: s.last_fired_at.map(rfc3339),
            last_outcome: s.last_outcome.as_ref().map(TickOutcomeShape::from),
            created_by: s.created_by.clone(),
            created_at: rfc3339(s.created_at),
            updated_at: rfc3339(s.updated_at),
            budgets: usage.iter().map(BudgetShape::from).collect(),
        }
    }
}

/// A project's schedules.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SchedulesShape {
    /// Oldest first.
    pub schedules: Vec<ScheduleShape>,
}
