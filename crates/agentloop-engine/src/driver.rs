//! The async driver: performs what the machine decides and turns it into
//! events. It holds no decisions of its own.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use agentloop_types::{
    AttachmentLoader, CancellationToken, LoopOptions, Message, ModelProvider, ModelRequest,
    RunState, Tool,
};

use crate::machine::{Input, Machine, Step};
use crate::model_turn::model_turn;
use crate::run_stream::{Emitter, RunStream};
use crate::tool_exec::ToolRun;

/// What a run calls out to.
#[derive(Clone)]
pub struct RunDeps {
    /// The model.
    pub provider: Arc<dyn ModelProvider>,
    /// Tools the run may offer (narrowed by `LoopOptions::enabled_tools`).
    pub tools: Vec<Arc<dyn Tool>>,
    /// Resolves stored attachments for provider requests.
    pub attachments: Option<Arc<dyn AttachmentLoader>>,
    /// Cancels the run when cancelled.
    pub cancel: CancellationToken,
    /// Run id; message ids derive from it. Generated when `None`.
    pub run_id: Option<String>,
}

impl RunDeps {
    /// Deps with a provider and nothing else.
    pub fn new(provider: Arc<dyn ModelProvider>) -> Self {
        Self {
            provider,
            tools: Vec::new(),
            attachments: None,
            cancel: CancellationToken::new(),
            run_id: None,
        }
    }

    /// Adds tools.
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Sets the cancellation token.
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Sets the run id.
    pub fn with_run_id(mut self, run_id: impl Into<String>) -> Self {
        self.run_id = Some(run_id.into());
        self
    }
}

/// Starts a run over `context` (the history so far, ending with the user's
/// message or with the tool results that resume a suspended run).
pub fn run(options: LoopOptions, context: Vec<Message>, deps: RunDeps) -> RunStream {
    let run_id = deps.run_id.clone().unwrap_or_else(generate_run_id);
    resume(options, RunState::new(run_id, context), deps)
}

/// Continues a run from a stored [`RunState`].
pub fn resume(options: LoopOptions, state: RunState, mut deps: RunDeps) -> RunStream {
    // The run's own token: cancelled with the caller's, and by dropping the
    // stream, without touching other runs that share the caller's token.
    let cancel = deps.cancel.child_token();
    deps.cancel = cancel.clone();
    RunStream::new(move |emitter| {
        drive(Machine::new(state, options.clone()), options, deps, emitter)
    })
    .cancel_on_drop(cancel)
}

/// The tools of `deps` a run offers: all, or those named in
/// `options.enabled_tools`.
pub(crate) fn offered_tools(deps: &RunDeps, options: &LoopOptions) -> Vec<Arc<dyn Tool>> {
    deps.tools
        .iter()
        .filter(|t| {
            options.enabled_tools.is_empty() || options.enabled_tools.iter().any(|n| n == t.name())
        })
        .cloned()
        .collect()
}

async fn drive(mut machine: Machine, options: LoopOptions, deps: RunDeps, mut emitter: Emitter) {
    let tools = offered_tools(&deps, &options);
    let definitions: Vec<_> = tools.iter().map(|t| t.definition()).collect();
    let run_id = machine.state().run_id.clone();
    let mut input = Input::Start;
    loop {
        let output = machine.step(input);
        for event in output.events {
            emitter.emit(event).await;
        }
        input = match output.next {
            Step::Done => return,
            _ if deps.cancel.is_cancelled() => cancelled(),
            Step::CallModel {
                iteration,
                messages,
            } => {
                let request = ModelRequest {
                    options: options.clone(),
                    messages,
                    tools: definitions.clone(),
                    attachments: deps.attachments.clone(),
                };
                model_turn(
                    deps.provider.as_ref(),
                    request,
                    iteration,
                    &deps.cancel,
                    &mut emitter,
                )
                .await
            }
            Step::RunTools { calls } => {
                let run = ToolRun {
                    tools: &tools,
                    options: &options,
                    run_id: &run_id,
                    cancel: &deps.cancel,
                };
                run.run(calls, &mut emitter).await
            }
        };
    }
}

fn cancelled() -> Input {
    Input::Cancelled {
        partial_turn: None,
        finished_tools: Vec::new(),
        child_tokens: Default::default(),
    }
}

/// A process-unique run id. Not random: ids only need to be unique among
/// the runs one store holds, and callers that need more pass their own.
pub(crate) fn generate_run_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("run-{nanos:x}-{}", COUNTER.fetch_add(1, Ordering::Relaxed))
}
