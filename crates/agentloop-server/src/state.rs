//! Shared state of one server instance.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use agentloop_storage::Store;
use agentloop_storage::model::{AgentRun, AgentRunStatus, ChainEnd, Project};
use agentloop_types::CancellationToken;
use serde_json::{Value, json};

use crate::config::ServerConfig;
use crate::follow::AppendWakers;
use crate::heartbeat::{Heartbeat, Pace};
pub use crate::local_run::{Halt, LocalRun};
use crate::metrics::{Metrics, Scraped};
use crate::notices::Notices;
use crate::rate_limit::ClientLimiter;
use crate::readiness::Readiness;
use crate::webhooks::registry::Registration;

/// State shared by handlers and background tasks.
#[derive(Clone)]
pub struct AppState {
    /// The store.
    pub store: Arc<dyn Store>,
    /// The configuration.
    pub config: Arc<ServerConfig>,
    /// Runs executing here, by agent run id.
    pub local: Arc<Mutex<HashMap<String, Arc<LocalRun>>>>,
    /// Notifications for WebSocket clients and webhooks.
    pub notices: Arc<Notices>,
    /// Cancelled when the instance shuts down: stop claiming, hand runs back.
    pub shutdown: CancellationToken,
    /// The instance's metrics.
    pub metrics: Arc<Metrics>,
    /// Wakes followers of runs executing elsewhere when their logs grow.
    pub appends: Arc<AppendWakers>,
    /// Renews the leases of the runs executing here, all at once.
    pub heartbeat: Arc<Heartbeat>,
    /// Each client's request rate; `None` when the configuration sets no
    /// limit.
    pub rates: Option<Arc<ClientLimiter>>,
    /// What the instance waits for before it serves (nothing unless its
    /// host says so).
    pub readiness: Arc<Readiness>,
    /// Notified when this instance revokes a token, so the streams and
    /// WebSockets it opened end at once (see
    /// [`crate::users::until_invalid`]).
    pub revocations: Arc<tokio::sync::Notify>,
    /// Notified when this instance changes a schedule, so its scheduler
    /// reads the next tick again at once (see [`crate::scheduler`]).
    pub schedules: Arc<tokio::sync::Notify>,
}

impl AppState {
    /// State around a store and a configuration.
    pub fn new(store: Arc<dyn Store>, config: ServerConfig) -> Self {
        let rates = config
            .rate_limit
            .map(|limit| Arc::new(ClientLimiter::new(limit)));
        Self {
            store,
            config: Arc::new(config),
            local: Arc::new(Mutex::new(HashMap::new())),
            notices: Arc::default(),
            shutdown: CancellationToken::new(),
            metrics: Arc::new(Metrics::default()),
            appends: Arc::new(AppendWakers::default()),
            heartbeat: Arc::new(Heartbeat::default()),
            rates,
            readiness: Arc::default(),
            revocations: Arc::default(),
            schedules: Arc::default(),
        }
    }

    /// Registers a run executing here; `None` if it already is, and then
    /// that execution executes it once more when it ends: a decision can
    /// resume a run in the moment between its suspension and the end of
    /// the execution that suspended it, and must not wait for the lease
    /// to expire.
    pub fn register_local(&self, run_id: &str) -> Option<Arc<LocalRun>> {
        let mut local = self.local.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(executing) = local.get(run_id) {
            executing.execute_again();
            return None;
        }
        let run = Arc::new(LocalRun::new(self.config.live_capacity));
        local.insert(run_id.to_owned(), run.clone());
        Some(run)
    }

    /// Forgets a run whose execution here ended; or, when it was asked to
    /// execute again meanwhile and `again` allows it, registers and
    /// returns its next execution.
    pub fn unregister_local(&self, run_id: &str, again: bool) -> Option<Arc<LocalRun>> {
        let mut local = self.local.lock().unwrap_or_else(PoisonError::into_inner);
        match local.get(run_id) {
            Some(ended) if ended.take_again() && again => {
                let next = Arc::new(LocalRun::new(self.config.live_capacity));
                local.insert(run_id.to_owned(), next.clone());
                Some(next)
            }
            _ => {
                local.remove(run_id);
                None
            }
        }
    }

    /// The run executing here with that id.
    pub fn local_run(&self, run_id: &str) -> Option<Arc<LocalRun>> {
        self.local
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(run_id)
            .cloned()
    }

    /// Keeps the lease of `local`, executing here, renewed until the
    /// guard is dropped: a lost lease stops it, a run no longer `running`
    /// in the store is cancelled (see [`Halt`]).
    pub fn watch_lease(&self, run_id: &str, local: Arc<LocalRun>) -> agentloop_runtime::Watched {
        self.heartbeat.watch(
            || {
                // The runtime's heartbeat writes the leases, as the owner
                // this instance's runtimes take them under.
                let runtime = agentloop_runtime::ChatRuntime::new(
                    self.store.clone(),
                    self.config.provider.clone(),
                )
                .with_lease(self.config.instance_id.clone(), self.lease_ttl_ms())
                .heartbeat();
                let pace = Pace {
                    interval: self.config.heartbeat,
                    shutdown: self.shutdown.clone(),
                    store: self.store.clone(),
                    local: Arc::downgrade(&self.local),
                };
                (runtime, pace)
            },
            run_id,
            local,
        )
    }

    /// The lease length in ms.
    pub fn lease_ttl_ms(&self) -> i64 {
        i64::try_from(self.config.lease_ttl.as_millis()).unwrap_or(i64::MAX)
    }

    /// How many runs execute here.
    pub fn local_count(&self) -> usize {
        self.local
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Sends a notification to a user's WebSocket clients.
    pub fn notify(&self, user_id: &str, message: Value) {
        self.notices.send(user_id, &message);
    }

    /// Sends a notification about project `project_id` to the WebSocket
    /// clients of its owner and of the members it invited.
    pub fn notify_project(&self, owner: &str, project_id: &str, message: Value) {
        self.notices.send(owner, &message);
        self.notices.send_to_members(project_id, &message);
    }

    /// Tells the owner's WebSocket clients that an agent run of `project`
    /// now has `status`, and the webhook dispatcher when the project has
    /// webhooks.
    pub fn notify_run_status(
        &self,
        owner: &str,
        project: &Project,
        run: &AgentRun,
        status: AgentRunStatus,
    ) {
        tracing::info!(
            agent_run_id = %run.id,
            task_id = %run.task_id,
            agent = run.agent_type.as_str(),
            status = status.as_str(),
            "agent run status"
        );
        let message = json!({ "type": "agent-run-status", "taskId": run.task_id,
                              "agentRunId": run.id, "agentType": run.agent_type,
                              "status": status });
        self.notices.send(owner, &message);
        self.notices.send_to_members(&project.id, &message);
        if Registration::of(&project.settings).is_some() {
            self.notices.to_webhooks(message);
        }
    }

    /// Tells the owner (their page, the project's webhooks) that a bound
    /// ended the chain of task `task_id` (see [`crate::chain_bounds`]).
    pub fn notify_chain_ended(
        &self,
        owner: &str,
        project: &Project,
        task_id: &str,
        end: &ChainEnd,
    ) {
        tracing::info!(
            task_id = %task_id,
            agent_run_id = %end.agent_run_id,
            reason = %end.reason,
            runs = end.runs,
            tokens = end.tokens,
            "chain ended at a bound"
        );
        let message = json!({ "type": "chain-ended", "taskId": task_id,
                              "agentRunId": end.agent_run_id, "reason": end.reason,
                              "message": end.message, "runs": end.runs,
                              "tokens": end.tokens,
                              "cost": end.cost_micro_usd as f64 / 1_000_000.0 });
        self.notices.send(owner, &message);
        self.notices.send_to_members(&project.id, &message);
        if Registration::of(&project.settings).is_some() {
            self.notices.to_webhooks(message);
        }
    }
}

impl From<AppState> for Scraped {
    fn from(state: AppState) -> Self {
        Scraped::new(state.metrics.clone(), move || state.local_count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_engine::scripted::ScriptedProvider;
    use agentloop_storage::MemoryStore;

    #[test]
    fn a_run_asked_to_execute_while_it_ends_here_executes_once_more() {
        let state = AppState::new(
            Arc::new(MemoryStore::new()),
            ServerConfig::new(ScriptedProvider::new([]), "m"),
        );
        let first = state.register_local("r").unwrap();
        assert!(state.register_local("r").is_none());
        let next = state.unregister_local("r", true).unwrap();
        assert!(!Arc::ptr_eq(&first, &next));
        assert!(Arc::ptr_eq(&state.local_run("r").unwrap(), &next));
        assert!(state.unregister_local("r", true).is_none());
        assert!(state.local_run("r").is_none());
        // A durable engine's step executes once, whatever was asked.
        assert!(state.register_local("r").is_some());
        assert!(state.register_local("r").is_none());
        assert!(state.unregister_local("r", false).is_none());
        assert!(state.local_run("r").is_none());
    }
}
