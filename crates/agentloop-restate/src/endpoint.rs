//! The Restate service endpoint: serves the [`AgentRun`
//! workflow](crate::AgentRunWorkflow) on a listener of its own, in the
//! process that executes the runs.
//!
//! Two ways to speak to Restate ([`Protocol`]): HTTP/2 with one
//! bidirectional stream per attempt (the default: Restate keeps one
//! connection open per endpoint and multiplexes every run on it), or
//! HTTP/1.1 request-response, where each attempt is one request that ends
//! at the next step (Restate journals the step and sends the next request
//! with the journal). The second is for several workers behind a balancer
//! that spreads connections, not requests: Restate opens one HTTP/1.1
//! connection per attempt in flight, so the runs, and even the steps of
//! one run, spread over the workers.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use restate_sdk::endpoint::{HandleOptions, ProtocolMode};
use restate_sdk::prelude::{Endpoint, HttpServer};
use restate_sdk::service::IntoServiceDefinition;
use tokio::net::TcpListener;

use crate::error::{RestateError, RestateResult};
use crate::host::RunHost;
use crate::workflow::AgentRunWorkflow;

/// How the endpoint speaks to Restate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// HTTP/2 (h2c), one bidirectional stream per attempt.
    #[default]
    Http2,
    /// HTTP/1.1, one request per step (registered with `use_http_11`).
    Http1,
}

/// The service endpoint of this process.
pub struct ServiceEndpoint {
    listener: TcpListener,
    host: Arc<dyn RunHost>,
    protocol: Protocol,
}

impl ServiceEndpoint {
    /// An endpoint serving runs through `host` on `address`, over HTTP/2.
    pub async fn bind(address: &str, host: Arc<dyn RunHost>) -> RestateResult<Self> {
        let listener = TcpListener::bind(address)
            .await
            .map_err(|e| RestateError::Listen {
                address: address.to_owned(),
                message: e.to_string(),
            })?;
        Ok(Self {
            listener,
            host,
            protocol: Protocol::Http2,
        })
    }

    /// The same endpoint speaking `protocol`.
    pub fn with_protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = protocol;
        self
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
        // second or two. A step is one model turn or one tool step, which
        // may take long: Restate would otherwise abort an attempt that
        // produced nothing for two minutes, and retry that step for ever.
        let options = restate_sdk::endpoint::ServiceOptions::new()
            .retry_policy_initial_interval(Duration::from_millis(100))
            .retry_policy_exponentiation_factor(2.0)
            .retry_policy_max_interval(Duration::from_secs(1))
            .inactivity_timeout(Duration::from_secs(60))
            .abort_timeout(STEP_LIMIT);
        let endpoint = Endpoint::builder()
            .bind(
                AgentRunWorkflow::new(self.host)
                    .into_service_definition()
                    .options(options),
            )
            .build();
        match self.protocol {
            Protocol::Http2 => {
                HttpServer::new(endpoint)
                    .serve_with_cancel(self.listener, shutdown)
                    .await;
            }
            Protocol::Http1 => serve_http1(endpoint, self.listener, shutdown).await,
        }
    }
}

/// How long one step may run before Restate aborts its attempt (and
/// retries the step): an hour past the minute without output.
pub const STEP_LIMIT: Duration = Duration::from_secs(3600);

/// Serves `endpoint` over HTTP/1.1 request-response until `shutdown`
/// resolves; connections in flight are left to end on their own.
async fn serve_http1(
    endpoint: Endpoint,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) {
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, remote)) = accepted else {
            continue;
        };
        let endpoint = endpoint.clone();
        let service = hyper::service::service_fn(move |request| {
            let response = endpoint.handle_with_options(
                request,
                HandleOptions {
                    protocol_mode: ProtocolMode::RequestResponse,
                },
            );
            std::future::ready(Ok::<_, Infallible>(response))
        });
        tokio::spawn(async move {
            if let Err(error) = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                tracing::debug!(%remote, %error, "a Restate connection ended with an error");
            }
        });
    }
}

/// The workflow's service name in Restate.
pub const SERVICE: &str = "AgentRun";
