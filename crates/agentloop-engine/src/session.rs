//! Superseded runs: at most one live run per session key. Starting a run
//! under a key cancels the run started before it under the same key, which
//! then ends `cancelled` through the usual cancellation path.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use agentloop_types::{CancellationToken, LoopOptions, Message};
use futures::StreamExt;

use crate::strategy::LoopStrategy;
use crate::{RunDeps, RunStream};

struct Entry {
    generation: u64,
    cancel: CancellationToken,
}

/// Removes a run's entry when it ends, unless a newer run replaced it.
struct Release {
    runs: SessionRuns,
    key: String,
    generation: u64,
}

impl Drop for Release {
    fn drop(&mut self) {
        self.runs.release(&self.key, self.generation);
    }
}

/// The live run of each session key.
#[derive(Clone, Default)]
pub struct SessionRuns {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    runs: Mutex<HashMap<String, Entry>>,
    generation: AtomicU64,
}

impl SessionRuns {
    /// No runs.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts `strategy` under `key`, cancelling the run already there.
    /// The new run is also cancelled when `deps.cancel` is.
    pub fn start(
        &self,
        key: impl Into<String>,
        strategy: &dyn LoopStrategy,
        options: LoopOptions,
        context: Vec<Message>,
        mut deps: RunDeps,
    ) -> RunStream {
        let key = key.into();
        let cancel = deps.cancel.child_token();
        let generation = self.inner.generation.fetch_add(1, Ordering::Relaxed);
        let previous = self.lock().insert(
            key.clone(),
            Entry {
                generation,
                cancel: cancel.clone(),
            },
        );
        if let Some(previous) = previous {
            previous.cancel.cancel();
        }
        deps.cancel = cancel;
        let mut inner = strategy.run(options, context, deps);
        let release = Release {
            runs: self.clone(),
            key,
            generation,
        };
        RunStream::new(move |mut emitter| async move {
            // Released when the run ends or its stream is dropped.
            let _release = release;
            while let Some(event) = inner.next().await {
                emitter.emit_at(event.path, event.kind).await;
            }
        })
    }

    /// Cancels the live run of `key`; false when there is none.
    pub fn cancel(&self, key: &str) -> bool {
        match self.lock().remove(key) {
            Some(entry) => {
                entry.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Whether a run is live under `key`.
    pub fn is_active(&self, key: &str) -> bool {
        self.lock().contains_key(key)
    }

    fn release(&self, key: &str, generation: u64) {
        let mut runs = self.lock();
        if runs.get(key).is_some_and(|e| e.generation == generation) {
            runs.remove(key);
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        self.inner.runs.lock().unwrap_or_else(|e| e.into_inner())
    }
}
