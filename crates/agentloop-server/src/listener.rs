//! Accepting connections within bounds: at most `max_connections` at once
//! (the rest wait in the kernel's backlog), and a connection that does not
//! send a complete request head within `header_timeout` — a new one, or an
//! idle kept-alive one between requests — is closed. So slow or half-sent
//! requests cannot hold the server's descriptors.
//!
//! Written over hyper's connection builder rather than `axum::serve`,
//! which sets neither bound.

use std::sync::Arc;
use std::time::Duration;

use agentloop_types::CancellationToken;
use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

/// Bounds on the connections one instance holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections served at once; further ones wait to be accepted.
    pub max_connections: usize,
    /// Time a connection has to send a complete request head, counted from
    /// when it opens or from the end of its previous response.
    pub header_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            // Well under the common 1,024-descriptor limit, leaving room for
            // the database, files the tools open and child processes.
            max_connections: 512,
            header_timeout: Duration::from_secs(10),
        }
    }
}

/// How long to wait after `accept` fails (out of descriptors, say) before
/// trying again, so a failing accept does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Serves `app` on `listener` until `shutdown` is cancelled, then lets
/// every open connection finish its request and close.
pub async fn serve_bounded(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) {
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let mut connections = JoinSet::new();
    loop {
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = shutdown.cancelled() => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => {
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
            () = shutdown.cancelled() => break,
        };
        let connection = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_timeout)
            .serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()))
            .with_upgrades();
        let shutdown = shutdown.clone();
        connections.spawn(async move {
            let _permit = permit;
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                () = shutdown.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
        while connections.try_join_next().is_some() {}
    }
    while connections.join_next().await.is_some() {}
}
