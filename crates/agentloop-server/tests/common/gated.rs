//! Helpers for tests that stop runs: a provider held at a gate, an SSE
//! reader, and checks that a run ended the same way everywhere.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentloop_engine::scripted::{ScriptedProvider, ScriptedTurn};
use agentloop_types::{ModelProvider, ModelRequest, ModelStream};
use axum::body::Bytes;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::{Notify, Semaphore};

use super::TestServer;

/// A provider whose streams yield their first chunk, then wait for the
/// test to open the gate before yielding the rest. Counts requests and
/// notes when a stream is dropped.
pub struct GatedProvider {
    inner: Arc<ScriptedProvider>,
    gate: Arc<Semaphore>,
    pub requests: AtomicUsize,
    pub dropped: Arc<Notify>,
}

impl GatedProvider {
    /// Model requests made so far.
    pub fn request_count(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    pub fn new(turns: impl IntoIterator<Item = ScriptedTurn>) -> Arc<Self> {
        Arc::new(Self {
            inner: ScriptedProvider::new(turns),
            gate: Arc::new(Semaphore::new(0)),
            requests: AtomicUsize::new(0),
            dropped: Arc::new(Notify::new()),
        })
    }

    /// The requests made so far, in order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.inner.requests()
    }

    pub fn open(&self) {
        self.gate.add_permits(1000);
    }
}

struct DropSignal(Arc<Notify>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

impl ModelProvider for GatedProvider {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        self.requests.fetch_add(1, Ordering::SeqCst);
        let mut inner = self.inner.stream(request);
        let gate = self.gate.clone();
        let signal = DropSignal(self.dropped.clone());
        Box::pin(async_stream(move |tx| async move {
            let _signal = signal;
            if let Some(first) = inner.next().await
                && tx.send(first).await.is_err()
            {
                return;
            }
            let _permit = gate.acquire().await;
            while let Some(item) = inner.next().await {
                if tx.send(item).await.is_err() {
                    return;
                }
            }
        }))
    }
}

/// A stream fed by `make`'s future, which is polled with the stream and
/// dropped with it.
fn async_stream<T, F, Fut>(make: F) -> impl futures::Stream<Item = T> + Send
where
    T: Send + 'static,
    F: FnOnce(tokio::sync::mpsc::Sender<T>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    let producer = make(tx);
    let received = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (Some(item), rx))
    });
    futures::stream::select(received, futures::stream::once(producer).map(|()| None))
        .filter_map(futures::future::ready)
}

pub async fn start_run(server: &TestServer, task_id: &str, agent: &str) -> String {
    let (status, run) = server
        .send(
            "POST",
            &format!("/api/tasks/{task_id}/agent-runs"),
            json!({ "agentType": agent }),
        )
        .await;
    assert_eq!(status, 201, "{run}");
    run["id"].as_str().unwrap().to_owned()
}

/// Opens the run's SSE stream and waits until it has delivered an event
/// of kind `until`; returns the still-open response.
pub async fn follow_until(server: &TestServer, run_id: &str, until: &str) -> SseReader {
    let response = server
        .client
        .get(server.url(&format!("/api/agent-runs/{run_id}/events")))
        .bearer_auth(&server.token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut reader = SseReader {
        body: Box::pin(response.bytes_stream()),
        buffer: String::new(),
        events: Vec::new(),
    };
    reader.read_until(until).await;
    reader
}

pub struct SseReader {
    body: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<Bytes>> + Send>>,
    buffer: String,
    /// Every event received: (name, data).
    pub events: Vec<(String, Value)>,
}

impl SseReader {
    /// Reads until an event named `name` arrived; false if the stream ended.
    pub async fn read_until(&mut self, name: &str) -> bool {
        loop {
            if self.events.iter().any(|(n, _)| n == name) {
                return true;
            }
            match self.body.next().await {
                Some(chunk) => {
                    self.buffer
                        .push_str(&String::from_utf8_lossy(&chunk.unwrap()));
                    while let Some(end) = self.buffer.find("\n\n") {
                        let block: String = self.buffer.drain(..end + 2).collect();
                        let mut event = None;
                        let mut data = None;
                        for line in block.lines() {
                            if let Some(v) = line.strip_prefix("event:") {
                                event = Some(v.trim().to_owned());
                            } else if let Some(v) = line.strip_prefix("data:") {
                                data = serde_json::from_str(v.trim()).ok();
                            }
                        }
                        if let (Some(event), Some(data)) = (event, data) {
                            self.events.push((event, data));
                        }
                    }
                }
                None => return false,
            }
        }
    }

    /// Reads to the end of the stream, which must come within `limit`.
    pub async fn read_to_end(&mut self, limit: Duration) {
        tokio::time::timeout(limit, self.read_until("\u{0}never"))
            .await
            .expect("the event stream did not close in time");
    }

    pub fn finished(&self) -> Vec<&Value> {
        self.events
            .iter()
            .filter(|(n, d)| n == "finished" && d.get("path").is_none())
            .map(|(_, d)| d)
            .collect()
    }

    pub fn count(&self, name: &str) -> usize {
        self.events.iter().filter(|(n, _)| n == name).count()
    }
}

/// Asserts the run ended `status` in the record, the stored log and the
/// SSE stream, with exactly one terminal event.
pub async fn assert_ended(server: &TestServer, run_id: &str, sse: &SseReader, status: &str) {
    assert_ended_as(server, run_id, sse, status, status).await;
}

/// Asserts Mark Done force-completed the run: `completed`, stopped by
/// `workflow_complete`, in its agent run, its record and its terminal
/// event (a `complete` result saying who stopped it).
pub async fn assert_force_completed(server: &TestServer, run_id: &str, sse: &SseReader) {
    assert_ended_as(server, run_id, sse, "completed", "complete").await;
    let result = &sse.finished()[0]["result"];
    assert_eq!(result["stopped_by"], "workflow_complete", "{result}");
    assert_eq!(
        result["stop_message"],
        "stopped because its task was marked done"
    );
    let (_, run) = server.get(&format!("/api/agent-runs/{run_id}")).await;
    assert_eq!(run["stopped_by"], "workflow_complete", "{run}");
    let record = server.store.get_run(run_id).await.unwrap();
    assert_eq!(
        record.status,
        agentloop_storage::model::RunStatus::Completed
    );
    assert_eq!(record.result.unwrap()["stopped_by"], "workflow_complete");
}

/// Asserts the run ended `run_status` (its agent run) with a terminal
/// event of `result_status` in the stored log and the SSE stream, with
/// exactly one terminal event.
pub async fn assert_ended_as(
    server: &TestServer,
    run_id: &str,
    sse: &SseReader,
    run_status: &str,
    result_status: &str,
) {
    let finished = sse.finished();
    assert_eq!(finished.len(), 1, "one terminal event: {:?}", sse.events);
    assert_eq!(finished[0]["result"]["status"], result_status);
    let (code, run) = server.get(&format!("/api/agent-runs/{run_id}")).await;
    assert_eq!(code, 200);
    assert_eq!(run["status"], run_status, "{run}");
    let logged = server
        .store
        .list_events(run_id, None, 10_000)
        .await
        .unwrap();
    let terminal: Vec<_> = logged
        .iter()
        .filter(|e| e.kind.name() == "finished" && e.path.is_root())
        .collect();
    assert_eq!(terminal.len(), 1);
    assert_eq!(
        terminal[0].seq,
        logged.last().unwrap().seq,
        "nothing is logged after the terminal event"
    );
}
