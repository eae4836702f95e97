//! The `AgentRun` workflow against a real `restate-server`: the endpoint
//! registers (twice: idempotent), a run started through the ingress asks
//! its host for steps until the run ends, each committed step once, and a
//! step that failed is tried again; a waiting run parks its workflow until
//! it is woken; Restate's cancellation stops a parked workflow through
//! one `stop` step.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/restate_server.rs"]
mod restate_server;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentloop_restate::{Protocol, Refused, RestateClient, RunHost, ServiceEndpoint, Step};
use agentloop_types::RunInput;
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

    async fn stop(&self, run_id: &str) -> Result<(), String> {
        let mut calls = self.calls.lock().unwrap();
        calls.entry(run_id.to_owned()).or_default().push("stopped");
        Ok(())
    }

    async fn submit(&self, _run_id: &str, _input: RunInput) -> Result<serde_json::Value, Refused> {
        Err(Refused::Input {
            status: 409,
            message: "nothing here takes inputs".to_owned(),
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
    client.register(&url, Protocol::Http2).await.unwrap();
    client.register(&url, Protocol::Http2).await.unwrap();

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
    let error = client
        .register("http://127.0.0.1:9", Protocol::Http2)
        .await
        .unwrap_err();
    assert!(
        matches!(
            &error,
            agentloop_restate::RestateError::EndpointUnreachable { endpoint, .. }
                if endpoint == "http://127.0.0.1:9"
        ),
        "{error}"
    );
    assert!(error.to_string().contains("Connection refused"), "{error}");
}

/// Continues, then waits on `w1` until released, then ends; a run named
/// `stuck-…` waits for ever.
#[derive(Default)]
struct Waiter {
    released: std::sync::atomic::AtomicBool,
    calls: Mutex<HashMap<String, Vec<&'static str>>>,
}

#[async_trait::async_trait]
impl RunHost for Waiter {
    async fn step(&self, run_id: &str) -> Result<Step, String> {
        let mut calls = self.calls.lock().unwrap();
        let seen = calls.entry(run_id.to_owned()).or_default();
        let released = self.released.load(std::sync::atomic::Ordering::SeqCst);
        let step = if seen.is_empty() {
            Step::Continue
        } else if released && !run_id.starts_with("stuck") {
            Step::Ended
        } else {
            Step::Waiting {
                wait: "w1".to_owned(),
            }
        };
        seen.push(match step {
            Step::Continue => "continue",
            Step::Ended => "ended",
            Step::Waiting { .. } => "waiting",
        });
        Ok(step)
    }

    async fn stop(&self, run_id: &str) -> Result<(), String> {
        let mut calls = self.calls.lock().unwrap();
        calls.entry(run_id.to_owned()).or_default().push("stopped");
        Ok(())
    }

    async fn submit(&self, _run_id: &str, _input: RunInput) -> Result<serde_json::Value, Refused> {
        Err(Refused::Input {
            status: 409,
            message: "nothing here takes inputs".to_owned(),
        })
    }
}

impl Waiter {
    fn seen(&self, run_id: &str) -> Vec<&'static str> {
        self.calls
            .lock()
            .unwrap()
            .get(run_id)
            .cloned()
            .unwrap_or_default()
    }
}

/// The status of run `run_id`'s workflow invocation in Restate.
async fn invocation_status(server: &RestateServer, run_id: &str) -> String {
    let admin = server.admin.clone();
    let sql = format!(
        "SELECT status FROM sys_invocation WHERE target_service_name = 'AgentRun' \
         AND target_service_key = '{run_id}' AND target_handler_name = 'run'"
    );
    let rows = tokio::task::spawn_blocking(move || restate_server::query(&admin, &sql))
        .await
        .unwrap();
    let rows: serde_json::Value = serde_json::from_str(&rows).unwrap();
    rows["rows"][0]["status"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn until_invocation(server: &RestateServer, run_id: &str, status: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = invocation_status(server, run_id).await;
        if now == status {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the workflow of {run_id} stayed {now:?}, never {status}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn until_seen(host: &Waiter, run_id: &str, steps: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while host.seen(run_id) != steps {
        assert!(
            Instant::now() < deadline,
            "run {run_id} saw {:?}, never {steps:?}",
            host.seen(run_id)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn serve_waiter(
    server: &RestateServer,
    protocol: Protocol,
) -> (Arc<Waiter>, RestateClient, tokio::sync::oneshot::Sender<()>) {
    let host = Arc::new(Waiter::default());
    let endpoint = ServiceEndpoint::bind("127.0.0.1:0", host.clone())
        .await
        .unwrap()
        .with_protocol(protocol);
    let url = format!("http://{}", endpoint.local_addr().unwrap());
    let (guard, stop) = tokio_util_free_signal();
    tokio::spawn(endpoint.serve(stop));
    let client = RestateClient::new(&server.ingress, &server.admin).unwrap();
    client.register(&url, protocol).await.unwrap();
    (host, client, guard)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_run_parks_its_workflow_until_it_is_woken() {
    let Some(server) = RestateServer::start("workflow-wake") else {
        return;
    };
    let (host, client, _guard) = serve_waiter(&server, Protocol::Http2).await;
    client.start("wait-1").await.unwrap();
    // Parked on the wait's promise: asked nothing more until woken.
    until_seen(&host, "wait-1", &["continue", "waiting"]).await;
    assert_ne!(invocation_status(&server, "wait-1").await, "completed");

    host.released
        .store(true, std::sync::atomic::Ordering::SeqCst);
    client.wake("wait-1", "w1").await.unwrap();
    until_invocation(&server, "wait-1", "completed").await;
    assert_eq!(host.seen("wait-1"), ["continue", "waiting", "ended"]);
    // A wait that is over is woken again without harm.
    client.wake("wait-1", "w1").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restates_cancellation_stops_a_parked_workflow_through_one_stop_step() {
    let Some(server) = RestateServer::start("workflow-cancel") else {
        return;
    };
    let (host, client, _guard) = serve_waiter(&server, Protocol::Http2).await;
    client.start("stuck-1").await.unwrap();
    until_seen(&host, "stuck-1", &["continue", "waiting"]).await;

    client.cancel("stuck-1").await.unwrap();
    until_invocation(&server, "stuck-1", "completed").await;
    assert_eq!(host.seen("stuck-1"), ["continue", "waiting", "stopped"]);
    // Nothing open is left to cancel.
    client.cancel("stuck-1").await.unwrap();
    client.cancel("never-started").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http1_a_run_steps_waits_and_is_woken_as_over_http2() {
    let Some(server) = RestateServer::start("workflow-http1") else {
        return;
    };
    let (host, client, _guard) = serve_waiter(&server, Protocol::Http1).await;
    client.start("wait-1").await.unwrap();
    until_seen(&host, "wait-1", &["continue", "waiting"]).await;
    host.released
        .store(true, std::sync::atomic::Ordering::SeqCst);
    client.wake("wait-1", "w1").await.unwrap();
    until_invocation(&server, "wait-1", "completed").await;
    assert_eq!(host.seen("wait-1"), ["continue", "waiting", "ended"]);
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
