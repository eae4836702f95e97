//! The scheduler: starts agent runs when schedules' ticks fall due.
//!
//! Every instance runs one loop. It sleeps until the earliest tick of the
//! schedules not paused (woken at once when this instance changes a
//! schedule, and at least every [`POLL`], to see other instances'
//! changes), then takes each due schedule in turn and claims its due tick
//! in the store ([`claim_schedule_tick`]): of the instances racing one
//! tick, one wins, and only the winner starts a run.
//!
//! A tick starts its run through the same way in as a person's start
//! ([`start_scheduled`], the start [`submit`](crate::http::service::submit)
//! makes), so chaining, the audit log and every limit apply; the run,
//! and the runs chained after it, also spend against the schedule's own
//! budgets ([`crate::budgets`]). What it did is kept on
//! the schedule ([`TickOutcome`]) and in the audit log (`schedule.fire`):
//! `started` with the agent run; `skipped` when the task already has a
//! running or waiting agent run; `failed` when the start was refused (the
//! task is marked done, a limit); `missed` for a tick past the grace
//! window.
//!
//! Missed ticks: when a schedule is found with several ticks due (the
//! servers were down, or a tick's start took longer than the period), the
//! latest due tick fires once if it is at most [`MISSED_TICK_GRACE`] old,
//! and the older ones are passed over, counted in the outcome's `missed`;
//! a latest tick older than that does not fire either (outcome `missed`).
//! Either way the schedule moves on to its first tick after now.
//!
//! [`claim_schedule_tick`]: agentloop_storage::SchedulesStore::claim_schedule_tick

use std::time::Duration;

use agentloop_storage::model::now_millis;
use agentloop_storage::schedules::{Schedule, TickOutcome, TickOutcomeKind};
use agentloop_types::Message;
use axum::http::StatusCode;
use serde_json::json;

use crate::audit::{Action, record};
use crate::http::service::{start_scheduled, task_owner};
use crate::ids::new_id;
use crate::runner::load_task_context;
use crate::schedule_time::Recurrence;
use crate::state::AppState;

/// How old the latest due tick may be and still fire (see the module
/// docs).
pub const MISSED_TICK_GRACE: Duration = Duration::from_secs(15 * 60);

/// The longest the loop sleeps without looking at the store again.
pub const POLL: Duration = Duration::from_secs(5);

/// How long the loop waits before it tries a tick that failed again.
const RETRY: Duration = Duration::from_secs(1);

/// Due schedules taken in one pass.
const BATCH: u32 = 64;

/// Earlier ticks counted at most in an outcome's `missed`.
const MISSED_COUNTED: u64 = 10_000;

/// The scheduler's loop; returns when the instance shuts down.
pub async fn schedule_loop(state: AppState) {
    loop {
        if state.shutdown.is_cancelled() {
            return;
        }
        let handled = match fire_due(&state).await {
            Ok(handled) => handled,
            Err(error) => {
                tracing::warn!(%error, "schedules could not be read");
                false
            }
        };
        let next = match state.store.next_schedule_tick().await {
            Ok(Some(next)) => {
                let ms = next.saturating_sub(now_millis()).max(0);
                Duration::from_millis(u64::try_from(ms).unwrap_or(0)).min(POLL)
            }
            Ok(None) => POLL,
            Err(error) => {
                tracing::warn!(%error, "schedules could not be read");
                POLL
            }
        };
        // A tick that could not be handled is tried again, not at once.
        let wait = if handled { next } else { next.max(RETRY) };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = state.schedules.notified() => {}
            () = state.shutdown.cancelled() => return,
        }
    }
}

/// Claims and fires every tick due now; whether each was handled.
async fn fire_due(state: &AppState) -> Result<bool, agentloop_storage::StorageError> {
    loop {
        let now = now_millis();
        let due = state.store.due_schedules(now, BATCH).await?;
        let full = due.len() == BATCH as usize;
        let mut failed = false;
        for schedule in due {
            if state.shutdown.is_cancelled() {
                return Ok(true);
            }
            if let Err(error) = handle_due(state, &schedule).await {
                failed = true;
                tracing::warn!(%error, schedule = %schedule.id, "a schedule's tick failed");
            }
        }
        // A full batch may have more behind it; one that failed waits for
        // the next wake rather than reading the same schedules again.
        if !full || failed {
            return Ok(!failed);
        }
    }
}

/// Claims the tick due on `schedule`; the winner fires it.
async fn handle_due(
    state: &AppState,
    schedule: &Schedule,
) -> Result<(), agentloop_storage::StorageError> {
    let now = now_millis();
    let due = schedule.next_fire_at;
    let recurrence = Recurrence::parse(&schedule.cron, &schedule.time_zone);
    let (next, latest) = match &recurrence {
        Ok(r) => (
            r.next_after(now).unwrap_or(i64::MAX),
            r.latest_at_or_before(now)
                .filter(|t| *t >= due)
                .unwrap_or(due),
        ),
        Err(_) => (i64::MAX, due),
    };
    if !state
        .store
        .claim_schedule_tick(&schedule.id, due, next, latest)
        .await?
    {
        return Ok(());
    }
    let missed = match &recurrence {
        Ok(r) => count_between(r, due, latest),
        Err(_) => 0,
    };
    let outcome = match recurrence {
        Err(error) => TickOutcome {
            tick_at: latest,
            at: now,
            kind: TickOutcomeKind::Failed,
            agent_run_id: None,
            reason: Some(error.to_string()),
            missed,
        },
        Ok(_) if now.saturating_sub(latest) > grace_ms() => TickOutcome {
            tick_at: latest,
            at: now,
            kind: TickOutcomeKind::Missed,
            agent_run_id: None,
            reason: Some(format!(
                "the tick was {} s late, past the grace window of {} s",
                now.saturating_sub(latest) / 1000,
                MISSED_TICK_GRACE.as_secs()
            )),
            missed,
        },
        Ok(_) => fire(state, schedule, latest, missed).await,
    };
    state
        .store
        .record_tick_outcome(&schedule.id, &outcome)
        .await?;
    let entry = Action {
        user_id: Some(schedule.created_by.clone()),
        action: "schedule.fire".to_owned(),
        project_id: Some(schedule.project_id.clone()),
        target: Some(schedule.id.clone()),
        address: None,
        detail: json!({
            "tick_at": outcome.tick_at,
            "outcome": outcome.kind.as_str(),
            "agent_run_id": outcome.agent_run_id,
            "missed": outcome.missed,
            "instance": state.config.instance_id,
        }),
    };
    if let Err(error) = record(&*state.store, entry).await {
        tracing::error!(%error, "the audit log could not be written");
    }
    Ok(())
}

fn grace_ms() -> i64 {
    i64::try_from(MISSED_TICK_GRACE.as_millis()).unwrap_or(i64::MAX)
}

/// The ticks from `due` up to before `latest`, counted up to
/// [`MISSED_COUNTED`].
fn count_between(recurrence: &Recurrence, due: i64, latest: i64) -> u64 {
    let mut count = 0;
    let mut tick = due;
    while tick < latest && count < MISSED_COUNTED {
        count += 1;
        match recurrence.next_after(tick) {
            Some(next) => tick = next,
            None => break,
        }
    }
    count
}

/// Starts the schedule's run for tick `tick_at`, as its task's owner.
async fn fire(state: &AppState, schedule: &Schedule, tick_at: i64, missed: u64) -> TickOutcome {
    let outcome = |kind, agent_run_id, reason| TickOutcome {
        tick_at,
        at: now_millis(),
        kind,
        agent_run_id,
        reason,
        missed,
    };
    let failed = |reason: String| outcome(TickOutcomeKind::Failed, None, Some(reason));
    let ctx = match load_task_context(&*state.store, &schedule.task_id).await {
        Ok(ctx) => ctx,
        Err(error) => return failed(format!("the task could not be read: {error}")),
    };
    let skipped = |run: &agentloop_storage::model::AgentRun| {
        outcome(
            TickOutcomeKind::Skipped,
            None,
            Some(format!(
                "agent run {} of the task is still {}",
                run.id,
                run.status.as_str()
            )),
        )
    };
    match state.store.active_agent_run(&ctx.task.id).await {
        Ok(Some(active)) => return skipped(&active),
        Ok(None) => {}
        Err(error) => return failed(format!("the task's runs could not be read: {error}")),
    }
    // A task whose owner is gone starts nothing.
    if let Err(error) = task_owner(state, &ctx).await {
        return failed(error.message().to_owned());
    }
    let message = schedule
        .prompt
        .as_ref()
        .map(|prompt| Message::user_text(new_id(), prompt.clone()));
    let started = start_scheduled(state, &ctx, schedule.agent, message.as_ref(), &schedule.id);
    match started.await {
        Ok(run) => outcome(TickOutcomeKind::Started, Some(run.id), None),
        Err(error) if error.status == StatusCode::CONFLICT => {
            match state.store.active_agent_run(&ctx.task.id).await {
                Ok(Some(active)) => skipped(&active),
                _ => failed(error.message().to_owned()),
            }
        }
        Err(error) => failed(error.message().to_owned()),
    }
}
