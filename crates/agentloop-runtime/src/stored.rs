//! What a run's record keeps of its end. The chat holds the run's
//! messages; the record refers to them instead of repeating them.

use agentloop_types::{LoopResult, Message, Role, RunPhase, RunState};

/// The result a run's record keeps: status, totals, who stopped it, and
/// of its messages only its last answer (the last assistant message it
/// added, which a reader of the record takes its final text from). The
/// whole history is the chat's messages. `context_len` counts the
/// messages the run started from.
pub(crate) fn record_result(result: &LoopResult, context_len: usize) -> LoopResult {
    let answer: Vec<Message> = result
        .messages
        .iter()
        .skip(context_len)
        .rev()
        .find(|m| m.role == Role::Assistant)
        .cloned()
        .into_iter()
        .collect();
    LoopResult {
        status: result.status.clone(),
        messages: answer.into(),
        tokens: result.tokens,
        stop: result.stop.clone(),
    }
}

/// A finished run's last state, as its record keeps it: phase
/// `finished`, the totals, and no messages (nothing resumes a finished
/// run; its history is the chat's).
pub(crate) fn finished_state(state: &mut RunState, result: &LoopResult) {
    state.phase = RunPhase::Finished;
    state.totals = result.tokens;
    state.messages = Vec::new().into();
}
