//! Kept-state sandboxes: one long-lived runtime per chat (or run) on its own
//! thread, for the js tool's `keep_state` option.

use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use agentloop_types::CancellationToken;
use tokio::sync::oneshot;

use super::outcome::{JsError, JsOutcome};
use super::sandbox::{JsLimits, Library, Sandbox};
use super::watchdog::{Guarded, guard};

/// Most sessions kept at once; the least recently used goes first.
pub const MAX_SESSIONS: usize = 16;

/// Stack of a session thread; the interpreter's own limit is far lower.
const THREAD_STACK: usize = 8 * 1024 * 1024;

struct Job {
    code: String,
    cancel: CancellationToken,
    reply: oneshot::Sender<JsOutcome>,
}

struct Session {
    jobs: mpsc::Sender<Job>,
    last_used: Instant,
}

/// The live sessions of one js tool.
#[derive(Default)]
pub(crate) struct Sessions {
    sessions: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Session>> {
        // Entries are inserted and removed whole, so a poisoned map is
        // still consistent.
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `code` in the session `key`, starting it (and loading
    /// `libraries` into it) if needed.
    pub(crate) async fn run(
        &self,
        key: &str,
        limits: JsLimits,
        libraries: Vec<Library>,
        code: String,
        cancel: CancellationToken,
    ) -> JsOutcome {
        let (reply, answer) = oneshot::channel();
        let job = Job {
            code,
            cancel: cancel.clone(),
            reply,
        };
        let sent = {
            let mut sessions = self.lock();
            let jobs = match sessions.get_mut(key) {
                Some(session) => {
                    session.last_used = Instant::now();
                    session.jobs.clone()
                }
                None => {
                    let jobs = match start(limits, libraries) {
                        Ok(jobs) => jobs,
                        Err(e) => return JsOutcome::failed(e),
                    };
                    evict(&mut sessions);
                    sessions.insert(
                        key.to_owned(),
                        Session {
                            jobs: jobs.clone(),
                            last_used: Instant::now(),
                        },
                    );
                    jobs
                }
            };
            jobs.send(job)
        };
        if sent.is_err() {
            self.lock().remove(key);
            return JsOutcome::failed(JsError::Internal(
                "the kept JavaScript session had stopped; it will start afresh on the next call"
                    .into(),
            ));
        }
        match guard(answer, limits.time, &cancel).await {
            Guarded::Done(Ok(outcome)) => outcome,
            Guarded::Done(Err(_)) => {
                self.lock().remove(key);
                JsOutcome::failed(JsError::Internal("the JavaScript session stopped".into()))
            }
            Guarded::Abandoned(e) => {
                // The session is stuck in a built-in; later calls get a new one.
                self.lock().remove(key);
                JsOutcome::failed(e)
            }
        }
    }

    /// Forgets the session `key`; its thread ends once idle.
    pub(crate) fn reset(&self, key: &str) {
        self.lock().remove(key);
    }

    /// Number of live sessions.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

fn evict(sessions: &mut HashMap<String, Session>) {
    while sessions.len() >= MAX_SESSIONS {
        let oldest = sessions
            .iter()
            .min_by_key(|(_, s)| s.last_used)
            .map(|(k, _)| k.clone());
        match oldest {
            Some(key) => sessions.remove(&key),
            None => break,
        };
    }
}

fn start(limits: JsLimits, libraries: Vec<Library>) -> Result<mpsc::Sender<Job>, JsError> {
    let (jobs, inbox) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("agentloop-js-session".into())
        .stack_size(THREAD_STACK)
        .spawn(move || serve(limits, libraries, inbox))
        .map_err(|e| JsError::Internal(format!("cannot start a JavaScript session: {e}")))?;
    Ok(jobs)
}

fn serve(limits: JsLimits, libraries: Vec<Library>, inbox: mpsc::Receiver<Job>) {
    let mut ready: Option<Result<Sandbox, JsError>> = None;
    for job in inbox {
        let sandbox = ready.get_or_insert_with(|| {
            let sandbox = Sandbox::new(limits)?;
            sandbox.load_libraries(&libraries, &job.cancel)?;
            Ok(sandbox)
        });
        let outcome = match sandbox {
            Ok(sandbox) => sandbox.run(&job.code, &job.cancel),
            Err(e) => JsOutcome::failed(e.clone()),
        };
        let _ = job.reply.send(outcome);
    }
}
