//! The `AgentRun` workflow against a real `restate-server`: the endpoint
//! registers (twice: idempotent), a run started through the ingress asks
//! its host for steps until the run ends, each committed step once, and a
//! step that failed is tried again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/restate_server.rs"]
mod restate_server;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentloop_restate::{RestateClient, RunHost, ServiceEndpoint, Step};
use restate_server::RestateServer;

/// Ends each run at its third step; the first try of a run named
/// `flaky-…` fails once at its second step.
#[derive(Default)]
struct Counting {
    calls: Mutex<HashMap<String, Vec<&'static str>>>,
}

#[async_trait::async_trait]
impl RunHost for Counting {
    async fn step(&self, run_id: &str) -> Result<Step, String> {
        let mut calls = self.calls.lock().unwrap();
        let seen = calls.entry(run_id.to_owned()).or_default();
        let committed = seen.iter().filter(|c| **c != "failed").count();
        if run_id.starts_with("flaky") && committed == 1 && !seen.contains(&"failed") {
            seen.push("failed");
            return Err("the worker lost its store".to_owned());
        }
        let step = if committed < 2 { "continue" } else { "ended" };
        seen.push(step);
        Ok(if committed < 2 {
            Step::Continue
        } else {
            Step::Ended
        })
    }
}

async fn until_ended(host: &Counting, run_id: &str) -> Vec<&'static str> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let seen = host.calls.lock().unwrap().get(run_id).cloned();
        if let Some(seen) = seen
            && seen.last() == Some(&"ended")
        {
            return seen;
        }
        assert!(Instant::now() < deadline, "run {run_id} did not end");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_asks_its_host_for_each_step_once_until_it_ends() {
    let Some(server) = RestateServer::start("workflow") else {
        return;
    };
    let host = Arc::new(Counting::default());
    let endpoint = ServiceEndpoint::bind("127.0.0.1:0", host.clone())
        .await
        .unwrap();
    let url = format!("http://{}", endpoint.local_addr().unwrap());
    let stop = tokio_util_free_signal();
    tokio::spawn(endpoint.serve(stop.1));
    let client = RestateClient::new(&server.ingress, &server.admin).unwrap();
    client.register(&url).await.unwrap();
    client.register(&url).await.unwrap();

    client.start("run-1").await.unwrap();
    client.start("run-1").await.unwrap();
    client.start("flaky-1").await.unwrap();

    assert_eq!(
        until_ended(&host, "run-1").await,
        ["continue", "continue", "ended"]
    );
    assert_eq!(
        until_ended(&host, "flaky-1").await,
        ["continue", "failed", "continue", "ended"]
    );
    // Started twice, executed once: nothing more arrives.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(host.calls.lock().unwrap()["run-1"].len(), 3);
    drop(stop.0);
}

#[tokio::test]
async fn a_refused_registration_is_a_typed_error() {
    let Some(server) = RestateServer::start("refused") else {
        return;
    };
    let client = RestateClient::new(&server.ingress, &server.admin).unwrap();
    // Nothing serves there: Restate cannot discover it and says so.
    let error = client.register("http://127.0.0.1:9").await.unwrap_err();
    assert!(
        matches!(error, agentloop_restate::RestateError::Refused { .. }),
        "{error}"
    );
}

/// A shutdown future and the guard that resolves it when dropped.
fn tokio_util_free_signal() -> (
    tokio::sync::oneshot::Sender<()>,
    impl std::future::Future<Output = ()>,
) {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    (tx, async move {
        let _ = rx.await;
    })
}
