//! The Restate service endpoint: serves the [`AgentRun`
//! workflow](crate::AgentRunWorkflow) over HTTP/2 on a listener of its
//! own, in the process that executes the runs.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use restate_sdk::prelude::{Endpoint, HttpServer};
use restate_sdk::service::IntoServiceDefinition;
use tokio::net::TcpListener;

use crate::error::{RestateError, RestateResult};
use crate::host::RunHost;
use crate::workflow::AgentRunWorkflow;

/// The service endpoint of this process.
pub struct ServiceEndpoint {
    listener: TcpListener,
    host: Arc<dyn RunHost>,
}

impl ServiceEndpoint {
    /// An endpoint serving runs through `host` on `address`.
    pub async fn bind(address: &str, host: Arc<dyn RunHost>) -> RestateResult<Self> {
        let listener = TcpListener::bind(address)
            .await
            .map_err(|e| RestateError::Listen {
                address: address.to_owned(),
                message: e.to_string(),
            })?;
        Ok(Self { listener, host })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> RestateResult<std::net::SocketAddr> {
        self.listener
            .local_addr()
            .map_err(|e| RestateError::Listen {
                address: "the bound listener".to_owned(),
                message: e.to_string(),
            })
    }

    /// Serves until `shutdown` resolves.
    pub async fn serve(self, shutdown: impl Future<Output = ()>) {
        // Restate retries an attempt that broke (a worker died) quickly,
        // so a restarted or surviving worker takes the run on within a
        // second or two.
        let options = restate_sdk::endpoint::ServiceOptions::new()
            .retry_policy_initial_interval(Duration::from_millis(100))
            .retry_policy_exponentiation_factor(2.0)
            .retry_policy_max_interval(Duration::from_secs(1));
        let endpoint = Endpoint::builder()
            .bind(
                AgentRunWorkflow::new(self.host)
                    .into_service_definition()
                    .options(options),
            )
            .build();
        HttpServer::new(endpoint)
            .serve_with_cancel(self.listener, shutdown)
            .await;
    }
}

/// The workflow's service name in Restate.
pub const SERVICE: &str = "AgentRun";
