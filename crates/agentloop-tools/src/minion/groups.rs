//! The render groups of a minion's run, kept current from its events.
//!
//! Committed messages are rendered once, when they are committed; the turn
//! being streamed lives in a [`StreamAssembler`] that applies each delta in
//! O(1). A snapshot for a `groups_update` costs O(everything shown), so
//! snapshots are rationed: one is due when a message is committed, or when
//! the bytes streamed since the last one reach a quarter of what is shown
//! (at least [`MIN_BYTES_BETWEEN_UPDATES`]). The total cost of snapshots is
//! then linear in the size of the run, O(1) amortised per delta.

use agentloop_types::{MessageCreatedEvent, StreamingChunkEvent, StreamingStartEvent};
use std::collections::HashMap;

use agentloop_types::render::{mark_tool_generated, push_grouped, render_block};
use agentloop_types::{
    BlockCategory, ContentBlock, EventKind, LoopEvent, Message, RenderingBlockGroup,
    RenderingContentBlock, Role, StreamAssembler, StreamDelta, ToolInfoRenderBlock,
};

/// Fewest streamed bytes between two updates while a turn streams.
pub(crate) const MIN_BYTES_BETWEEN_UPDATES: usize = 256;

/// Render groups of a child run, built from its events.
#[derive(Default)]
pub(crate) struct ChildGroups {
    committed: Vec<RenderingBlockGroup>,
    live: Option<StreamAssembler>,
    tool_names: HashMap<String, String>,
    shown_bytes: usize,
    pending_bytes: usize,
}

impl ChildGroups {
    /// Takes one event of the child's stream into account; true when an
    /// update is due. Events of runs nested deeper are ignored: they show
    /// inside the nested tool's own result.
    pub(crate) fn observe(&mut self, event: &LoopEvent) -> bool {
        if !event.path.is_root() {
            return false;
        }
        match &event.kind {
            EventKind::StreamingStart(StreamingStartEvent { .. }) => {
                self.live = Some(StreamAssembler::new());
                false
            }
            EventKind::StreamingChunk(StreamingChunkEvent { delta }) => {
                if let Some(live) = self.live.as_mut() {
                    // A malformed delta ends the child's turn with an error;
                    // the committed messages stay authoritative.
                    let _ = live.apply(delta);
                }
                let size = delta_bytes(delta);
                self.shown_bytes += size;
                self.pending_bytes += size;
                let due =
                    self.pending_bytes >= (self.shown_bytes / 4).max(MIN_BYTES_BETWEEN_UPDATES);
                if due {
                    self.pending_bytes = 0;
                }
                due
            }
            EventKind::MessageCreated(MessageCreatedEvent { message }) => {
                self.commit(message);
                self.pending_bytes = 0;
                true
            }
            EventKind::FirstChunk
            | EventKind::StreamingEnd(_)
            | EventKind::TokensConsumed(_)
            | EventKind::PendingToolResult(_)
            | EventKind::ToolStart(_)
            | EventKind::ToolBlockUpdate(_)
            | EventKind::ToolEnd(_)
            | EventKind::AgentStart(_)
            | EventKind::AgentTurnStart(_)
            | EventKind::AgentReason(_)
            | EventKind::AgentRequestInput(_)
            | EventKind::ApprovalRequested(_)
            | EventKind::AgentToolStart(_)
            | EventKind::AgentToolComplete(_)
            | EventKind::AgentObserve(_)
            | EventKind::AgentCompletion(_)
            | EventKind::AgentError(_)
            | EventKind::ContextCompacted(_)
            | EventKind::ContextEdited(_)
            | EventKind::Hook(_)
            | EventKind::Handoff(_)
            | EventKind::Finished(_) => false,
        }
    }

    /// The groups of a child run resumed in place: what it committed
    /// before it waited.
    pub(crate) fn resumed(messages: &[Message]) -> Self {
        let mut groups = Self::default();
        for message in messages.iter().filter(|m| m.role != Role::System) {
            groups.commit(message);
        }
        groups
    }

    fn commit(&mut self, message: &Message) {
        self.live = None;
        if message.role == Role::Assistant {
            for call in message.tool_uses() {
                self.tool_names.insert(call.id.clone(), call.name.clone());
            }
        }
        for block in &message.content {
            self.shown_bytes += content_bytes(block);
            let rendered = render_block(block, |id| self.tool_names.get(id).cloned());
            push_grouped(&mut self.committed, rendered);
        }
    }

    /// The groups shown now: committed messages, then the turn streaming,
    /// every group marked as tool-generated.
    pub(crate) fn snapshot(&self) -> Vec<RenderingBlockGroup> {
        let mut groups = self.committed.clone();
        if let Some(live) = &self.live {
            for group in live.groups() {
                match groups.last_mut() {
                    Some(last) if last.category == group.category => {
                        last.blocks.extend(group.blocks)
                    }
                    _ => groups.push(group),
                }
            }
        }
        mark_tool_generated(&mut groups);
        groups
    }
}

/// The group that opens a minion's display: its task and chat id.
pub(crate) fn info_group(task: &str, chat_id: &str) -> RenderingBlockGroup {
    RenderingBlockGroup {
        category: BlockCategory::Backstage,
        blocks: vec![RenderingContentBlock::ToolInfo(ToolInfoRenderBlock {
            input: Some(task.to_owned()),
            chat_id: Some(chat_id.to_owned()),
        })],
        is_tool_generated: false,
    }
}

fn delta_bytes(delta: &StreamDelta) -> usize {
    match delta {
        StreamDelta::Text { text, .. } => text.len(),
        StreamDelta::Thinking { thinking, .. } => thinking.len(),
        StreamDelta::ToolInput { partial_json, .. } => partial_json.len(),
        StreamDelta::BlockStart { .. }
        | StreamDelta::Signature { .. }
        | StreamDelta::Citation { .. }
        | StreamDelta::BlockStop { .. } => 0,
    }
}

fn content_bytes(block: &ContentBlock) -> usize {
    match block {
        ContentBlock::Text { text, .. } => text.len(),
        ContentBlock::Thinking { thinking, .. } => thinking.len(),
        ContentBlock::ToolResult(result) => result.content.len(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_types::{BlockStart, RunPath, render_groups};

    fn event(kind: EventKind) -> LoopEvent {
        LoopEvent {
            seq: 0,
            path: RunPath::root(),
            kind,
        }
    }

    fn chunk(delta: StreamDelta) -> LoopEvent {
        event(EventKind::StreamingChunk(StreamingChunkEvent { delta }))
    }

    #[test]
    fn streamed_groups_match_the_committed_message() {
        let mut groups = ChildGroups::default();
        groups.observe(&event(EventKind::StreamingStart(StreamingStartEvent {
            iteration: 1,
            agent: None,
            request: None,
        })));
        groups.observe(&chunk(StreamDelta::BlockStart {
            index: 0,
            block: BlockStart::Text,
        }));
        let mut updates = 0;
        for _ in 0..100 {
            if groups.observe(&chunk(StreamDelta::Text {
                index: 0,
                text: "0123456789".into(),
            })) {
                updates += 1;
            }
        }
        assert!(
            (1..10).contains(&updates),
            "updates are rationed: {updates}"
        );
        let streamed = groups.snapshot();
        let message = Message::assistant_text("a", "0123456789".repeat(100));
        assert!(
            groups.observe(&event(EventKind::MessageCreated(MessageCreatedEvent {
                message: message.clone()
            })))
        );
        let mut expected = render_groups(&message.content);
        mark_tool_generated(&mut expected);
        assert_eq!(streamed, expected);
        assert_eq!(groups.snapshot(), expected);
    }

    #[test]
    fn nested_events_are_ignored() {
        let mut groups = ChildGroups::default();
        let nested = LoopEvent {
            seq: 0,
            path: RunPath::root().child("x"),
            kind: EventKind::MessageCreated(MessageCreatedEvent {
                message: Message::assistant_text("a", "hi"),
            }),
        };
        assert!(!groups.observe(&nested));
        assert!(groups.snapshot().is_empty());
    }
}
