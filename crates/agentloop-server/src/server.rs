//! Serving: the listener, the claim loop and graceful shutdown.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use agentloop_storage::Store;
use tokio::net::TcpListener;

use crate::config::ServerConfig;
use crate::error::ServerError;
use crate::listener::serve_bounded;
use crate::state::AppState;

/// A server instance: its state and router.
#[derive(Clone)]
pub struct Server {
    /// The shared state.
    pub state: AppState,
}

impl Server {
    /// A server over a store.
    pub fn new(store: Arc<dyn Store>, config: ServerConfig) -> Self {
        Self {
            state: AppState::new(store, config),
        }
    }

    /// Serves on `listener` until `shutdown` resolves. Then it stops
    /// accepting requests and claiming runs, ends live streams, stops the
    /// runs executing here and hands them back (their leases are released,
    /// so another instance, or this one after a restart, continues them).
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        let state = self.state;
        let claimer = tokio::spawn(crate::recovery::claim_loop(state.clone()));
        crate::webhooks::spawn_dispatcher(state.clone());
        tokio::spawn(crate::scheduler::schedule_loop(state.clone()));
        tokio::spawn(crate::follow::watch_appends(
            state.store.clone(),
            state.appends.clone(),
            state.shutdown.clone(),
        ));
        tokio::spawn(crate::users::watch_revocations(
            state.store.clone(),
            state.revocations.clone(),
            state.shutdown.clone(),
        ));
        let stop = state.shutdown.clone();
        tokio::spawn(async move {
            shutdown.await;
            stop.cancel();
        });
        let app = crate::http::router(state.clone());
        serve_bounded(
            listener,
            app,
            state.config.connections,
            state.shutdown.clone(),
        )
        .await;
        let _ = claimer.await;
        let deadline = tokio::time::Instant::now() + state.config.lease_ttl;
        while state.local_count() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(())
    }
}

/// Resolves on SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
