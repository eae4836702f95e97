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
    /// The request a model step at `step` sent: the first recorded after
    /// it and before the next step (`next`), if any. A step's seq is that
    /// of the last event logged before it, or 0 when none was: a request
    /// whose event is the log's first (seq 0) follows a step at 0.
    pub fn request_of(&self, step: u64, next: Option<u64>) -> Option<&LoggedRequest> {
        self.requests.iter().find(|r| {
            (r.seq > step || (r.seq == 0 && step == 0)) && next.is_none_or(|next| r.seq <= next)
        })
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

#[cfg(test)]
mod tests {
    use super::*;
    use agentloop_types::SentRequest;

    fn start(seq: u64, options: bool) -> LoopEvent {
        LoopEvent {
            seq,
            path: Default::default(),
            kind: EventKind::StreamingStart(StreamingStartEvent {
                iteration: 1,
                agent: None,
                request: Some(Box::new(SentRequest {
                    options: options.then(RequestOptions::default),
                    tools: options.then(Vec::new),
                    response_format: None,
                    messages: vec![SentMessages::History { from: 0, to: 1 }],
                })),
            }),
        }
    }

    #[test]
    fn each_model_step_finds_the_request_logged_after_it() {
        let mut reader = LogReader::default();
        reader.read(&[start(0, true), start(7, false)]);
        let logged = reader.finish();
        // The first step, taken on an empty log, and the request logged
        // first; then a step after event 5 and its request at 7.
        assert_eq!(logged.request_of(0, Some(5)).map(|r| r.seq), Some(0));
        assert_eq!(logged.request_of(5, Some(9)).map(|r| r.seq), Some(7));
        // A step whose next one came before any request sent none.
        assert_eq!(logged.request_of(5, Some(5)).map(|r| r.seq), None);
        // Options and tools a record leaves out are the request before's.
        assert!(Arc::ptr_eq(
            &logged.requests[0].tools,
            &logged.requests[1].tools
        ));
    }

    #[test]
    fn a_record_with_nothing_to_carry_from_is_not_shown_as_sent() {
        let mut reader = LogReader::default();
        reader.read(&[start(3, false)]);
        assert!(reader.finish().requests.is_empty());
    }
}
