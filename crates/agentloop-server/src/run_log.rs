//! Ending an agent run that no loop is left to end — its chat already
//! holds the final answer, or a person ended it while nothing executed it
//! — and a run that failed before its loop ran, through the runtime's one
//! end of a run (terminal event, record, agent run: see
//! [`agentloop_runtime::ChatRuntime::end_hosted`]).

use agentloop_runtime::{HostedRun, RuntimeResult};
use agentloop_storage::StorageResult;
use agentloop_storage::model::{AgentRun, AgentRunStatus};
use agentloop_types::{History, LoopResult, LoopStatus};

use crate::ending::agreeing;
use crate::hosting;
use crate::state::AppState;

/// The chat an agent run's loop runs in, once prepared.
pub async fn run_chat(state: &AppState, run: &AgentRun) -> StorageResult<Option<String>> {
    let Some(conversation_id) = &run.conversation_id else {
        return Ok(None);
    };
    Ok(state.store.get_conversation(conversation_id).await?.chat_id)
}

/// Ends a run whose chat already holds its final answer (the previous
/// attempt stored it but stopped before it ended the run): it ends
/// `complete` with the chat's messages.
pub async fn end_answered(state: &AppState, hosted: HostedRun) -> RuntimeResult<()> {
    let result = complete_from_chat(
        state,
        &hosted.chat_id,
        LoopStatus::Complete {
            return_value: None,
            output: None,
        },
    )
    .await?;
    end(state, hosted, result).await
}

/// Ends a run a person ended (cancelled, or its task marked done) while no
/// instance executed it, unless its log already holds its end: the
/// terminal event is built from its chat, agreeing with how the run ended.
/// A run that failed ends with the error its end reason names.
pub async fn end_stopped(state: &AppState, run: &AgentRun, hosted: HostedRun) -> RuntimeResult<()> {
    let status = match run.status {
        AgentRunStatus::Completed => LoopStatus::Complete {
            return_value: None,
            output: None,
        },
        AgentRunStatus::Cancelled => LoopStatus::Cancelled,
        AgentRunStatus::Failed => {
            let message = run
                .end_reason
                .as_ref()
                .map_or_else(|| "the run failed".to_owned(), |r| r.message.clone());
            return fail(state, hosted, message).await;
        }
        // Not ended: nothing to end.
        AgentRunStatus::Running | AgentRunStatus::Waiting => return Ok(()),
    };
    let result = complete_from_chat(state, &hosted.chat_id, status).await?;
    let result = agreeing(result, run.status, run.end_reason.as_ref());
    end(state, hosted, result).await
}

/// A result with `status` and the chat's messages and totals.
async fn complete_from_chat(
    state: &AppState,
    chat_id: &str,
    status: LoopStatus,
) -> StorageResult<LoopResult> {
    let store = &*state.store;
    let messages: History = store
        .list_messages(chat_id)
        .await?
        .into_iter()
        .map(|m| m.message)
        .collect();
    Ok(LoopResult {
        status,
        messages,
        tokens: store.get_chat(chat_id).await?.totals,
        stop: None,
    })
}

/// Ends `hosted` as failed before its loop did anything (see
/// [`agentloop_runtime::ChatRuntime::fail_hosted`]) and sends its terminal
/// event to the live followers.
pub async fn fail(state: &AppState, hosted: HostedRun, message: String) -> RuntimeResult<()> {
    let run_id = hosted.run_id.clone();
    let event = hosting::runtime(state, Vec::new(), None)
        .fail_hosted(hosted, message)
        .await?;
    if let Some(local) = state.local_run(&run_id) {
        local.send(event);
    }
    Ok(())
}

/// Ends `hosted` with `result` and sends its terminal event to the live
/// followers.
async fn end(state: &AppState, hosted: HostedRun, result: LoopResult) -> RuntimeResult<()> {
    let run_id = hosted.run_id.clone();
    let event = hosting::runtime(state, Vec::new(), None)
        .end_hosted(hosted, result)
        .await?;
    if let Some(local) = state.local_run(&run_id) {
        local.send(event);
    }
    Ok(())
}
