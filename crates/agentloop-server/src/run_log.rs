//! An agent run's event log and record at its end: where the log stands
//! (last seq, the terminal event if logged), appending a terminal event
//! built from the run's chat when the loop could not, and writing the
//! record's final status and result.

use agentloop_storage::model::{AgentRun, AgentRunStatus, now_millis};
use agentloop_storage::{StorageResult, Store};
use agentloop_types::{EventKind, FinishedEvent, LoopEvent, LoopResult, LoopStatus};

use crate::ending::{Settled, agreeing, settle};
use crate::runner::record_status;
use crate::state::AppState;

/// The chat an agent run's loop runs in, once prepared.
pub async fn run_chat(state: &AppState, run: &AgentRun) -> StorageResult<Option<String>> {
    let Some(conversation_id) = &run.conversation_id else {
        return Ok(None);
    };
    Ok(state.store.get_conversation(conversation_id).await?.chat_id)
}

/// Sets the run record's final status and result.
pub async fn close_record(
    store: &dyn Store,
    run_id: &str,
    status: AgentRunStatus,
    result: Option<serde_json::Value>,
) -> StorageResult<()> {
    let mut record = store.get_run(run_id).await?;
    record.status = record_status(status);
    if result.is_some() {
        record.result = result;
    }
    record.updated_at = now_millis();
    store.update_run(&record).await
}

/// Ends a run whose chat already holds its final answer (the previous
/// attempt stored it but stopped before logging the end): the run is
/// settled and the terminal event, with the chat's messages, appended.
pub async fn log_answered(state: &AppState, run_id: &str, chat_id: &str) -> StorageResult<Settled> {
    let store = &*state.store;
    let result = LoopResult {
        status: LoopStatus::Complete {
            return_value: None,
            output: None,
        },
        messages: chat_messages(store, chat_id).await?,
        tokens: store.get_chat(chat_id).await?.totals,
        stop: None,
    };
    let settled = settle(store, run_id, result).await?;
    log_terminal(state, run_id, &settled.result).await?;
    Ok(settled)
}

/// The messages of a chat, in order.
async fn chat_messages(
    store: &dyn Store,
    chat_id: &str,
) -> StorageResult<agentloop_types::History> {
    Ok(store
        .list_messages(chat_id)
        .await?
        .into_iter()
        .map(|m| m.message)
        .collect())
}

/// Appends `result` as the run's terminal event unless its log holds one.
async fn log_terminal(state: &AppState, run_id: &str, result: &LoopResult) -> StorageResult<()> {
    let store = &*state.store;
    let (last, logged) = scan_log(store, run_id).await?;
    if logged.is_none() {
        let event = LoopEvent {
            seq: last.map_or(0, |s| s + 1),
            path: Default::default(),
            kind: EventKind::Finished(FinishedEvent {
                result: result.clone(),
            }),
        };
        store
            .append_events(run_id, std::slice::from_ref(&event))
            .await?;
        if let Some(local) = state.local_run(run_id) {
            local.send(event);
        }
    }
    Ok(())
}

/// Logs the end of a run that ended while no instance executed it: a
/// person ended it (cancelled, or its task marked done) after the instance
/// that executed it crashed, or that instance ended it and stopped before
/// logging the end. Unless its log holds a terminal event, one is built
/// from its chat, agreeing with how the run ended. Returns the result
/// logged (none for a failed run, whose error is not known here).
pub async fn log_stopped(state: &AppState, run: &AgentRun) -> StorageResult<Option<LoopResult>> {
    let store = &*state.store;
    if let (_, Some(logged)) = scan_log(store, &run.id).await? {
        return Ok(Some(*logged));
    }
    if !matches!(
        run.status,
        AgentRunStatus::Completed | AgentRunStatus::Cancelled
    ) {
        return Ok(None);
    }
    let Some(chat_id) = run_chat(state, run).await? else {
        return Ok(None);
    };
    let status = if run.status == AgentRunStatus::Completed {
        LoopStatus::Complete {
            return_value: None,
            output: None,
        }
    } else {
        LoopStatus::Cancelled
    };
    let result = agreeing(
        LoopResult {
            status,
            messages: chat_messages(store, &chat_id).await?,
            tokens: store.get_chat(&chat_id).await?.totals,
            stop: None,
        },
        run.status,
        run.end_reason.as_ref(),
    );
    log_terminal(state, &run.id, &result).await?;
    Ok(Some(result))
}

/// The highest stored event seq and, if the log already holds it, the
/// run's final result (a suspended result is not final: the run goes on
/// after its decisions, and its log with it).
pub async fn scan_log(
    store: &dyn Store,
    run_id: &str,
) -> StorageResult<(Option<u64>, Option<Box<LoopResult>>)> {
    const PAGE: u32 = 1000;
    let mut after = None;
    let mut result = None;
    loop {
        let events = store.list_events(run_id, after, PAGE).await?;
        for event in &events {
            if let EventKind::Finished(FinishedEvent { result: r }) = &event.kind
                && event.path.is_root()
            {
                result = (!matches!(r.status, LoopStatus::Suspended { .. }))
                    .then(|| Box::new(r.clone()));
            }
        }
        let len = events.len();
        if let Some(last) = events.last() {
            after = Some(last.seq);
        }
        if len < PAGE as usize {
            return Ok((after, result));
        }
    }
}
