//! Taking over runs: on start and every `claim_interval`, an instance looks
//! for agent runs whose lease is free or expired and executes them here
//! (see [`crate::drive`] for how a taken-over run continues; the runtime
//! takes the lease). Active agent runs without a run record are executed
//! (the runtime gives them one), and chains broken by a crash between one
//! run's end and the next one's start are continued.

use agentloop_storage::StorageError;
use agentloop_storage::model::{AgentRunStatus, RunStatus, now_millis};

use crate::drive::start_chained;
use crate::runner::{StartError, StartInput, load_task_context, next_agent};
use crate::state::AppState;

/// Runs looked at per pass.
const BATCH: u32 = 32;
/// Broken chains are looked for on every this many claim passes.
const CHAIN_SCAN_EVERY: u64 = 10;

/// Executes every active agent run that has no run record (from a
/// version that created the two apart, or a crash between them): the
/// runtime gives it one as it hosts it, and it can be claimed from then
/// on.
pub async fn adopt_orphans(state: &AppState) -> Result<(), StorageError> {
    for run in state.store.list_active_agent_runs().await? {
        if matches!(
            state.store.get_run(&run.id).await,
            Err(StorageError::NotFound { .. })
        ) {
            match &state.config.dispatch {
                Some(dispatch) => {
                    if let Err(error) = dispatch.dispatch(&run.id).await {
                        tracing::warn!(agent_run_id = %run.id, %error,
                                       "handing a run to the durable engine failed");
                    }
                }
                None => {
                    tokio::spawn(crate::drive::drive_run(state.clone(), run.id.clone()));
                }
            }
        }
    }
    Ok(())
}

/// Continues chains a crash broke: a task whose workflow is not complete,
/// with no running run, whose last run is an implementation or review that
/// ended on its own (its loop completed, it was not force-completed) more
/// than a lease ago, gets the next run of the chain. A last run that a
/// person ended while it waited, from a process that could not close what
/// it waited on (`agentloop complete-workflow`), gets its calls closed and
/// its terminal event logged.
pub async fn resume_chains(state: &AppState) -> Result<usize, StorageError> {
    let store = &*state.store;
    let settled_before = now_millis() - crate::runner::ttl_ms(state);
    let mut started = 0;
    for project in store.list_projects().await? {
        if crate::runner::project_owner(&project).is_none() {
            continue;
        }
        for task in store.list_tasks(&project.id).await? {
            let runs = store.list_agent_runs(&task.id).await?;
            let Some(last) = runs.last() else { continue };
            let stopped = matches!(
                last.status,
                AgentRunStatus::Completed | AgentRunStatus::Cancelled
            ) && last.end_reason.is_some();
            if stopped {
                close_stranded_wait(state, last).await?;
            }
            if task.workflow_complete || runs.iter().any(|r| r.status.is_active()) {
                continue;
            }
            let Some(next) = next_agent(last.agent_type) else {
                continue;
            };
            // A force-completed run (Mark Done) is `completed` with a
            // reason: its chain was stopped on purpose.
            if last.status != AgentRunStatus::Completed
                || last.end_reason.is_some()
                || last.completed_at.is_none_or(|at| at > settled_before)
            {
                continue;
            }
            let ended_on_its_own = match store.get_run(&last.id).await {
                Ok(record) => {
                    record
                        .result
                        .as_ref()
                        .and_then(|r| r.get("status"))
                        .and_then(|s| s.as_str())
                        == Some("complete")
                }
                Err(StorageError::NotFound { .. }) => false,
                Err(e) => return Err(e),
            };
            if !ended_on_its_own {
                continue;
            }
            // A chain a bound ended stays ended; one that reached a bound
            // as the crash came ends now.
            if task.chain.end.is_some() {
                continue;
            }
            let ctx = load_task_context(store, &task.id).await?;
            if crate::chain_bounds::end_if_reached(state, &ctx.owner, &task, &last.id).await? {
                continue;
            }
            match start_chained(state, &ctx, next, StartInput::default()).await {
                Ok(_) => started += 1,
                Err(StartError::Conflict(_) | StartError::Done) => {}
                Err(StartError::Storage(e)) => return Err(e),
            }
        }
    }
    Ok(started)
}

/// Closes the pending calls of `run`, ended while it waited, if its record
/// still says it waits.
async fn close_stranded_wait(
    state: &AppState,
    run: &agentloop_storage::model::AgentRun,
) -> Result<(), StorageError> {
    match state.store.get_run(&run.id).await {
        Ok(record) if record.status == RunStatus::Suspended => {
            let ctx = load_task_context(&*state.store, &run.task_id).await?;
            crate::waiting::close_pending(state, &ctx, run).await;
            Ok(())
        }
        Ok(_) | Err(StorageError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// One pass: claims what can be claimed and starts executing it.
pub async fn claim_once(state: &AppState) -> Result<usize, StorageError> {
    let now = now_millis();
    let mut started = 0;
    for record in state.store.list_claimable_runs(now, BATCH).await? {
        if state.shutdown.is_cancelled() {
            break;
        }
        if claim(state, record, now).await? {
            started += 1;
        }
    }
    Ok(started)
}

/// On start: takes over at once the runs whose lease is held by a process
/// that is gone (see [`crate::holder`]) or by this instance's own id (a
/// restart under a fixed `--instance-id`), rather than when their leases
/// expire. A lease taken from a gone holder is taken only while it is the
/// lease that holder left: were it renewed, the holder lives.
pub async fn take_over_from_gone_holders(state: &AppState) -> Result<usize, StorageError> {
    let now = now_millis();
    let mut started = 0;
    // Every pending or running run: none's lease expires after the end of
    // time.
    for record in state.store.list_claimable_runs(i64::MAX, u32::MAX).await? {
        let (Some(owner), Some(expires)) = (&record.lease_owner, record.lease_expires_at) else {
            continue;
        };
        if expires <= now {
            continue; // `claim_once` takes it.
        }
        if owner != &state.config.instance_id && !crate::holder::is_gone(owner) {
            continue;
        }
        if claim(state, record, expires).await? {
            started += 1;
        }
    }
    Ok(started)
}

/// Claims `record` if its lease is free at `lease_now` (the time the lease
/// is judged at), and starts executing it; whether it did.
async fn claim(
    state: &AppState,
    record: agentloop_storage::model::RunRecord,
    lease_now: i64,
) -> Result<bool, StorageError> {
    if record.status != RunStatus::Running || state.local_run(&record.id).is_some() {
        return Ok(false);
    }
    // Only an agent run's record is the server's to claim.
    match state.store.get_agent_run(&record.id).await {
        Ok(_) => {}
        Err(StorageError::NotFound { .. }) => return Ok(false),
        Err(e) => return Err(e),
    }
    // A run that waits is `suspended`, not claimable: its agent run moves
    // with its record. A run a person ended while its instance was gone
    // is taken over only to log its end.
    if let Some(dispatch) = &state.config.dispatch {
        // The durable engine executes it (and retries it); handing it
        // again is idempotent.
        if let Err(error) = dispatch.dispatch(&record.id).await {
            tracing::warn!(agent_run_id = %record.id, %error, "handing a run to the durable engine failed");
        }
        return Ok(false);
    }
    let taken = crate::hosting::runtime(state, Vec::new(), None)
        .take_over(&record.id, lease_now)
        .await
        .map_err(|e| match e {
            agentloop_runtime::RuntimeError::Storage(e) => e,
            e => StorageError::Invalid(e.to_string()),
        })?;
    if taken {
        tracing::info!(agent_run_id = %record.id, "took over an agent run whose holder is gone");
        state.metrics.lease_takeovers.inc();
        tokio::spawn(crate::drive::drive_run(state.clone(), record.id.clone()));
        return Ok(true);
    }
    Ok(false)
}

/// Claims runs until the instance shuts down.
pub async fn claim_loop(state: AppState) {
    if let Err(e) = adopt_orphans(&state).await {
        tracing::warn!(error = %e, "adopting orphaned agent runs failed");
    }
    if let Err(e) = take_over_from_gone_holders(&state).await {
        tracing::warn!(error = %e, "taking over the runs of a gone instance failed");
    }
    let mut pass: u64 = 0;
    loop {
        if let Err(e) = claim_once(&state).await {
            tracing::warn!(error = %e, "claiming runs failed; trying again");
        }
        if pass.is_multiple_of(CHAIN_SCAN_EVERY)
            && let Err(e) = resume_chains(&state).await
        {
            tracing::warn!(error = %e, "resuming broken chains failed");
        }
        pass += 1;
        tokio::select! {
            () = state.shutdown.cancelled() => return,
            () = tokio::time::sleep(state.config.claim_interval) => {}
        }
    }
}
