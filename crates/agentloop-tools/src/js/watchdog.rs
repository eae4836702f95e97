//! A last-resort guard around a sandbox run. The interrupt handler stops
//! scripts, but a built-in running in native code never consults it; the
//! watchdog makes the caller stop waiting at a hard limit (or on cancel)
//! even then. The abandoned thread finishes the built-in on its own: every
//! such loop is bounded by the heap limit or by the array-length guard.

use std::future::Future;
use std::sync::mpsc;
use std::time::Duration;

use agentloop_types::CancellationToken;
use futures::future::{Either, select};
use tokio::sync::oneshot;

use super::outcome::JsError;

/// Extra time past the soft limit before the watchdog gives up waiting.
pub(crate) const GRACE: Duration = Duration::from_secs(1);

/// How a guarded wait ended.
pub(crate) enum Guarded<T> {
    /// The job finished.
    Done(T),
    /// The caller stopped waiting; the job may still be running.
    Abandoned(JsError),
}

/// Awaits `job`, giving up after `soft + GRACE` or once `cancel` fires.
pub(crate) async fn guard<T>(
    job: impl Future<Output = T>,
    soft: Duration,
    cancel: &CancellationToken,
) -> Guarded<T> {
    let (alarm, alarm_rx) = oneshot::channel::<()>();
    // Dropping `finished` (when this function returns) wakes the watchdog
    // thread, which then exits without firing.
    let (finished, watch) = mpsc::channel::<()>();
    let hard = soft + GRACE;
    let spawned = std::thread::Builder::new()
        .name("agentloop-js-watchdog".into())
        .spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = watch.recv_timeout(hard) {
                let _ = alarm.send(());
            }
        });
    let _finished = finished;
    let job = std::pin::pin!(job);
    let cancelled = std::pin::pin!(cancel.cancelled());
    if spawned.is_err() {
        return match select(job, cancelled).await {
            Either::Left((value, _)) => Guarded::Done(value),
            Either::Right(_) => Guarded::Abandoned(JsError::Cancelled),
        };
    }
    let stop = select(cancelled, alarm_rx);
    match select(job, stop).await {
        Either::Left((value, _)) => Guarded::Done(value),
        Either::Right((Either::Left(_), _)) => Guarded::Abandoned(JsError::Cancelled),
        Either::Right((Either::Right(_), _)) => Guarded::Abandoned(JsError::Timeout(soft)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn finished_jobs_pass_through() {
        let out = guard(
            async { 5 },
            Duration::from_secs(60),
            &CancellationToken::new(),
        )
        .await;
        assert!(matches!(out, Guarded::Done(5)));
    }

    #[tokio::test]
    async fn a_stuck_job_is_abandoned_at_the_hard_limit() {
        let out = guard(
            futures::future::pending::<()>(),
            Duration::from_millis(10),
            &CancellationToken::new(),
        )
        .await;
        assert!(
            matches!(out, Guarded::Abandoned(JsError::Timeout(d)) if d == Duration::from_millis(10))
        );
    }

    #[tokio::test]
    async fn cancel_abandons_a_stuck_job() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        let out = guard(
            futures::future::pending::<()>(),
            Duration::from_secs(60),
            &cancel,
        )
        .await;
        assert!(matches!(out, Guarded::Abandoned(JsError::Cancelled)));
    }
}
