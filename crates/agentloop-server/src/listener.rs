//! Accepting connections within bounds: at most `max_connections` at once
//! (the rest wait in the kernel's backlog), and a connection that does not
//! send a complete request head within `header_timeout` — a new one, or an
//! idle kept-alive one between requests — is closed. So slow or half-sent
//! requests cannot hold the server's descriptors.
//!
//! Every route answers within [`crate::unread_body`]'s rule, so an answer
//! sent before the request body was read never leaves a kept-alive
//! connection to be reset; a connection closed over a body it did not
//! read lingers (reads and discards, bounded by [`LINGER_TIME`] and
//! [`LINGER_BYTES`]) before it is dropped, so the close is not a reset
//! that could destroy the answer before the client reads it.
//!
//! Written over hyper's connection builder rather than `axum::serve`,
//! which sets neither bound.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use agentloop_types::CancellationToken;
use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::unread_body::{LingerFlag, settle_unread_body};

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

/// Longest a connection closed over an unread body keeps reading before
/// it is dropped.
pub const LINGER_TIME: Duration = Duration::from_secs(2);

/// Most bytes a lingering connection reads and discards.
pub const LINGER_BYTES: usize = 8 << 20;

/// Serves `app` on `listener` until `shutdown` is cancelled, then lets
/// every open connection finish its request and close.
pub async fn serve_bounded(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) {
    let app = app.layer(axum::middleware::from_fn(settle_unread_body));
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
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(_) => {
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
            () = shutdown.cancelled() => break,
        };
        let linger = LingerFlag::default();
        let io = TokioIo::new(Lingering {
            stream: Some(stream),
            linger: linger.clone(),
        });
        let routes = TowerToHyperService::new(app.clone());
        // Each request carries its connection's flag to the middleware,
        // and its peer's address (as `axum::serve` would) to the rate limit.
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            request.extensions_mut().insert(linger.clone());
            request.extensions_mut().insert(ConnectInfo(peer));
            hyper::service::Service::call(&routes, request)
        });
        let connection = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_timeout)
            .serve_connection(io, service)
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

/// A connection's socket; dropped after an answer that closed over an
/// unread body, it lingers in a task of its own (see the module docs).
struct Lingering {
    stream: Option<TcpStream>,
    linger: LingerFlag,
}

impl Lingering {
    fn stream(&mut self) -> std::io::Result<&mut TcpStream> {
        self.stream
            .as_mut()
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotConnected))
    }
}

impl AsyncRead for Lingering {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.stream() {
            Ok(stream) => Pin::new(stream).poll_read(cx, buf),
            Err(e) => Poll::Ready(Err(e)),
        }
    }
}

impl AsyncWrite for Lingering {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.stream() {
            Ok(stream) => Pin::new(stream).poll_write(cx, buf),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match self.stream() {
            Ok(stream) => Pin::new(stream).poll_write_vectored(cx, bufs),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.stream
            .as_ref()
            .is_some_and(AsyncWrite::is_write_vectored)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.stream() {
            Ok(stream) => Pin::new(stream).poll_flush(cx),
            Err(e) => Poll::Ready(Err(e)),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.stream() {
            Ok(stream) => Pin::new(stream).poll_shutdown(cx),
            Err(e) => Poll::Ready(Err(e)),
        }
    }
}

impl Drop for Lingering {
    fn drop(&mut self) {
        if !self.linger.is_set() {
            return;
        }
        if let (Some(stream), Ok(runtime)) =
            (self.stream.take(), tokio::runtime::Handle::try_current())
        {
            runtime.spawn(linger(stream));
        }
    }
}

/// Ends the sending side, then reads and discards what the client still
/// sends, until it closes or a bound is reached, so the socket is not
/// closed over unread bytes (which would reset the connection).
async fn linger(mut stream: TcpStream) {
    let _ = stream.shutdown().await;
    let mut buffer = vec![0u8; 16 * 1024];
    let mut left = LINGER_BYTES;
    let _ = tokio::time::timeout(LINGER_TIME, async {
        while left > 0 {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    })
    .await;
}
