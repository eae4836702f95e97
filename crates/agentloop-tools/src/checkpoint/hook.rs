//! The `before_tool_call` hook a run takes file checkpoints through.
//!
//! It is asked only about calls that may write ([`Tool::may_write`]), and
//! takes a checkpoint of the folder before the call runs. It passes every
//! call; its note in the run's `hook` event names the checkpoint, so the
//! log says, at the seq of each step that wrote, how the folder was just
//! before. A run resumed from its stored state is not asked again.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use agentloop_types::{HookDecision, HookError, HookEvent, HookInput, HookPoint, Tool, hook::Hook};

use super::store::FileCheckpoints;
use super::tree::CheckpointId;

/// What the hook's note says before the checkpoint's id.
const NOTE: &str = "files checkpointed: ";

/// The hook (see the module docs).
pub struct CheckpointHook {
    checkpoints: Arc<FileCheckpoints>,
    root: PathBuf,
    tools: HashMap<String, Arc<dyn Tool>>,
    /// Calls of one step are asked at once: one checkpoint at a time, so
    /// the second finds the first's work done.
    one_at_a_time: tokio::sync::Mutex<()>,
}

impl CheckpointHook {
    /// The name its decisions are recorded under.
    pub const NAME: &'static str = "file-checkpoints";

    /// Checkpoints `root` in `checkpoints` before each call of `tools`
    /// that may write.
    pub fn new(
        checkpoints: Arc<FileCheckpoints>,
        root: impl Into<PathBuf>,
        tools: &[Arc<dyn Tool>],
    ) -> Self {
        Self {
            checkpoints,
            root: root.into(),
            tools: tools
                .iter()
                .map(|tool| (tool.name().to_owned(), tool.clone()))
                .collect(),
            one_at_a_time: tokio::sync::Mutex::new(()),
        }
    }
}

/// The checkpoint a `hook` event of [`CheckpointHook`] names, if it is
/// one that took a checkpoint.
pub fn checkpoint_of(event: &HookEvent) -> Option<CheckpointId> {
    if event.hook != CheckpointHook::NAME || event.error.is_some() {
        return None;
    }
    event.note.as_deref()?.strip_prefix(NOTE)?.parse().ok()
}

#[async_trait::async_trait]
impl Hook for CheckpointHook {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn points(&self) -> Vec<HookPoint> {
        vec![HookPoint::BeforeToolCall]
    }

    /// A second checkpoint of the same folder is the same checkpoint.
    fn asked_again_safely(&self) -> bool {
        true
    }

    fn matches(&self, input: &HookInput) -> bool {
        match input {
            HookInput::BeforeToolCall {
                tool, arguments, ..
            } => self
                .tools
                .get(tool)
                .is_some_and(|tool| tool.may_write(arguments)),
            _ => false,
        }
    }

    async fn call(&self, input: &HookInput) -> Result<HookDecision, HookError> {
        self.call_noted(input).await.map(|(decision, _)| decision)
    }

    async fn call_noted(
        &self,
        _input: &HookInput,
    ) -> Result<(HookDecision, Option<String>), HookError> {
        let _turn = self.one_at_a_time.lock().await;
        let checkpoints = self.checkpoints.clone();
        let root = self.root.clone();
        let taken = tokio::task::spawn_blocking(move || checkpoints.take(&root))
            .await
            .map_err(|e| HookError::new(format!("the file checkpoint stopped: {e}")))?
            .map_err(|e| HookError::new(format!("no file checkpoint: {e}")))?;
        Ok((HookDecision::Pass, Some(format!("{NOTE}{}", taken.id))))
    }
}
