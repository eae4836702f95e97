//! The progress an MCP client hears: one short line per moment that
//! matters (a model turn, a tool starting or ending, a wait, the end), not
//! every streamed chunk.

use agentloop_types::{
    AgentCompletionEvent, AgentErrorEvent, AgentObserveEvent, AgentReasonEvent,
    AgentRequestInputEvent, AgentStartEvent, AgentToolCompleteEvent, AgentToolStartEvent,
    AgentTurnStartEvent, ContextCompactedEvent, EventKind, FinishedEvent, LoopEvent,
    MessageCreatedEvent, PendingToolResultEvent, StreamingChunkEvent, StreamingEndEvent,
    StreamingStartEvent, TokensConsumedEvent, ToolBlockUpdateEvent, ToolEndEvent, ToolStartEvent,
};

/// The progress message for `event`, or `None` when it is not worth one.
/// Nested runs (a minion's, a skill's) are marked with their depth.
pub fn progress_message(event: &LoopEvent) -> Option<String> {
    let message = match &event.kind {
        EventKind::StreamingStart(StreamingStartEvent {
            iteration, agent, ..
        }) => match agent {
            Some(agent) => format!("model turn {iteration} ({agent})"),
            None => format!("model turn {iteration}"),
        },
        EventKind::Handoff(handoff) => format!("{} hands off to {}", handoff.from, handoff.to),
        EventKind::ToolStart(ToolStartEvent { name, .. }) => format!("tool {name} started"),
        EventKind::ToolEnd(ToolEndEvent { name, is_error, .. }) => {
            if *is_error {
                format!("tool {name} failed")
            } else {
                format!("tool {name} finished")
            }
        }
        EventKind::ApprovalRequested(approval) => {
            format!("tool {} waits for approval", approval.tool)
        }
        EventKind::ContextCompacted(ContextCompactedEvent { .. }) => {
            "earlier turns compacted".to_owned()
        }
        EventKind::ContextEdited(_) => "context edited".to_owned(),
        EventKind::AgentTurnStart(AgentTurnStartEvent { step }) => format!("step {step}"),
        EventKind::Finished(FinishedEvent { result }) => {
            format!("finished: {}", result.status.name())
        }
        EventKind::FirstChunk
        | EventKind::StreamingChunk(StreamingChunkEvent { .. })
        | EventKind::StreamingEnd(StreamingEndEvent { .. })
        | EventKind::MessageCreated(MessageCreatedEvent { .. })
        | EventKind::TokensConsumed(TokensConsumedEvent { .. })
        | EventKind::PendingToolResult(PendingToolResultEvent { .. })
        | EventKind::ToolBlockUpdate(ToolBlockUpdateEvent { .. })
        | EventKind::AgentStart(AgentStartEvent { .. })
        | EventKind::AgentReason(AgentReasonEvent { .. })
        | EventKind::AgentRequestInput(AgentRequestInputEvent { .. })
        | EventKind::AgentToolStart(AgentToolStartEvent { .. })
        | EventKind::AgentToolComplete(AgentToolCompleteEvent { .. })
        | EventKind::AgentObserve(AgentObserveEvent { .. })
        | EventKind::AgentCompletion(AgentCompletionEvent { .. })
        | EventKind::AgentError(AgentErrorEvent { .. })
        | EventKind::Hook(_) => return None,
    };
    let depth = event.path.depth();
    Some(if depth == 0 {
        message
    } else {
        format!("[depth {depth}] {message}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_types::RunPath;

    fn event(kind: EventKind) -> LoopEvent {
        LoopEvent {
            seq: 0,
            path: RunPath::default(),
            kind,
        }
    }

    #[test]
    fn tool_moments_are_named() {
        let start = event(EventKind::ToolStart(ToolStartEvent {
            tool_use_id: "t1".into(),
            name: "fs_read".into(),
            input: serde_json::json!({}).into(),
            is_skill: false,
            depth: 0,
        }));
        assert_eq!(
            progress_message(&start).as_deref(),
            Some("tool fs_read started")
        );
        let turn = event(EventKind::StreamingStart(StreamingStartEvent {
            iteration: 1,
            agent: None,
            request: None,
        }));
        assert_eq!(progress_message(&turn).as_deref(), Some("model turn 1"));
        let handed = event(EventKind::StreamingStart(StreamingStartEvent {
            iteration: 2,
            agent: Some("billing".to_owned()),
            request: None,
        }));
        assert_eq!(
            progress_message(&handed).as_deref(),
            Some("model turn 2 (billing)")
        );
    }

    #[test]
    fn chunks_are_not_progress() {
        assert_eq!(progress_message(&event(EventKind::FirstChunk)), None);
    }
}
