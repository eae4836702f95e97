//! Reading a run's event log back: where it stands when a run is
//! continued (the next seq, the calls that started, the end if logged).

use std::collections::HashSet;

use agentloop_storage::RuntimeStore;
use agentloop_types::{EventKind, FinishedEvent, LoopResult, LoopStatus, ToolStartEvent};

use crate::error::RuntimeResult;

/// Events read per page.
const PAGE: u32 = 500;

/// What a run's event log says about where the run stands.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct RunLog {
    /// The calls whose `tool_start` is logged: they may have taken effect.
    pub started: HashSet<String>,
    /// The seq the next event of the run gets.
    pub next_seq: u64,
    /// The run's final result, if the log holds its end (a suspended
    /// result is not an end: the run goes on after its decisions).
    pub ended: Option<LoopResult>,
}

impl RunLog {
    /// Reads the log of `run_id`, page by page.
    pub async fn read(store: &dyn RuntimeStore, run_id: &str) -> RuntimeResult<Self> {
        let mut log = Self::default();
        let mut after = None;
        loop {
            let page = store.list_events(run_id, after, PAGE).await?;
            for event in &page {
                log.next_seq = log.next_seq.max(event.seq + 1);
                match &event.kind {
                    EventKind::ToolStart(ToolStartEvent { tool_use_id, .. }) => {
                        log.started.insert(tool_use_id.clone());
                    }
                    EventKind::Finished(FinishedEvent { result }) if event.path.is_root() => {
                        log.ended = (!matches!(result.status, LoopStatus::Suspended { .. }))
                            .then(|| LoopResult::clone(result));
                    }
                    _ => {}
                }
            }
            match page.last() {
                Some(last) if page.len() == PAGE as usize => after = Some(last.seq),
                _ => return Ok(log),
            }
        }
    }
}
