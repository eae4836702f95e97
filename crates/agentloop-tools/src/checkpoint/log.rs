//! Which checkpoint a run's log names for each of its steps.
//!
//! The hook's `hook` event names the checkpoint it took for a call; the
//! call's `tool_start` event, logged after the step before it was kept,
//! places it. So the folder as it was at step `seq` is the checkpoint of
//! the first call that started after `seq`: nothing of the run wrote
//! between the two.

use std::collections::HashMap;

use agentloop_types::{EventKind, LoopEvent};

use super::hook::checkpoint_of;
use super::tree::CheckpointId;

/// A checkpoint a run took: the folder just before the call that started
/// at seq `started`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    /// The seq of the call's `tool_start` event.
    pub started: u64,
    /// The checkpoint.
    pub id: CheckpointId,
}

/// Reads the checkpoints of a run from its log, in order.
#[derive(Debug, Default)]
pub struct TakenReader {
    /// Checkpoints whose call has not started yet.
    pending: HashMap<String, CheckpointId>,
    taken: Vec<Taken>,
}

impl TakenReader {
    /// Reads the next events of the log (the run's own: a sub-agent's
    /// events are left out).
    pub fn read<'a>(&mut self, events: impl IntoIterator<Item = &'a LoopEvent>) {
        for event in events.into_iter().filter(|e| e.path.is_root()) {
            match &event.kind {
                EventKind::Hook(hook) => {
                    if let (Some(id), Some(call)) = (checkpoint_of(hook), &hook.tool_use_id) {
                        self.pending.entry(call.clone()).or_insert(id);
                    }
                }
                EventKind::ToolStart(start) => {
                    if let Some(id) = self.pending.remove(&start.tool_use_id) {
                        self.taken.push(Taken {
                            started: event.seq,
                            id,
                        });
                    }
                }
                _ => {}
            }
        }
    }

    /// Every checkpoint taken for a call that then started, in order. (A
    /// call refused before it started changed nothing: its checkpoint is
    /// left out.)
    pub fn finish(self) -> Vec<Taken> {
        self.taken
    }
}

/// The checkpoint holding the folder as it was at step `seq`: the first
/// taken after it. `None`: no call that may write started after it, so
/// the run left the folder as it was then.
pub fn at(taken: &[Taken], seq: u64) -> Option<&Taken> {
    taken.iter().find(|t| t.started > seq)
}
