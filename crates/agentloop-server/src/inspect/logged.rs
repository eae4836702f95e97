//! What a run's log says of its model requests and tool calls, read page
//! by page: each request as its `streaming_start` event recorded it (the
//! options and tools a record leaves out carried from the request before),
//! and how long each tool call took by its `tool_end` event.

use std::collections::HashMap;
use std::sync::Arc;

use agentloop_types::{
    EventKind, LoopEvent, RequestOptions, ResponseFormat, SentMessages, StreamingStartEvent,
    ToolDefinition, ToolEndEvent,
};

/// A model request of the run, as recorded.
#[derive(Debug, Clone)]
pub struct LoggedRequest {
    /// The seq of its `streaming_start` event.
    pub seq: u64,
    /// Its options.
    pub options: Arc<RequestOptions>,
    /// The tools it offered.
    pub tools: Arc<[ToolDefinition]>,
    /// The schema its answer was held to, if any.
    pub response_format: Option<ResponseFormat>,
    /// Its messages, by difference with the run's history.
    pub messages: Vec<SentMessages>,
}

/// What the run's log says, once read.
#[derive(Debug, Default)]
pub struct Logged {
    /// The requests the log recorded, oldest first.
    pub requests: Vec<LoggedRequest>,
    /// Each ended tool call's duration in milliseconds, by call id (the
    /// run's own calls, not those of its sub-agents).
    pub durations: HashMap<String, u32>,
}

impl Logged {
    /// The request recorded between seqs `after` and `before` (excluded),
    /// if any: the request a model step sent.
    pub fn request_between(&self, after: u64, before: Option<u64>) -> Option<&LoggedRequest> {
        self.requests
            .iter()
            .find(|r| r.seq > after && before.is_none_or(|before| r.seq < before))
    }
}

/// Reads a run's log, page after page, into [`Logged`].
#[derive(Debug, Default)]
pub struct LogReader {
    options: Option<Arc<RequestOptions>>,
    tools: Option<Arc<[ToolDefinition]>>,
    logged: Logged,
}

impl LogReader {
    /// Reads the next page of the log.
    pub fn read(&mut self, page: &[LoopEvent]) {
        for event in page.iter().filter(|e| e.path.is_root()) {
            match &event.kind {
                EventKind::StreamingStart(StreamingStartEvent {
                    request: Some(request),
                    ..
                }) => {
                    if let Some(options) = &request.options {
                        self.options = Some(Arc::new(options.clone()));
                    }
                    if let Some(tools) = &request.tools {
                        self.tools = Some(tools.clone().into());
                    }
                    // A record that leaves out what no earlier record
                    // holds (a log cut short) is not shown as sent.
                    let (Some(options), Some(tools)) = (&self.options, &self.tools) else {
                        continue;
                    };
                    self.logged.requests.push(LoggedRequest {
                        seq: event.seq,
                        options: options.clone(),
                        tools: tools.clone(),
                        response_format: request.response_format.clone(),
                        messages: request.messages.clone(),
                    });
                }
                EventKind::ToolEnd(ToolEndEvent {
                    tool_use_id,
                    duration_ms: Some(ms),
                    ..
                }) => {
                    self.logged.durations.insert(tool_use_id.clone(), *ms);
                }
                _ => {}
            }
        }
    }

    /// What the log said.
    pub fn finish(self) -> Logged {
        self.logged
    }
}
