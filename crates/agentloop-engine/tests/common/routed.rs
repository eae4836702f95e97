//! A provider that plays summarising requests from one script and the
//! run's own from another: a run that compacts asks for summaries at
//! points a test need not predict.

use std::sync::{Arc, Mutex};

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_types::{ModelProvider, ModelRequest, ModelStream};

/// Plays summarising requests from one script and the run's own from
/// another, recording every request in the order it came.
pub struct Routed {
    main: Arc<ScriptedProvider>,
    summaries: Arc<ScriptedProvider>,
    log: Mutex<Vec<ModelRequest>>,
}

impl Routed {
    pub fn new(main: Vec<ScriptedTurn>, summaries: Vec<ScriptedTurn>) -> Arc<Self> {
        Arc::new(Self {
            main: ScriptedProvider::new(main),
            summaries: ScriptedProvider::new(summaries),
            log: Mutex::new(Vec::new()),
        })
    }

    pub fn requests(&self) -> Vec<ModelRequest> {
        self.log.lock().unwrap().clone()
    }

    pub fn remaining(&self) -> usize {
        self.main.remaining() + self.summaries.remaining()
    }
}

/// Whether `request` asks for a summary.
pub fn is_summary(request: &ModelRequest) -> bool {
    request
        .messages
        .first()
        .is_some_and(|m| m.id.ends_with("-summary-instruction"))
}

impl ModelProvider for Routed {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        self.log.lock().unwrap().push(request.clone());
        if is_summary(&request) {
            self.summaries.stream(request)
        } else {
            self.main.stream(request)
        }
    }
}
