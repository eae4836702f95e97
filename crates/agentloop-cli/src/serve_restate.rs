//! `agentloop serve --engine restate`: agent runs executed as Restate
//! workflows (`agentloop-restate`) instead of by this instance's lease
//! scheduler. The same process serves the HTTP API and the Restate
//! service endpoint; on start it registers the endpoint with Restate's
//! admin API (idempotent) while the API already answers (health says what
//! it waits for), and each run started through the API is handed
//! to Restate's ingress, which calls back a worker (this process or
//! another serving the same Restate) to execute it. A run's inputs may
//! also come through the ingress (`AgentRun/{runId}/submit` with a
//! `RunInput`): they are submitted as the run's owner would submit them
//! to the API.

use std::sync::Arc;

use agentloop_restate::{
    Protocol, Refused, RestateClient, RestateError, RunHost, ServiceEndpoint, Step,
};
use agentloop_server::dispatch::RunDispatch;
use agentloop_server::durable::{Attempt, execute_attempt, stop_attempt};
use agentloop_server::http::agent_runs::engine_input;
use agentloop_server::{AppState, Server, shutdown_signal};
use agentloop_types::RunInput;
use async_trait::async_trait;
use tokio::net::TcpListener;

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

    /// Submits the input as `POST /api/agent-runs/{runId}/inputs` would
    /// for the run's owner: a 4xx is the input's refusal, anything else a
    /// failure Restate tries again.
    async fn submit(&self, run_id: &str, input: RunInput) -> Result<serde_json::Value, Refused> {
        match engine_input(&self.0, run_id, input).await {
            Ok(answer) => serde_json::to_value(answer).map_err(|e| Refused::Failed(e.to_string())),
            Err(error) if error.status.is_client_error() => Err(Refused::Input {
                status: error.status.as_u16(),
                message: error.message().to_owned(),
            }),
            Err(error) => Err(Refused::Failed(error.message().to_owned())),
        }
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

/// Serves the API on `listener` at once while this process's service
/// endpoint starts and registers with Restate: until it is registered,
/// `/api/health` answers 503 saying what the server waits for (and every
/// other route 503 with the same reason). A failed registration stops the
/// server with an error naming what failed and how to fix it.
pub async fn serve_registering(
    server: Server,
    listener: TcpListener,
    settings: &RestateSettings,
    client: &RestateClient,
) -> Result<(), String> {
    let state = server.state.clone();
    let url = start_endpoint(settings, &state).await?;
    state.readiness.wait_for(format!(
        "restate: registering the worker endpoint {url} with Restate's admin API {}",
        settings.admin
    ));
    let serving = server.serve(listener, shutdown_signal());
    tokio::pin!(serving);
    let registered = tokio::select! {
        served = &mut serving => return served.map_err(|e| e.to_string()),
        registered = client.register(&url, settings.protocol) => registered,
    };
    if let Err(error) = registered {
        state.shutdown.cancel();
        let _ = serving.await;
        return Err(registration_failure(&error, settings));
    }
    state.readiness.ready();
    eprintln!(
        "agentloop: runs execute on Restate (ingress {}, admin {}); service endpoint {url} registered",
        settings.ingress, settings.admin
    );
    serving.await.map_err(|e| e.to_string())
}

/// Starts the service endpoint (until `state` shuts down); the URL Restate
/// is to reach it at.
async fn start_endpoint(settings: &RestateSettings, state: &AppState) -> Result<String, String> {
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
    Ok(url)
}

/// What a failed registration tells the operator: which side failed, and
/// the settings that fix it.
fn registration_failure(error: &RestateError, settings: &RestateSettings) -> String {
    match error {
        RestateError::Unreachable { message, .. } => format!(
            "cannot reach Restate's admin API at {} ({message}): is restate-server running, \
             and is --restate-admin (`[serve] restate_admin`) its admin address (port 9070 by \
             default)?",
            settings.admin
        ),
        RestateError::EndpointUnreachable { .. } => format!(
            "{error}. Restate calls that URL to run agent runs here: make --restate-bind \
             (`[serve] restate_bind`, now {}) listen where Restate can connect, e.g. \
             0.0.0.0:9080, or give the URL Restate reaches it at with --restate-endpoint-url \
             (`[serve] restate_endpoint_url`), e.g. http://host.docker.internal:9080 when \
             Restate runs in a container; and check that no firewall drops the connection",
            settings.bind
        ),
        other => format!("cannot register this worker with Restate: {other}"),
    }
}
