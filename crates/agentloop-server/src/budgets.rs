//! Budgets of agent runs: the [`Budget`] port over the store's
//! [`BudgetsStore`](agentloop_storage::BudgetsStore), given to every run
//! this server executes. Each model call of a run reserves its estimate
//! against the budgets of the run's user (the project's owner), project
//! and task, and of the schedule it spends for (a tick started it or its
//! chain), before it goes out, and settles what it spent after; a
//! refusal ends the run `limit_exceeded` naming the budget.
//!
//! A hold an instance never settled (it stopped mid-call) is released
//! by the next reservation on its budgets once it is older than
//! [`ServerConfig::budget_hold_expiry`] (15 minutes by default): a model
//! call outlasting that bound may let its budget be overspent by its
//! estimate, and a stopped instance locks a budget no longer than it. The
//! reservation is one write in the shared store, so instances on one
//! PostgreSQL database never let a budget be spent past its limit by more
//! than what calls spent beyond their estimates.
//!
//! Settling runs on a task of its own, so a run never waits for it.
//!
//! A call's estimate is the largest of the run's earlier calls in this
//! execution, and never less than [`ServerConfig::budget_estimate`]
//! (for the first call, that floor alone).
//!
//! A run's sub-agents and skills reserve their model calls with the
//! run's port, and so does its memory extraction step: all spend for the
//! same owners.
//!
//! [`ServerConfig::budget_estimate`]: crate::config::ServerConfig::budget_estimate
//! [`ServerConfig::budget_hold_expiry`]: crate::config::ServerConfig::budget_hold_expiry

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use agentloop_storage::budgets::{BudgetScope, BudgetScopeKind, Reservation, describe};
use agentloop_storage::model::now_millis;
use agentloop_storage::{StorageError, StorageResult, Store};
use agentloop_types::{Budget, BudgetCall, BudgetHold, BudgetRefusal, Spend, async_trait};
use tokio::sync::OnceCell;

use crate::metrics::{Metrics, OwnerLabels};
use crate::state::AppState;

/// Whom a run spends for: the user its project belongs to, the project,
/// the task and the schedule. The caller knows them, so a call reads
/// nothing to find them; only the schedule of a run this instance did not
/// just create is read, once, at its first model call.
#[derive(Debug, Clone)]
pub struct Owners {
    /// The project's owner.
    pub user: String,
    /// The project.
    pub project: String,
    /// The task.
    pub task: String,
    /// The schedule the run spends for.
    pub schedule: RunSchedule,
}

/// The schedule a run spends for, as its host knows it.
#[derive(Debug, Clone)]
pub enum RunSchedule {
    /// Known: the run was created here a moment ago, with or without one.
    Known(Option<String>),
    /// Read from the store (a run loaded to be executed again).
    Unread,
}

impl Owners {
    /// The budgets' scopes, with the schedule's when the run spends for
    /// one.
    fn scopes(&self, schedule: Option<&str>) -> Vec<BudgetScope> {
        let mut scopes: Vec<BudgetScope> = [
            (BudgetScopeKind::User, &self.user),
            (BudgetScopeKind::Project, &self.project),
            (BudgetScopeKind::Task, &self.task),
        ]
        .into_iter()
        .map(|(kind, id)| BudgetScope::new(kind, id.clone()))
        .collect();
        scopes
            .extend(schedule.map(|id| BudgetScope::new(BudgetScopeKind::Schedule, id.to_owned())));
        scopes
    }
}

/// The budget port of one agent run.
pub struct RunBudget {
    store: Arc<dyn Store>,
    metrics: Arc<Metrics>,
    run_id: String,
    floor: Spend,
    hold_expiry: i64,
    owners: Owners,
    /// The run's budgets' scopes, its schedule's read at its first model
    /// call.
    scopes: OnceCell<Vec<BudgetScope>>,
}

/// The budget port of agent run `run_id`, spending for `owners`: its
/// budgets in the server's store, its cost counted in its metrics, each
/// call reserving at least the configured estimate
/// ([`crate::config::ServerConfig::budget_estimate`]) and releasing holds
/// older than [`crate::config::ServerConfig::budget_hold_expiry`] on its
/// budgets.
pub fn for_run(state: &AppState, run_id: &str, owners: Owners) -> Arc<dyn Budget> {
    let hold_expiry = state.config.budget_hold_expiry;
    Arc::new(RunBudget {
        store: state.store.clone(),
        metrics: state.metrics.clone(),
        run_id: run_id.to_owned(),
        floor: state.config.budget_estimate,
        hold_expiry: i64::try_from(hold_expiry.as_millis()).unwrap_or(i64::MAX),
        scopes: match &owners.schedule {
            RunSchedule::Known(schedule) => {
                OnceCell::new_with(Some(owners.scopes(schedule.as_deref())))
            }
            RunSchedule::Unread => OnceCell::new(),
        },
        owners,
    })
}

/// A hold id unique across the instances sharing a store.
fn hold_id(run_id: &str, iteration: u32) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{run_id}:{iteration}:{}:{}",
        crate::ids::new_id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

impl RunBudget {
    async fn scopes(&self) -> StorageResult<&[BudgetScope]> {
        self.scopes
            .get_or_try_init(|| async {
                let schedule = self.store.schedule_of_agent_run(&self.run_id).await?;
                Ok(self.owners.scopes(schedule.as_deref()))
            })
            .await
            .map(Vec::as_slice)
    }
}

/// The refusal of a call whose budgets could not be read: no call goes
/// out unreserved.
fn unreadable(error: &StorageError) -> BudgetRefusal {
    tracing::warn!(%error, "the run's budgets could not be read; its model call is refused");
    BudgetRefusal {
        budget: "(the budgets could not be read)".to_owned(),
    }
}

#[async_trait]
impl Budget for RunBudget {
    async fn reserve(&self, call: &BudgetCall) -> Result<Option<BudgetHold>, BudgetRefusal> {
        let scopes = self.scopes().await.map_err(|e| unreadable(&e))?;
        let estimate = call.largest_earlier.unwrap_or_default().max(self.floor);
        let id = hold_id(&call.run_id, call.iteration);
        let now = now_millis();
        let expire_before = now.saturating_sub(self.hold_expiry);
        let reserved = self
            .store
            .reserve_budgets(&id, scopes, estimate, now, expire_before)
            .await
            .map_err(|e| unreadable(&e))?;
        match reserved {
            // The call's spend is still counted in the metrics.
            Reservation::NoBudget => Ok(Some(BudgetHold {
                id: String::new(),
                estimate,
            })),
            Reservation::Reserved => Ok(Some(BudgetHold { id, estimate })),
            Reservation::Refused { scope, limit } => Err(BudgetRefusal {
                budget: describe(&scope, &limit),
            }),
        }
    }

    async fn settle(&self, hold: BudgetHold, actual: Spend) {
        self.metrics
            .owner_cost_usd
            .get_or_create(&OwnerLabels {
                user: self.owners.user.clone(),
                project: self.owners.project.clone(),
            })
            .inc_by(actual.cost);
        if hold.id.is_empty() {
            return;
        }
        // Settled on a task of its own: the run goes on at once. (A
        // SQLite store's writes take turns, and the turn may be held by a
        // write that waits for this run's next event.) Until it commits,
        // the call's estimate stays reserved.
        let store = self.store.clone();
        let run_id = self.run_id.clone();
        tokio::spawn(async move {
            if let Err(error) = store.settle_budgets(&hold.id, actual).await {
                tracing::warn!(%run_id, %error, "a model call's spend could not be settled");
            }
        });
    }
}
