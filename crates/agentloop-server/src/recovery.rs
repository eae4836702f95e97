//! Taking over runs: on start and every `claim_interval`, an instance looks
//! for agent runs whose lease is free or expired and executes them here
//! (see [`crate::drive`] for how a taken-over run continues). Running agent
//! runs without a run record (a crash right after creation) get one.

use agentloop_storage::StorageError;
use agentloop_storage::model::{AgentRunStatus, RunStatus, now_millis};

use crate::runner::{load_task_context, prepare};
use crate::state::AppState;

/// Runs looked at per pass.
const BATCH: u32 = 32;

/// Gives every running agent run a run record, so it can be claimed.
pub async fn adopt_orphans(state: &AppState) -> Result<(), StorageError> {
    for run in state.store.list_active_agent_runs().await? {
        if matches!(
            state.store.get_run(&run.id).await,
            Err(StorageError::NotFound { .. })
        ) {
            let ctx = load_task_context(&*state.store, &run.task_id).await?;
            prepare(&*state.store, &state.config, &ctx, run).await?;
        }
    }
    Ok(())
}

/// One pass: claims what can be claimed and starts executing it.
pub async fn claim_once(state: &AppState) -> Result<usize, StorageError> {
    let now = now_millis();
    let mut started = 0;
    for record in state.store.list_claimable_runs(now, BATCH).await? {
        if state.shutdown.is_cancelled() {
            break;
        }
        if record.status != RunStatus::Running || state.local_run(&record.id).is_some() {
            continue;
        }
        let agent_run = match state.store.get_agent_run(&record.id).await {
            Ok(run) => run,
            Err(StorageError::NotFound { .. }) => continue,
            Err(e) => return Err(e),
        };
        if agent_run.status != AgentRunStatus::Running {
            let mut record = record;
            record.status = crate::runner::record_status(agent_run.status);
            record.updated_at = now;
            state.store.update_run(&record).await?;
            continue;
        }
        let ttl = crate::runner::ttl_ms(state);
        if state
            .store
            .acquire_lease(&record.id, &state.config.instance_id, now, now + ttl)
            .await?
        {
            tokio::spawn(crate::drive::drive_run(state.clone(), record.id.clone()));
            started += 1;
        }
    }
    Ok(started)
}

/// Claims runs until the instance shuts down.
pub async fn claim_loop(state: AppState) {
    if let Err(e) = adopt_orphans(&state).await {
        eprintln!("agentloop-server: adopting orphaned agent runs: {e}");
    }
    loop {
        if let Err(e) = claim_once(&state).await {
            eprintln!("agentloop-server: claiming runs: {e}");
        }
        tokio::select! {
            () = state.shutdown.cancelled() => return,
            () = tokio::time::sleep(state.config.claim_interval) => {}
        }
    }
}
