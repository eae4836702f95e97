//! The record of each model request a run sends (see
//! [`agentloop_types::sent`]): what the driver puts in the request's
//! `streaming_start` event.

use std::sync::Arc;

use agentloop_types::{
    History, ModelRequest, RequestOptions, SentMessages, SentRequest, ToolDefinition,
};

/// What recording a run's next request needs of its previous one.
#[derive(Default)]
pub(crate) struct SentRequests {
    previous: Option<Previous>,
}

struct Previous {
    options: RequestOptions,
    tools: Arc<[ToolDefinition]>,
}

impl SentRequests {
    /// The record of `request`, sent from `history` (the run's): its
    /// options and tools only when they differ from the previous
    /// request's.
    pub(crate) fn record(&mut self, request: &ModelRequest, history: &History) -> Box<SentRequest> {
        let options = match &self.previous {
            Some(previous) if previous.options == request.options => None,
            _ => Some(request.options.clone()),
        };
        // Most runs offer the same shared list every time: compared by
        // pointer first.
        let tools = match &self.previous {
            Some(previous)
                if Arc::ptr_eq(&previous.tools, &request.tools)
                    || *previous.tools == *request.tools =>
            {
                None
            }
            _ => Some(request.tools.to_vec()),
        };
        match &mut self.previous {
            Some(previous) => {
                if let Some(options) = &options {
                    previous.options = options.clone();
                }
                previous.tools = request.tools.clone();
            }
            None => {
                self.previous = Some(Previous {
                    options: request.options.clone(),
                    tools: request.tools.clone(),
                })
            }
        }
        Box::new(SentRequest {
            options,
            tools,
            response_format: request.response_format.as_deref().cloned(),
            messages: SentMessages::of(&request.messages, history),
        })
    }
}
