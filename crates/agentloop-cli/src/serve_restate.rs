//! `agentloop serve --engine restate`: agent runs executed as Restate
//! workflows (`agentloop-restate`) instead of by this instance's lease
//! scheduler. The same process serves the HTTP API and the Restate
//! service endpoint; on start it registers the endpoint with Restate's
//! admin API (idempotent), and each run started through the API is handed
//! to Restate's ingress, which calls back a worker (this process or
//! another serving the same Restate) to execute it.

use std::sync::Arc;

use agentloop_restate::{Protocol, RestateClient, RunHost, ServiceEndpoint, Step};
use agentloop_server::AppState;
use agentloop_server::dispatch::RunDispatch;
use agentloop_server::durable::{Attempt, execute_attempt, stop_attempt};
use async_trait::async_trait;

/// Where Restate and this process's service endpoint are.
#[derive(Debug, Clone)]
pub struct RestateSettings {
    /// Restate's ingress URL.
    pub ingress: String,
    /// Restate's admin API URL.
    pub admin: String,
    /// Address the service endpoint listens on.
    pub bind: String,
    /// URL Restate reaches the endpoint at (default: `http://` and the
    /// bound address).
    pub endpoint_url: Option<String>,
    /// How Restate speaks to the endpoint.
    pub protocol: Protocol,
}

/// Hands runs to Restate: each becomes the `AgentRun` workflow keyed by
/// its id.
struct Dispatch(RestateClient);

#[async_trait]
impl RunDispatch for Dispatch {
    async fn dispatch(&self, run_id: &str) -> Result<(), String> {
        self.0.start(run_id).await.map_err(|e| e.to_string())
    }

    async fn wake(&self, run_id: &str, wait: &str) -> Result<(), String> {
        self.0.wake(run_id, wait).await.map_err(|e| e.to_string())
    }

    async fn cancel(&self, run_id: &str) -> Result<(), String> {
        self.0.cancel(run_id).await.map_err(|e| e.to_string())
    }
}

/// Executes the steps Restate asks for through the server's lifecycle.
struct Host(AppState);

#[async_trait]
impl RunHost for Host {
    async fn step(&self, run_id: &str) -> Result<Step, String> {
        match execute_attempt(&self.0, run_id).await? {
            Attempt::Stepped => Ok(Step::Continue),
            Attempt::Ended => Ok(Step::Ended),
            Attempt::Waiting(wait) => Ok(Step::Waiting { wait }),
        }
    }

    async fn stop(&self, run_id: &str) -> Result<(), String> {
        stop_attempt(&self.0, run_id).await
    }
}

/// The client of the Restate `settings` name, and the dispatcher handing
/// runs to it.
pub fn dispatcher(
    settings: &RestateSettings,
) -> Result<(RestateClient, Arc<dyn RunDispatch>), String> {
    let client =
        RestateClient::new(&settings.ingress, &settings.admin).map_err(|e| e.to_string())?;
    Ok((client.clone(), Arc::new(Dispatch(client))))
}

/// Starts the service endpoint (until `state` shuts down) and registers
/// it with Restate.
pub async fn start_endpoint(
    settings: &RestateSettings,
    client: &RestateClient,
    state: &AppState,
) -> Result<(), String> {
    let endpoint = ServiceEndpoint::bind(&settings.bind, Arc::new(Host(state.clone())))
        .await
        .map_err(|e| e.to_string())?
        .with_protocol(settings.protocol);
    let address = endpoint.local_addr().map_err(|e| e.to_string())?;
    let url = settings
        .endpoint_url
        .clone()
        .unwrap_or_else(|| format!("http://{address}"));
    let shutdown = state.shutdown.clone();
    tokio::spawn(endpoint.serve(async move { shutdown.cancelled().await }));
    client
        .register(&url, settings.protocol)
        .await
        .map_err(|e| e.to_string())?;
    eprintln!(
        "agentloop: runs execute on Restate (ingress {}, admin {}); service endpoint {url} registered",
        settings.ingress, settings.admin
    );
    Ok(())
}
