//! Agent runs waiting for a person: what they wait for, the decisions
//! people send (recorded one by one, so a restart keeps them), resuming a
//! run once every pending call is decided, and closing the pending calls of
//! a run cancelled while it waits.
//!
//! A run whose loop suspends is switched `running` → `waiting`: its run
//! record is stored `suspended` (not claimable), its lease is released and
//! nothing executes it. The last decision switches it back to `running`
//! and starts executing it again as the same agent run; the executor then
//! resumes the chat's suspended run with the recorded decisions, and its
//! events continue the run's log.

use std::sync::Arc;

use agentloop_runtime::{ChatRuntime, RuntimeError};
use agentloop_storage::StorageResult;
use agentloop_storage::model::{AgentRun, AgentRunDecision, AgentRunStatus, RunStatus, now_millis};
use agentloop_types::{Decision, EventKind, FinishedEvent, LoopEvent, PendingCall, Wait};
use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::runner::TaskContext;
use crate::state::AppState;

/// The chat an agent run's loop runs in, once prepared.
pub async fn run_chat(state: &AppState, run: &AgentRun) -> StorageResult<Option<String>> {
    let Some(conversation_id) = &run.conversation_id else {
        return Ok(None);
    };
    Ok(state.store.get_conversation(conversation_id).await?.chat_id)
}

/// What the chat's suspended run waits for (empty when it waits for
/// nothing).
pub async fn pending_calls(
    state: &AppState,
    chat_id: &str,
) -> Result<Vec<PendingCall>, RuntimeError> {
    ChatRuntime::new(state.store.clone(), state.config.provider.clone())
        .pending(chat_id)
        .await
}

/// What an agent run waits for, with the decisions already recorded;
/// empty unless it is waiting.
pub async fn pending_of(
    state: &AppState,
    run: &AgentRun,
) -> Result<Vec<(PendingCall, Option<AgentRunDecision>)>, ApiError> {
    if run.status != AgentRunStatus::Waiting {
        return Ok(Vec::new());
    }
    let Some(chat_id) = run_chat(state, run).await? else {
        return Ok(Vec::new());
    };
    let pending = pending_calls(state, &chat_id).await.map_err(internal)?;
    let mut decisions = state.store.list_agent_run_decisions(&run.id).await?;
    Ok(pending
        .into_iter()
        .map(|item| {
            let decided = decisions
                .iter()
                .position(|d| d.call_id == item.call.id)
                .map(|i| decisions.swap_remove(i));
            (item, decided)
        })
        .collect())
}

fn internal(e: RuntimeError) -> ApiError {
    match e {
        RuntimeError::Storage(e) => e.into(),
        other => ApiError::new(
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            other.to_string(),
        ),
    }
}

/// A pending call as the API shows it: `call_id`, `tool`, `arguments`,
/// `kind` (`approval` or `question`), `reason` or `question`, `path` (the
/// tool-call ids leading to the nested run that made it; empty for the
/// run itself) and `decision` (the one recorded, or null).
pub fn pending_json(item: &PendingCall, decided: Option<&AgentRunDecision>) -> Value {
    let mut value = json!({
        "call_id": item.call.id,
        "tool": item.call.name,
        "arguments": item.call.input,
        "path": item.path.0,
        "decision": decided.map(|d| decision_json(&d.decision)),
    });
    match &item.wait {
        Wait::Approval { reason } => {
            value["kind"] = json!("approval");
            value["reason"] = json!(reason);
        }
        Wait::Question { question } => {
            value["kind"] = json!("question");
            value["question"] = json!(question);
        }
    }
    value
}

/// A decision as the API shows it (the shape it is sent in, without
/// `call_id`).
pub fn decision_json(decision: &Decision) -> Value {
    match decision {
        Decision::Approve { arguments: None } => json!({ "decision": "approve" }),
        Decision::Approve {
            arguments: Some(arguments),
        } => json!({ "decision": "approve", "arguments": arguments }),
        Decision::ApproveAlways => json!({ "decision": "approve_always" }),
        Decision::Reject { reason } => json!({ "decision": "reject", "reason": reason }),
        Decision::Answer { text } => json!({ "decision": "answer", "text": text }),
    }
}

/// The reason a model reads when a person rejects a call without saying
/// why.
const DEFAULT_REJECTION: &str = "the user rejected this call";

/// Parses `{"decisions": [{"call_id", "decision", ...}, ...]}`: at least
/// one decision, each call once, no unknown fields.
pub fn parse_decisions(body: &Map<String, Value>) -> Result<Vec<(String, Decision)>, ApiError> {
    if let Some(key) = body.keys().find(|k| k.as_str() != "decisions") {
        return Err(ApiError::bad_request(format!("unknown field {key:?}")));
    }
    let items = match body.get("decisions") {
        Some(Value::Array(items)) if !items.is_empty() => items,
        Some(Value::Array(_)) => {
            return Err(ApiError::bad_request("decisions must not be empty"));
        }
        _ => return Err(ApiError::bad_request("decisions must be an array")),
    };
    let mut parsed: Vec<(String, Decision)> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let (call_id, decision) =
            parse_one(item).map_err(|m| ApiError::bad_request(format!("decisions[{i}]: {m}")))?;
        if parsed.iter().any(|(id, _)| *id == call_id) {
            return Err(ApiError::bad_request(format!(
                "decisions[{i}]: call {call_id} is decided twice"
            )));
        }
        parsed.push((call_id, decision));
    }
    Ok(parsed)
}

fn parse_one(item: &Value) -> Result<(String, Decision), String> {
    let Value::Object(item) = item else {
        return Err("a decision must be an object".to_owned());
    };
    let call_id = match item.get("call_id") {
        Some(Value::String(id)) if !id.is_empty() => id.clone(),
        _ => return Err("call_id must be a non-empty string".to_owned()),
    };
    let kind = item
        .get("decision")
        .and_then(Value::as_str)
        .ok_or("decision must be one of approve, approve_always, reject, answer")?;
    let allowed: &[&str] = match kind {
        "approve" => &["arguments"],
        "approve_always" => &[],
        "reject" => &["reason"],
        "answer" => &["text"],
        other => {
            return Err(format!(
                "unknown decision {other:?} (approve, approve_always, reject or answer)"
            ));
        }
    };
    if let Some(key) = item
        .keys()
        .find(|k| !matches!(k.as_str(), "call_id" | "decision") && !allowed.contains(&k.as_str()))
    {
        return Err(format!("{key} does not go with decision {kind}"));
    }
    let decision = match kind {
        "approve" => Decision::Approve {
            arguments: match item.get("arguments") {
                None | Some(Value::Null) => None,
                Some(args @ Value::Object(_)) => Some(args.clone()),
                Some(_) => return Err("arguments must be a JSON object".to_owned()),
            },
        },
        "approve_always" => Decision::ApproveAlways,
        "reject" => Decision::Reject {
            reason: match item.get("reason") {
                None | Some(Value::Null) => DEFAULT_REJECTION.to_owned(),
                Some(Value::String(reason)) if !reason.trim().is_empty() => reason.clone(),
                Some(Value::String(_)) => DEFAULT_REJECTION.to_owned(),
                Some(_) => return Err("reason must be a string".to_owned()),
            },
        },
        _ => Decision::Answer {
            text: item
                .get("text")
                .and_then(Value::as_str)
                .ok_or("text must be a string")?
                .to_owned(),
        },
    };
    Ok((call_id, decision))
}

/// Resumes a waiting run whose pending calls are all decided: it runs
/// again as the same agent run. `false` when it was no longer waiting (a
/// concurrent decision resumed it, or it was cancelled).
pub async fn resume(state: &AppState, ctx: &TaskContext, run: &AgentRun) -> StorageResult<bool> {
    let store = &*state.store;
    // The record is made claimable before the run is switched, so a crash
    // in between leaves a run that some instance continues; a record left
    // running beside a run that is not is corrected by the claim loop.
    let mut record = store.get_run(&run.id).await?;
    record.status = RunStatus::Running;
    record.updated_at = now_millis();
    store.update_run(&record).await?;
    if !store
        .switch_agent_run(&run.id, AgentRunStatus::Waiting, AgentRunStatus::Running)
        .await?
    {
        return Ok(false);
    }
    state.notify_run_status(&ctx.owner, run, AgentRunStatus::Running);
    let lease = crate::sink::Lease {
        store: state.store.clone(),
        run_id: run.id.clone(),
        owner: state.config.instance_id.clone(),
        ttl_ms: crate::runner::ttl_ms(state),
    };
    if lease.renew().await.is_ok() {
        tokio::spawn(crate::drive::drive_boxed(state.clone(), run.id.clone()));
    }
    Ok(true)
}

/// Records `decisions` for a waiting run (each call once; a call decided
/// before is a 409) and resumes it when every pending call is decided.
/// Returns whether it resumed.
pub async fn decide(
    state: &AppState,
    ctx: &TaskContext,
    run: &AgentRun,
    decisions: Vec<(String, Decision)>,
) -> Result<bool, ApiError> {
    let not_waiting = |run: &AgentRun| ApiError {
        status: axum::http::StatusCode::CONFLICT,
        body: json!({
            "error": format!("the agent run is not waiting for a decision (it is {})",
                             run.status.as_str()),
            "agentRun": crate::routes::agent_run_json(run),
        }),
    };
    if run.status != AgentRunStatus::Waiting {
        return Err(not_waiting(run));
    }
    let pending = pending_of(state, run).await?;
    if pending.is_empty() {
        return Err(not_waiting(run));
    }
    for (call_id, decision) in &decisions {
        let Some((item, decided)) = pending.iter().find(|(p, _)| &p.call.id == call_id) else {
            return Err(ApiError::bad_request(format!(
                "the agent run does not wait on call {call_id}"
            )));
        };
        agentloop_types::approval::check_fit(item, decision)
            .map_err(|reason| ApiError::bad_request(format!("call {call_id}: {reason}")))?;
        if decided.is_some() {
            return Err(already_decided(call_id));
        }
    }
    let now = now_millis();
    for (call_id, decision) in decisions {
        let recorded = AgentRunDecision {
            call_id: call_id.clone(),
            decision,
            decided_at: now,
        };
        if !state
            .store
            .add_agent_run_decision(&run.id, &recorded)
            .await?
        {
            return Err(already_decided(&call_id));
        }
    }
    let decided = state.store.list_agent_run_decisions(&run.id).await?;
    let complete = pending
        .iter()
        .all(|(item, _)| decided.iter().any(|d| d.call_id == item.call.id));
    if !complete {
        return Ok(false);
    }
    Ok(resume(state, ctx, run).await?)
}

fn already_decided(call_id: &str) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::CONFLICT,
        format!("call {call_id} is already decided"),
    )
}

/// Closes the pending calls of a run that ended (cancelled, or its task
/// marked done) while its chat waits for a person: each is answered as
/// cancelled, the chat's run is stored `cancelled`, and the events go to
/// the agent run's log, ending with a terminal event that says how the
/// run ended (`cancelled`, or `complete` stopped by `workflow_complete`),
/// as its record does. Nothing happens when the chat waits for nothing
/// (or another closer got there first).
pub async fn close_pending(state: &AppState, ctx: &TaskContext, run: &AgentRun) {
    if let Err(e) = try_close_pending(state, ctx, run).await {
        tracing::warn!(agent_run_id = %run.id, error = %e,
                       "the pending calls of a stopped agent run could not be closed");
    }
}

async fn try_close_pending(
    state: &AppState,
    ctx: &TaskContext,
    run: &AgentRun,
) -> Result<(), RuntimeError> {
    let Some(chat_id) = run_chat(state, run).await? else {
        return Ok(());
    };
    if pending_calls(state, &chat_id).await?.is_empty() {
        return Ok(());
    }
    let tools = crate::drive::tools(
        state,
        ctx,
        run.agent_type,
        Arc::new(std::sync::atomic::AtomicBool::new(false)),
    )?;
    let runtime = ChatRuntime::new(state.store.clone(), state.config.provider.clone())
        .with_tools(tools)
        .with_lease(
            state.config.instance_id.clone(),
            crate::runner::ttl_ms(state),
        );
    let (last, _) = crate::drive::scan_log(&*state.store, &run.id).await?;
    let mut events: Vec<LoopEvent> = Vec::new();
    let closed = runtime
        .cancel_suspended_with(&chat_id, &mut |event: &LoopEvent| {
            events.push(event.clone());
        })
        .await;
    let outcome = match closed {
        Ok(outcome) => outcome,
        Err(RuntimeError::NotSuspended { .. } | RuntimeError::RunInProgress { .. }) => {
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    // The run ended before its calls were closed: the terminal event says
    // how (cancelled, or completed by Mark Done), as the record does.
    let settled = crate::ending::settle(&*state.store, &run.id, outcome.result).await?;
    for (seq, event) in (last.map_or(0, |s| s + 1)..).zip(events.iter_mut()) {
        event.seq = seq;
        if let EventKind::Finished(FinishedEvent { result }) = &mut event.kind {
            if event.path.is_root() {
                *result = settled.result.clone();
            }
        }
    }
    state.store.append_events(&run.id, &events).await?;
    let mut record = state.store.get_run(&run.id).await?;
    record.status = crate::runner::record_status(settled.status);
    record.result = serde_json::to_value(&settled.result).ok();
    record.updated_at = now_millis();
    state.store.update_run(&record).await?;
    Ok(())
}

/// Marks a run whose loop just suspended (or that found its chat still
/// waiting) as waiting: the run record is stored `suspended` and the lease
/// released by the caller. Returns the run's status afterwards: `waiting`,
/// or what a person made of it meanwhile (then its pending calls are
/// closed).
pub async fn start_waiting(
    state: &AppState,
    ctx: &TaskContext,
    run: &AgentRun,
    pending: &[PendingCall],
    fresh: bool,
    result: Option<Value>,
) -> StorageResult<AgentRunStatus> {
    let store = &*state.store;
    if fresh {
        // Decisions of an earlier wait were used; a model may reuse call
        // ids, so none may count for this one.
        store.clear_agent_run_decisions(&run.id).await?;
    }
    let switched = store
        .switch_agent_run(&run.id, AgentRunStatus::Running, AgentRunStatus::Waiting)
        .await?;
    let status = if switched {
        AgentRunStatus::Waiting
    } else {
        store.get_agent_run(&run.id).await?.status
    };
    let mut record = store.get_run(&run.id).await?;
    record.status = crate::runner::record_status(status);
    if result.is_some() {
        record.result = result;
    }
    record.updated_at = now_millis();
    store.update_run(&record).await?;
    if switched {
        tracing::info!(agent_run_id = %run.id, pending = pending.len(),
                       "agent run waits for a person");
        state.notify_run_status(&ctx.owner, run, status);
        let decided = store.list_agent_run_decisions(&run.id).await?;
        state.notify(
            &ctx.owner,
            json!({
                "type": "agent-run-waiting",
                "taskId": run.task_id,
                "agentRunId": run.id,
                "agentType": run.agent_type,
                "pending": pending.iter().map(|item| {
                    pending_json(item, decided.iter().find(|d| d.call_id == item.call.id))
                }).collect::<Vec<_>>(),
            }),
        );
    } else if !status.is_active() {
        close_pending(state, ctx, run).await;
    }
    Ok(status)
}
