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
//! [`ServerConfig::budget_estimate`]: crate::config::ServerConfig::budget_estimate

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use agentloop_storage::budgets::{BudgetScope, BudgetScopeKind, Reservation, describe};
use agentloop_storage::model::now_millis;
use agentloop_storage::{StorageError, StorageResult, Store};
use agentloop_types::{Budget, BudgetCall, BudgetHold, BudgetRefusal, Spend, async_trait};
use tokio::sync::OnceCell;

use crate::metrics::{Metrics, OwnerLabels};

/// Whom a run spends for.
#[derive(Debug, Clone, Default)]
struct Owners {
    user: Option<String>,
    project: Option<String>,
    task: Option<String>,
    schedule: Option<String>,
}

impl Owners {
    fn scopes(&self) -> Vec<BudgetScope> {
        [
            (BudgetScopeKind::User, &self.user),
            (BudgetScopeKind::Project, &self.project),
            (BudgetScopeKind::Task, &self.task),
            (BudgetScopeKind::Schedule, &self.schedule),
        ]
        .into_iter()
        .filter_map(|(kind, id)| id.as_ref().map(|id| BudgetScope::new(kind, id.clone())))
        .collect()
    }
}

/// The budget port of one agent run.
pub struct RunBudget {
    store: Arc<dyn Store>,
    metrics: Arc<Metrics>,
    run_id: String,
    floor: Spend,
    hold_expiry: i64,
    /// The run's user, project, task and schedule, read at its first
    /// model call.
    owners: OnceCell<Owners>,
}

/// The budget port of agent run `run_id`, its budgets in `store`, its
/// cost counted in `metrics`, each call reserving at least `floor`, and
/// releasing holds older than `hold_expiry` on its budgets.
pub fn for_run(
    store: Arc<dyn Store>,
    metrics: Arc<Metrics>,
    floor: Spend,
    hold_expiry: Duration,
    run_id: &str,
) -> Arc<dyn Budget> {
    Arc::new(RunBudget {
        store,
        metrics,
        run_id: run_id.to_owned(),
        floor,
        hold_expiry: i64::try_from(hold_expiry.as_millis()).unwrap_or(i64::MAX),
        owners: OnceCell::new(),
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
    async fn owners(&self) -> StorageResult<&Owners> {
        self.owners
            .get_or_try_init(|| async {
                let run = match self.store.get_agent_run(&self.run_id).await {
                    Ok(run) => run,
                    // Not an agent run: nothing above it has a budget.
                    Err(StorageError::NotFound { .. }) => return Ok(Owners::default()),
                    Err(other) => return Err(other),
                };
                let task = self.store.get_task(&run.task_id).await?;
                let schedule = self.store.schedule_of_agent_run(&run.id).await?;
                let project = self.store.get_project(&task.project_id).await?;
                Ok(Owners {
                    // The project's owner (`runner::project_owner`).
                    user: project
                        .settings
                        .get("owner")
                        .and_then(|owner| owner.as_str())
                        .map(str::to_owned),
                    project: Some(project.id),
                    task: Some(task.id),
                    schedule,
                })
            })
            .await
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
        let owners = self.owners().await.map_err(|e| unreadable(&e))?;
        let estimate = call.largest_earlier.unwrap_or_default().max(self.floor);
        let id = hold_id(&call.run_id, call.iteration);
        let now = now_millis();
        let expire_before = now.saturating_sub(self.hold_expiry);
        let reserved = self
            .store
            .reserve_budgets(&id, &owners.scopes(), estimate, now, expire_before)
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
        if let Some(owners) = self.owners.get() {
            self.metrics
                .owner_cost_usd
                .get_or_create(&OwnerLabels {
                    user: owners.user.clone().unwrap_or_default(),
                    project: owners.project.clone().unwrap_or_default(),
                })
                .inc_by(actual.cost);
        }
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
