//! Racing work against a cancellation token.

use agentloop_types::CancellationToken;
use futures::future::{Either, select};

/// Runs `work` until it completes (`Some`) or `cancel` fires (`None`).
/// Cancellation wins when both are ready.
pub(crate) async fn or_cancelled<F: Future + Unpin>(
    cancel: &CancellationToken,
    work: F,
) -> Option<F::Output> {
    if cancel.is_cancelled() {
        return None;
    }
    match select(cancel.cancelled(), work).await {
        Either::Left(_) => None,
        Either::Right((output, _)) => Some(output),
    }
}
