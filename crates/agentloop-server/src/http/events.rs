//! `GET /api/agent-runs/{id}/events`: the run's event log as SSE. Replays
//! the stored events after `Last-Event-ID`, then follows live events with
//! no gap and no duplicate: the live channel is subscribed before the store
//! is read (events are stored before they are broadcast), seqs already sent
//! are skipped, and a lagging channel or a seq gap is filled from the
//! store. Runs executing on another instance are followed through the
//! store: woken by its announcements of appends where it makes them
//! (PostgreSQL, see [`crate::follow`]), by polling otherwise. The stream ends after the terminal event, or once the run is no
//! longer running (ended, or waiting for a person) and its log is drained.
//! A run that waits logs a `finished` event with status `suspended`; when
//! it resumes, its log continues after it (seqs go on), so a client that
//! reconnects with `Last-Event-ID` sees the resumed part.

use agentloop_storage::ProjectRole;
use agentloop_types::FinishedEvent;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use agentloop_storage::model::{AgentRunStatus, now_millis};
use agentloop_types::{EventKind, LoopEvent, LoopStatus};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use tokio::sync::broadcast::{self, error::RecvError};

use super::error::ApiError;
use super::extract::AuthUser;
use super::service::owned_run;
use crate::follow::AppendWaiter;
use crate::state::AppState;

/// How often a follower without a live channel reads the store.
const POLL: Duration = Duration::from_millis(250);
/// How often it reads the store anyway while appends are announced (an
/// announcement can be lost to a reconnect, and a run whose instance died
/// ends without one).
const ANNOUNCED_POLL: Duration = Duration::from_secs(2);
/// Events read from the store at once.
const PAGE: u32 = 500;

/// A run's stored events from a seq on, live: see the module's doc.
pub(super) struct Follow {
    state: AppState,
    run_id: String,
    after: Option<u64>,
    live: Option<broadcast::Receiver<LoopEvent>>,
    appended: AppendWaiter,
    buffer: VecDeque<LoopEvent>,
    /// The store may hold events the live channel did not deliver (at
    /// start, after a lag, a gap, a timeout, or without a live channel).
    stale: bool,
    done: bool,
    _client: SseClient,
}

/// Counts an open event stream in the metrics while it lives.
struct SseClient(std::sync::Arc<crate::metrics::Metrics>);

impl SseClient {
    fn open(metrics: std::sync::Arc<crate::metrics::Metrics>) -> Self {
        metrics.sse_clients.inc();
        Self(metrics)
    }
}

impl Drop for SseClient {
    fn drop(&mut self) {
        self.0.sse_clients.dec();
    }
}

impl Follow {
    /// Follows `run_id` from the event after `after` (from its first
    /// event when `None`).
    pub(super) fn new(state: AppState, run_id: String, after: Option<u64>) -> Self {
        Self {
            _client: SseClient::open(state.metrics.clone()),
            appended: state.appends.waiter(&run_id),
            state,
            run_id,
            after,
            live: None,
            buffer: VecDeque::new(),
            stale: true,
            done: false,
        }
    }

    fn next_seq(&self) -> u64 {
        self.after.map_or(0, |s| s + 1)
    }

    async fn read_store(&mut self) -> Result<usize, ApiError> {
        let events = self
            .state
            .store
            .list_events(&self.run_id, self.after, PAGE)
            .await?;
        let n = events.len();
        self.buffer.extend(events);
        Ok(n)
    }

    /// Whether nothing more will be logged for now: the run does not run,
    /// nothing executes it here, and no instance holds its lease (an
    /// instance that executes a run cancelled from elsewhere holds it until
    /// it has logged the run's end).
    async fn finished(&self) -> bool {
        let store = &self.state.store;
        match store.get_agent_run(&self.run_id).await {
            Ok(run) if run.status == AgentRunStatus::Running => false,
            Ok(_) if self.state.local_run(&self.run_id).is_some() => false,
            Ok(_) => match store.get_run(&self.run_id).await {
                Ok(record) => !record
                    .lease_expires_at
                    .is_some_and(|at| record.lease_owner.is_some() && at > now_millis()),
                Err(_) => true,
            },
            Err(_) => true,
        }
    }

    /// The next event to send, or `None` at the end.
    pub(super) async fn next(&mut self) -> Option<LoopEvent> {
        loop {
            while let Some(event) = self.buffer.pop_front() {
                if self.after.is_some_and(|after| event.seq <= after) {
                    continue;
                }
                self.after = Some(event.seq);
                // A suspended result is not the end: the run goes on after
                // its decisions and its log with it.
                if let EventKind::Finished(FinishedEvent { result }) = &event.kind
                    && event.path.is_root()
                    && !matches!(result.status, LoopStatus::Suspended { .. })
                {
                    self.done = true;
                }
                return Some(event);
            }
            if self.done || self.state.shutdown.is_cancelled() {
                return None;
            }
            if self.live.is_none() {
                self.live = self
                    .state
                    .local_run(&self.run_id)
                    .map(|run| run.subscribe());
            }
            if self.stale {
                match self.read_store().await {
                    Ok(0) => self.stale = false,
                    Ok(_) => continue,
                    Err(_) => return None,
                }
                if self.finished().await {
                    if matches!(self.read_store().await, Ok(0) | Err(_)) {
                        return None;
                    }
                    continue;
                }
            }
            self.stale = true;
            let Some(live) = self.live.as_mut() else {
                if self.state.appends.listening() {
                    self.appended.wait(ANNOUNCED_POLL).await;
                } else {
                    tokio::time::sleep(POLL).await;
                }
                continue;
            };
            match tokio::time::timeout(POLL * 4, live.recv()).await {
                Ok(Ok(event)) => {
                    // The next event or one already sent: the store has
                    // nothing before it that was missed.
                    if event.seq <= self.next_seq() {
                        self.stale = false;
                        self.buffer.push_back(event);
                    }
                }
                Ok(Err(RecvError::Lagged(_))) => {}
                Ok(Err(RecvError::Closed)) => self.live = None,
                Err(_) => {}
            }
        }
    }
}

fn to_sse(event: &LoopEvent) -> Event {
    let data = serde_json::to_string(event).unwrap_or_else(|_| "{}".to_owned());
    Event::default()
        .id(event.seq.to_string())
        .event(event.kind.name())
        .data(data)
}

pub(super) async fn stream(
    State(state): State<AppState>,
    AuthUser(user): AuthUser,
    Path(run_id): Path<String>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let (run, _) = owned_run(&state, &user, &run_id, ProjectRole::Viewer).await?;
    let after = match headers.get("last-event-id") {
        None => None,
        Some(value) => Some(
            value
                .to_str()
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .ok_or_else(|| ApiError::bad_request("Last-Event-ID must be an event seq"))?,
        ),
    };
    let follow = Follow::new(state, run.id, after);
    let stream = futures::stream::unfold(follow, |mut follow| async move {
        let event = follow.next().await?;
        Some((Ok(to_sse(&event)), follow))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}
