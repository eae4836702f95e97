//! What an agent run remembers across runs beyond its `memory` tool: at
//! its start, the memories of its project and of the user who started it
//! that its prompt is about are recalled into its context (BM25, see
//! [`agentloop_storage::MemoryRecall`]), shown as a `context_edited`
//! event (`passages_recalled`). The run's strategy recalls once, as it
//! starts: a run resumed from its stored state (a wait for a person, a
//! takeover) goes on with what it recalled and does not recall again.
//!
//! A project whose `memory_extraction` setting is on also ends each
//! completed run with the extraction step (see
//! [`agentloop_storage::memory_extraction`]): a `run_end` hook that asks
//! the model what of the run is worth remembering and writes it to the
//! project's memories, with the run and step it came from.

use std::sync::Arc;

use agentloop_engine::LoopStrategy;
use agentloop_engine::strategy::NativeStrategy;
use agentloop_storage::model::{MemoryScope, Project};
use agentloop_storage::{MemoryExtraction, MemoryRecall};
use agentloop_types::{Budget, Hooks, RequestOptions, Retriever};

use crate::runner::TaskContext;
use crate::state::AppState;

/// What recalls a run's memories: its project's first, then those of the
/// user who started it (the project's one owner).
pub fn recall(state: &AppState, ctx: &TaskContext) -> Arc<dyn Retriever> {
    Arc::new(MemoryRecall::over(
        state.store.clone(),
        vec![
            MemoryScope::project(&ctx.project.id),
            MemoryScope::user(&ctx.owner),
        ],
    ))
}

/// The loop an agent run runs: the native one, recalling with `recall`
/// as it starts.
pub fn strategy(recall: Arc<dyn Retriever>) -> Arc<dyn LoopStrategy> {
    Arc::new(NativeStrategy {
        retriever: Some(recall),
        ..NativeStrategy::default()
    })
}

/// The project setting that turns the extraction step on.
pub const EXTRACTION_SETTING: &str = "memory_extraction";

/// Whether a project's runs end with the extraction step.
pub fn extraction_enabled(project: &Project) -> bool {
    project
        .settings
        .get(EXTRACTION_SETTING)
        .and_then(serde_json::Value::as_bool)
        == Some(true)
}

/// The hooks of a run of chat `chat_id`: the extraction step, when its
/// project turned it on, writing to the project's memories, its model
/// call reserved with the run's `budget`.
pub fn hooks(
    state: &AppState,
    ctx: &TaskContext,
    chat_id: &str,
    budget: &Arc<dyn Budget>,
) -> Hooks {
    let mut hooks = Hooks::default();
    if extraction_enabled(&ctx.project) {
        let request = RequestOptions {
            model: crate::runner::run_model(&state.config, ctx).to_owned(),
            max_tokens: state.config.max_tokens,
            ..RequestOptions::default()
        };
        hooks.push(Arc::new(
            MemoryExtraction::new(
                state.store.clone(),
                MemoryScope::project(&ctx.project.id),
                chat_id,
                state.config.provider.clone(),
                request,
            )
            .with_budget(Arc::clone(budget)),
        ));
    }
    hooks
}
