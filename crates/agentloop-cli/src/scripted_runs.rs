//! `serve --provider scripted:FILE`: every agent run plays FILE from its
//! start, as each case of `eval` does. A run's next turn is the one after
//! the model turns its conversation holds since its prompt, so runs in
//! parallel, a run resumed after a decision and a run taken over after a
//! crash each play their own place in the script. (`scripted-shared:FILE`
//! plays one script across all runs, in the order they ask: a whole chain
//! scripted in one file.)

use std::sync::Arc;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_types::{ModelProvider, ModelRequest, ModelStream, ProviderError, ProviderErrorKind};

use crate::demo_model::turns_since_prompt;
use crate::out::Failure;

/// A script every run plays from its start.
#[derive(Debug)]
pub struct ScriptPerRun {
    origin: String,
    turns: Vec<ScriptedTurn>,
}

impl ScriptPerRun {
    /// The script at `path` (checked by `providers::choose` before, so a
    /// failure here is the file changing meanwhile).
    pub fn read(path: &str) -> Result<Arc<Self>, Failure> {
        let json = std::fs::read_to_string(path)
            .map_err(|e| Failure::usage(format!("cannot read the script {path}: {e}")))?;
        let turns = serde_json::from_str(&json).map_err(|e| {
            Failure::usage(format!(
                "the script {path} is not a JSON array of turns: {e}"
            ))
        })?;
        Ok(Arc::new(Self {
            origin: path.to_owned(),
            turns,
        }))
    }
}

impl ModelProvider for ScriptPerRun {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        let played = turns_since_prompt(&request.messages);
        let Some(turn) = self.turns.get(played).cloned() else {
            let error = ProviderError::new(
                ProviderErrorKind::InvalidRequest,
                format!(
                    "the script {} has {} turns and this run asks for turn {}: each run plays \
                     the script from its start",
                    self.origin,
                    self.turns.len(),
                    played + 1
                ),
            );
            return Box::pin(futures::stream::once(async move { Err(error) }));
        };
        ScriptedProvider::unrecorded([turn]).stream(request)
    }
}
